{#-
  Building blocks of the srdp macros: SQL literals, the call itself, and the printed rows.

  srdp_sql_string(value)  ->  a SQL string literal: 'it''s' (single quotes doubled). Use it for
                              every value that goes into SQL text, e.g. a path read from a var.
  srdp_call(function, catalog, named_args={}, config=none)
                          ->  runs `select * from <function>('<catalog>', <name> := <value>, ...)`,
                              prints every result row (format in srdp_functions.sql) and returns
                              the agate table; for use in {% set %} / {% do %}, not in {{ }}.
                              Arguments whose value is none are left out; `config :=` is added
                              from `config`, else from the var `srdp_config` when it is set.
                              It does not attach: the maintenance functions need the catalog
                              attached in this database first (srdp_attach).
-#}

{% macro srdp_sql_string(value) -%}
  {{- return("'" ~ (value | string).replace("'", "''") ~ "'") -}}
{%- endmacro %}


{#- A named-argument value: booleans and numbers as SQL literals, everything else as a string literal. -#}
{% macro srdp__sql_value(value) -%}
  {%- if value is boolean -%}
    {{- return('true' if value else 'false') -}}
  {%- elif value is number -%}
    {{- return(value | string) -}}
  {%- else -%}
    {{- return(srdp.srdp_sql_string(value)) -}}
  {%- endif -%}
{%- endmacro %}


{#- `'lake', schema_name := 'curated', config := '/abs/srdp.toml'`; values that are none are left out. -#}
{% macro srdp__sql_arguments(positional, named_args, config=none) -%}
  {%- set parts = [] -%}
  {%- for value in positional -%}
    {%- do parts.append(srdp.srdp__sql_value(value)) -%}
  {%- endfor -%}
  {%- set named = dict(named_args) -%}
  {%- set config_path = config if config is not none else var('srdp_config', none) -%}
  {%- if config_path -%}
    {%- do named.update({'config': config_path}) -%}
  {%- endif -%}
  {%- for name, value in named.items() -%}
    {%- if not modules.re.fullmatch('[a-z_]+', name) -%}
      {{- exceptions.raise_compiler_error("srdp: not an argument name: " ~ name) -}}
    {%- endif -%}
    {%- if value is not none -%}
      {%- do parts.append(name ~ ' := ' ~ srdp.srdp__sql_value(value)) -%}
    {%- endif -%}
  {%- endfor -%}
  {{- return(parts | join(', ')) -}}
{%- endmacro %}


{% macro srdp_call(function, catalog, named_args={}, config=none) -%}
  {%- if not modules.re.fullmatch('srdp_[a-z_]+', function | string) -%}
    {{- exceptions.raise_compiler_error("srdp_call: not an srdp function: " ~ function) -}}
  {%- endif -%}
  {%- if catalog is none or (catalog | string) == '' -%}
    {{- exceptions.raise_compiler_error(
          function ~ ": no catalog given; pass one (dbt run-operation ... --args '{catalog: lake}')"
          ~ " or set the var srdp_catalog") -}}
  {%- endif -%}
  {%- set sql = 'select * from ' ~ function ~ '(' ~ srdp.srdp__sql_arguments([catalog], named_args, config) ~ ')' -%}
  {%- if not execute -%}
    {{- return(none) -}}
  {%- endif -%}
  {%- do log('srdp: ' ~ sql, info=False) -%}
  {%- set result = run_query(sql) -%}
  {%- do srdp.srdp__print(function, result) -%}
  {{- return(result) -}}
{%- endmacro %}


{% macro srdp__print(function, table) -%}
  {%- if table.rows | length == 0 -%}
    {%- do log(function ~ ': no rows', info=True) -%}
  {%- endif -%}
  {%- for row in table.rows -%}
    {%- set cells = [] -%}
    {%- for name in table.column_names -%}
      {%- do cells.append(name ~ '=' ~ srdp.srdp__format_value(row[name])) -%}
    {%- endfor -%}
    {%- do log(function ~ ': ' ~ cells | join(' | '), info=True) -%}
  {%- endfor -%}
{%- endmacro %}


{% macro srdp__format_value(value) -%}
  {%- if value is none -%}
    {{- return('NULL') -}}
  {%- elif value is boolean -%}
    {{- return('true' if value else 'false') -}}
  {%- else -%}
    {{- return((value | string).replace('\n', ' ')) -}}
  {%- endif -%}
{%- endmacro %}


{#- Attaches `catalog` with `role` unless srdp already attached it in this database (under any alias). -#}
{% macro srdp__ensure_attached(catalog, role, config=none) -%}
  {%- if execute and catalog -%}
    {%- set sql = 'select attached from srdp_catalogs(' ~ srdp.srdp__sql_arguments([], {}, config) ~ ')'
                  ~ ' where catalog = ' ~ srdp.srdp_sql_string(catalog) -%}
    {%- set found = run_query(sql) -%}
    {#- An unknown catalog is left to the function itself, whose error lists the defined ones. -#}
    {%- if found.rows | length == 1 and not found.rows[0][0] -%}
      {%- do srdp.srdp_call('srdp_attach_catalog', catalog, {'role': role}, config) -%}
    {%- endif -%}
  {%- endif -%}
{%- endmacro %}
