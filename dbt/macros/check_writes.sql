{#-
  dbt writes only what it owns: every schema dbt is about to create or write in an srdp catalog
  is checked with srdp's `srdp_check_writer(catalog, schema, 'dbt')` before anything is written.

  What dbt writes: the (database, schema) of every selected model (not ephemeral), seed and
  snapshot, and of tests that store their failures, after `generate_schema_name` and
  `generate_database_name` (the names in the graph). A database is an srdp catalog when
  srdp.toml defines a catalog of that name (`srdp_catalogs()`); other databases are not checked.

  srdp_check_writes(writer='dbt', config=none)
      Optional (the package checks in create_schema and in every node's transaction before its
      first write, node_writes.sql); kept for projects that have it in `on-run-start`: checks
      them all and prints each check's row, e.g.

          srdp_check_writer: catalog=lake | schema_name=curated | writer=dbt | owner=dbt | layer=curated | allowed=true | warning=NULL

      A schema owned by another writer, or by nobody in srdp.toml, fails the hook with srdp's
      message (it names the owner, what dbt may write and the srdp.toml line that would relax
      the rule); an allowed write that only `single_writer = false` permits is a dbt warning.
      The writer may also be set with the var `srdp_writer`.

  The package's `create_schema` runs the same checks (without printing the allowed rows) before
  it attaches the lake or creates any schema: dbt creates the models' schemas before the
  `on-run-start` hooks run, so a refused schema stops the run before the first write either way.
-#}

{% macro srdp_check_writes(writer=none, config=none) -%}
  {%- do srdp.srdp__check_writes(writer, config, [], true) -%}
{%- endmacro %}


{#- The (database, schema) pairs the selected nodes write, in graph order, without repeats. -#}
{% macro srdp__write_targets() -%}
  {%- set targets = [] -%}
  {%- for node in graph.nodes.values() if node.unique_id in selected_resources -%}
    {%- set writes = (node.resource_type in ['model', 'seed', 'snapshot']
                      and node.config.materialized != 'ephemeral')
                     or (node.resource_type == 'test'
                         and (node.config.store_failures or (node.config.store_failures is none and flags.STORE_FAILURES))) -%}
    {%- if writes and node.database and node.schema and [node.database, node.schema] not in targets -%}
      {%- do targets.append([node.database, node.schema]) -%}
    {%- endif -%}
  {%- endfor -%}
  {{- return(targets) -}}
{%- endmacro %}


{#- Checks the selected nodes' targets and `relations` (schema relations about to be created);
    prints each allowed row when `print` is true. Returns the checked [catalog, schema] pairs. -#}
{% macro srdp__check_writes(writer=none, config=none, relations=[], print=false) -%}
  {%- if not execute -%}
    {{- return([]) -}}
  {%- endif -%}
  {%- if not srdp.srdp__loaded() -%}
    {{- return([]) -}}  {#- a profile without srdp: nothing here is an srdp catalog -#}
  {%- endif -%}
  {%- set writer = writer or var('srdp_writer', 'dbt') -%}
  {%- set targets = srdp.srdp__write_targets() -%}
  {%- for relation in relations if relation.database and relation.schema
                                and [relation.database, relation.schema] not in targets -%}
    {%- do targets.append([relation.database, relation.schema]) -%}
  {%- endfor -%}
  {%- if targets | length == 0 -%}
    {{- return([]) -}}
  {%- endif -%}
  {%- set catalogs = run_query('select catalog from srdp_catalogs(' ~ srdp.srdp__sql_arguments([], {}, config) ~ ')')
                       .columns[0].values() | list -%}
  {%- set checked = [] -%}
  {%- for database, schema in targets if database in catalogs -%}
    {%- set sql = 'select * from srdp_check_writer('
                  ~ srdp.srdp__sql_arguments([database, schema, writer], {}, config) ~ ')' -%}
    {%- do log('srdp: ' ~ sql, info=False) -%}
    {%- set result = run_query(sql) -%}
    {%- if print -%}
      {%- do srdp.srdp__print('srdp_check_writer', result) -%}
    {%- endif -%}
    {%- for row in result.rows if row['warning'] -%}
      {%- do exceptions.warn('srdp_check_writer: ' ~ row['warning']) -%}
    {%- endfor -%}
    {%- do checked.append([database, schema]) -%}
  {%- endfor -%}
  {{- return(checked) -}}
{%- endmacro %}


{#- Whether the srdp extension is loaded in dbt's database (the profile's srdp.dbt.plugin). -#}
{% macro srdp__loaded() -%}
  {%- call statement('srdp_loaded', fetch_result=True, auto_begin=False) -%}
    select count(*) from duckdb_functions() where function_name = 'srdp_catalogs'
  {%- endcall -%}
  {{- return(load_result('srdp_loaded').table.rows[0][0] > 0) -}}
{%- endmacro %}
