{#-
  Why this exists: `dbt run` / `dbt build` create the schemas of the selected models BEFORE the
  `on-run-start` hooks run (dbt-core 1.11 RunTask.before_run: create_schemas, then the adapter
  cache, then on-run-start). A model with `+database: lake` therefore fails in a fresh process
  with `Binder Error: Catalog "lake" does not exist!` even when on-run-start attaches the lake.

  This override of dbt-duckdb's `duckdb__create_schema` first checks every schema the run will
  write in an srdp catalog with `srdp_check_writer(catalog, schema, 'dbt')` (check_writes.sql: a
  refused schema fails the run before anything is attached or created), then attaches the
  database through srdp, as writer (dbt is about to write into it), when it is not attached
  yet, and then creates the schema exactly as dbt-duckdb does, in a transaction labelled with
  dbt's commit author and message (commit_message.sql). The catalog is looked up in
  srdp.toml under the database's name; a database srdp does not define fails with srdp's
  "unknown catalog" error. Enable it in the root project's dbt_project.yml:

      dispatch:
        - macro_namespace: dbt
          search_order: ['<your project name>', 'srdp', 'dbt']
-#}

{% macro duckdb__create_schema(relation) -%}
  {%- if execute and relation.database -%}
    {%- do srdp.srdp__check_writes(relations=[relation]) -%}
    {%- set sql = 'select 1 from duckdb_databases() where lower(database_name) = lower('
                  ~ srdp.srdp_sql_string(relation.database) ~ ')' -%}
    {%- if run_query(sql).rows | length == 0 and srdp.srdp__loaded() -%}
      {%- do log('srdp: attaching catalog ' ~ relation.database ~ ' as writer before dbt creates schema '
                 ~ relation.without_identifier(), info=True) -%}
      {%- do srdp.srdp_call('srdp_attach_catalog', relation.database, {'role': 'writer'}) -%}
    {%- endif -%}
    {#- The schema's snapshot carries dbt's commit author (commit_message.sql), in the
        transaction dbt-duckdb's create statement opens and dbt commits. -#}
    {%- if srdp.srdp__is_ducklake(relation) -%}
      {%- call statement('srdp_commit_message') -%}
        {{ srdp.srdp__commit_message_sql(relation.database, 'schema ' ~ relation.schema) }}
      {%- endcall -%}
    {%- endif -%}
  {%- endif -%}
  {{- dbt.duckdb__create_schema(relation) -}}
{%- endmacro %}
