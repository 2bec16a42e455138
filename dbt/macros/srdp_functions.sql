{#-
  srdp macros: each one calls the srdp SQL table function of (nearly) the same name and prints
  its result rows. Use them in `on-run-start` / hooks ("{{ srdp.srdp_attach('lake', 'writer') }}":
  they render no SQL, so the hook itself runs nothing) and with `dbt run-operation`:

      dbt run-operation srdp_compact --args '{catalog: lake, schema_name: curated, dry_run: true}'

  Output: one line per result row, logged at info level (dbt's stdout and logs/dbt.log):

      <sql function>: <column>=<value> | <column>=<value> | ...

  in the function's column order; NULL prints as NULL, booleans as true/false, newlines in values
  as spaces; a call that returns no rows prints `<sql function>: no rows`. For example:

      srdp_attach_catalog: catalog=lake | alias=lake | role=writer | read_only=false | metadata_schema=main | data_path=/abs/data/lake/ | data_inlining_row_limit=1000 | status=attached
      srdp_compact: catalog=lake | schema_name=curated | table_name=events | rows_flushed=7 | files_before=2 | files_after=1 | files_processed=3 | files_created=1 | files_rewritten=0 | deletes_applied=0 | attempts=1 | duration_ms=41 | status=compacted

  Arguments are the SQL function's named parameters, all optional except the catalog (which
  defaults to the var `srdp_catalog`); values are rendered as SQL literals (strings with
  quotes doubled), so any schema or table name is safe. `config` (else the var `srdp_config`)
  is passed as `config := '...'`; without either, srdp finds srdp.toml as usual (the setting
  `srdp_config`, e.g. from `settings:` in profiles.yml, then $SRDP_CONFIG, then ./srdp.toml).

  The maintenance macros attach the catalog first when srdp has not attached it in this
  database yet (each `dbt run-operation` is a new database): as writer for srdp_flush and
  srdp_compact, as reader for dry runs, srdp_inlined_row_count and srdp_catalog_pressure. A
  catalog already attached is used as it is (a reader catalog cannot be flushed: srdp says so).

  An srdp error fails the hook or the run-operation with srdp's message.
-#}

{% macro srdp_attach(catalog=none, role='reader', alias=none, refresh=none, config=none) -%}
  {%- do srdp.srdp_call('srdp_attach_catalog', catalog or var('srdp_catalog', none),
        {'alias': alias, 'role': role, 'refresh': refresh}, config) -%}
{%- endmacro %}


{% macro srdp_inlined_row_count(catalog=none, schema_name=none, table_name=none, config=none) -%}
  {%- set catalog = catalog or var('srdp_catalog', none) -%}
  {%- do srdp.srdp__ensure_attached(catalog, 'reader', config) -%}
  {%- do srdp.srdp_call('srdp_inlined_row_count', catalog,
        {'schema_name': schema_name, 'table_name': table_name}, config) -%}
{%- endmacro %}


{% macro srdp_flush(catalog=none, schema_name=none, table_name=none, dry_run=none, config=none) -%}
  {%- set catalog = catalog or var('srdp_catalog', none) -%}
  {%- do srdp.srdp__ensure_attached(catalog, 'reader' if dry_run else 'writer', config) -%}
  {%- do srdp.srdp_call('srdp_flush', catalog,
        {'schema_name': schema_name, 'table_name': table_name, 'dry_run': dry_run}, config) -%}
{%- endmacro %}


{% macro srdp_compact(catalog=none, schema_name=none, table_name=none, dry_run=none, config=none) -%}
  {%- set catalog = catalog or var('srdp_catalog', none) -%}
  {%- do srdp.srdp__ensure_attached(catalog, 'reader' if dry_run else 'writer', config) -%}
  {%- do srdp.srdp_call('srdp_compact', catalog,
        {'schema_name': schema_name, 'table_name': table_name, 'dry_run': dry_run}, config) -%}
{%- endmacro %}


{% macro srdp_catalog_pressure(catalog=none, threshold=none, config=none) -%}
  {%- set catalog = catalog or var('srdp_catalog', none) -%}
  {%- do srdp.srdp__ensure_attached(catalog, 'reader', config) -%}
  {%- do srdp.srdp_call('srdp_catalog_pressure', catalog, {'threshold': threshold}, config) -%}
{%- endmacro %}
