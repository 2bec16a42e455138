{#-
  dbt's materializations on a DuckLake catalog, again and again: overrides of dbt-duckdb's
  relation macros for relations whose database is a DuckLake (`duckdb_databases()` type
  'ducklake', however it was attached: srdp attaches the lake outside the profile, so
  dbt-duckdb's own `adapter.is_ducklake` does not know it). Every other relation goes to
  dbt-duckdb's macro unchanged. Enabled by the root project's dispatch entry
  (`search_order: [<project>, srdp, dbt]`).

  Why: dbt-duckdb 1.11.1 replaces a table or view by building `<model>__dbt_tmp`, renaming the
  old relation to `<model>__dbt_backup` and the new one into place, committing, and then
  dropping the backup `... cascade`. DuckLake refuses CASCADE (`Not implemented Error: Cascade
  Drop not supported in DuckLake`) after the renames were committed, so the second run of every
  table and view model failed and left `<model>__dbt_backup` behind.

  On DuckLake the previous version of a relation is kept by the catalog itself (every commit is
  a snapshot: `FROM lake.<schema>.<model> AT (VERSION => n)`), so the backup is not needed:

  * `rename_relation(old, <old>__dbt_backup)` drops the old relation instead, inside the
    model's open transaction. A table or view rebuild is then ONE DuckLake transaction and
    one snapshot (`create <model>__dbt_tmp as ...; drop <model>; alter <model>__dbt_tmp
    rename to <model>; commit`): a reader sees the old version or the new one, never a half
    swap, and a model whose SQL fails rolls it all back (previous version intact, no
    `__dbt_tmp`/`__dbt_backup` left). Any other rename is dbt-duckdb's.
  * `drop_relation` drops without CASCADE (DuckLake has no dependencies to cascade to: a view
    is SQL text bound when read). Dropping the backup after the commit finds nothing to drop
    and writes no snapshot.
  * `reset_csv_table` (a seed's `--full-refresh`, or `+full_refresh: true`): the drop of the
    views dbt built on the seed (dependent_views.sql), the drop of the old seed table, its
    re-creation and the load of the CSV commit together (dbt-core drops the table outside the
    transaction first, so a failing load lost the seed).

  The incremental strategies (append, delete+insert, merge) and snapshots already run in one
  transaction (a temporary table, then DML on the DuckLake table) and are left to dbt-duckdb.
-#}

{#- Whether `relation`'s database is an attached DuckLake catalog. Runs outside any transaction
    it would otherwise open (auto_begin=False), so it is safe after a materialization's commit. -#}
{% macro srdp__is_ducklake(relation) -%}
  {%- if not execute or relation is none or not relation.database -%}
    {{- return(false) -}}
  {%- endif -%}
  {%- call statement('srdp_is_ducklake', fetch_result=True, auto_begin=False) -%}
    select count(*) from duckdb_databases()
    where lower(database_name) = lower({{ srdp.srdp_sql_string(relation.database) }}) and type = 'ducklake'
  {%- endcall -%}
  {{- return(load_result('srdp_is_ducklake').table.rows[0][0] > 0) -}}
{%- endmacro %}


{#- A drop on DuckLake is its own labelled transaction (dbt calls drop_relation outside the
    node's transaction: before it, e.g. a test's previous stored failures, or after its commit,
    the backup): `set_commit_message` (author dbt, `dbt invocation <id> drop <relation>`), the drop
    and a commit. Dropping what does not exist changes nothing and commits no snapshot. -#}
{% macro duckdb__drop_relation(relation) -%}
  {%- if srdp.srdp__is_ducklake(relation) -%}
    {%- call statement('srdp_commit_message', auto_begin=True) -%}
      {{ srdp.srdp__commit_message_sql(relation.database, 'drop ' ~ relation.schema ~ '.' ~ relation.identifier) }}
    {%- endcall -%}
    {%- call statement('drop_relation') -%}
      {{ srdp.srdp__drop_sql(relation) }}
    {%- endcall -%}
    {%- do adapter.commit() -%}
  {%- else -%}
    {{- dbt.duckdb__drop_relation(relation) -}}
  {%- endif -%}
{%- endmacro %}


{#- `drop <type> if exists <relation>`, without CASCADE (DuckLake has no dependencies to cascade to). -#}
{% macro srdp__drop_sql(relation) -%}
  drop {{ relation.type }} if exists {{ relation }}
{%- endmacro %}


{% macro duckdb__rename_relation(from_relation, to_relation) -%}
  {%- if to_relation.identifier == from_relation.identifier ~ '__dbt_backup'
        and srdp.srdp__is_ducklake(from_relation) -%}
    {%- do log('srdp: ' ~ from_relation ~ ' is replaced in this DuckLake transaction; its previous '
               ~ 'version stays readable by time travel (no ' ~ to_relation.identifier ~ ')') -%}
    {#- Drop what the relation really is: dbt-duckdb's incremental materialization passes the
        new relation (a table) as from_relation when the existing one is a view. -#}
    {%- call statement('rename_relation') -%}
      drop {{ srdp.srdp__relation_type(from_relation) }} {{ from_relation }}
    {%- endcall -%}
  {%- else -%}
    {{- dbt.duckdb__rename_relation(from_relation, to_relation) -}}
  {%- endif -%}
{%- endmacro %}


{#- `view` or `table`: what `relation` is in the catalog (its `type` may be what dbt is about to
    build), read in the open transaction; `relation.type` when it does not exist. -#}
{% macro srdp__relation_type(relation) -%}
  {{- return(srdp.srdp__existing_type(relation) or relation.type) -}}
{%- endmacro %}


{#- `view`, `table`, or none when `relation` does not exist: read in the open transaction. -#}
{% macro srdp__existing_type(relation) -%}
  {%- call statement('srdp_relation_type', fetch_result=True) -%}
    select table_type from information_schema.tables
    where table_catalog = {{ srdp.srdp_sql_string(relation.database) }}
      and table_schema = {{ srdp.srdp_sql_string(relation.schema) }}
      and table_name = {{ srdp.srdp_sql_string(relation.identifier) }}
  {%- endcall -%}
  {%- set rows = load_result('srdp_relation_type').table.rows -%}
  {%- if rows | length == 0 -%}
    {{- return(none) -}}
  {%- endif -%}
  {{- return('view' if rows[0][0] == 'VIEW' else 'table') -}}
{%- endmacro %}


{% macro duckdb__reset_csv_table(model, full_refresh, old_relation, agate_table) -%}
  {%- do srdp.srdp__begin_write() -%}
  {%- if full_refresh and srdp.srdp__is_ducklake(old_relation) -%}
    {#- Open the seed's transaction before the drop, so that the drops, the create and the load
        (both of which the seed materialization runs in this transaction) commit together. The
        views dbt built on the seed go first (dependent_views.sql: PostgreSQL's CASCADE). -#}
    {%- do srdp.srdp__drop_dependent_views(model) -%}
    {%- call statement('drop_relation') -%}
      {{ srdp.srdp__drop_sql(old_relation) }}
    {%- endcall -%}
    {{- return(create_csv_table(model, agate_table)) -}}
  {%- else -%}
    {{- return(dbt.default__reset_csv_table(model, full_refresh, old_relation, agate_table)) -}}
  {%- endif -%}
{%- endmacro %}
