{#-
  Every node dbt writes into a DuckLake catalog is checked and labelled inside its own
  transaction, with nothing in the user's project (no on-run-start hook, no pre-hook):

  srdp__begin_write()
      Runs in the node's transaction, before its first write to the lake: checks every schema the
      run writes in an srdp catalog with `srdp_check_writer(catalog, schema, 'dbt')`
      (check_writes.sql: a schema of another writer, or of nobody, fails the node before it writes
      anything, and every later node the same way), then opens the node's transaction with
      `CALL <database>.set_commit_message('dbt', 'dbt invocation <id> <resource type> <name>')`,
      so the DuckLake snapshot the node commits carries author `dbt` (srdp_write_audit). Nodes
      whose relation is not in a DuckLake catalog, unit tests and run-operations are left alone.

  It is called from the package's overrides of the dispatched macros every materialization uses
  for its first write (enabled by the root project's `dispatch:` entry):

  | materialization | first write to the lake |
  |---|---|
  | table, incremental (first run, full refresh, and its temporary table), snapshot (first run and its staging table) | `create_table_as` |
  | view | `create_view_as` |
  | seed | `create_csv_table` (first run), `reset_csv_table` (later runs, `--full-refresh`) |
  | test with stored failures | `drop_relation` of the previous failures table, else `create_table_as` / `create_view_as` |

  dbt-core ignores a package's own `{% materialization %}` for a built-in one (flag
  require_explicit_package_overrides_for_builtin_materializations), so the dispatched macros are
  where a package can act inside every node's transaction.
-#}

{% macro srdp__begin_write() -%}
  {%- if execute and model is defined and this is defined and model.resource_type in ['model', 'seed', 'snapshot', 'test']
        and srdp.srdp__is_ducklake(this) -%}
    {%- do srdp.srdp__check_writes() -%}
    {%- call statement('srdp_commit_message', auto_begin=True) -%}
      {{ srdp.srdp__commit_message_sql(this.database, model.resource_type ~ ' ' ~ model.name) }}
    {%- endcall -%}
  {%- endif -%}
{%- endmacro %}


{% macro duckdb__create_table_as(temporary, relation, compiled_code, language='sql', partitioned_by=none, sorted_by=none) -%}
  {%- do srdp.srdp__begin_write() -%}
  {{- return(dbt.duckdb__create_table_as(temporary, relation, compiled_code, language,
                                          partitioned_by=partitioned_by, sorted_by=sorted_by)) -}}
{%- endmacro %}


{% macro duckdb__create_view_as(relation, sql) -%}
  {%- do srdp.srdp__begin_write() -%}
  {{- return(dbt.duckdb__create_view_as(relation, sql)) -}}
{%- endmacro %}


{% macro duckdb__create_csv_table(model, agate_table) -%}
  {%- do srdp.srdp__begin_write() -%}
  {{- return(dbt.default__create_csv_table(model, agate_table)) -}}
{%- endmacro %}
