{#-
  persist_docs on DuckLake: dbt-duckdb comments on the relation (`comment on table|view`) and on
  each documented column (`comment on column`). DuckLake 1.0 keeps all of them but the columns of
  a view: `comment on column <view>.<column>` fails with `Binder Error: Cannot comment on columns
  for entry <view> - it is not a table`, so a view model with `persist_docs: {columns: true}` and
  documented columns failed to build.

  duckdb__persist_docs(relation, model, for_relation, for_columns)
      For a view in a DuckLake catalog whose documented columns would be commented: a dbt warning
      naming the view and the limit, then dbt's persist_docs without the column comments (the
      view's own comment is still set, and it builds). Everything else is dbt's, unchanged.
-#}

{% macro duckdb__persist_docs(relation, model, for_relation=true, for_columns=true) -%}
  {%- if for_columns and relation.type == 'view' and config.persist_column_docs()
        and srdp.srdp__documented_columns(model) | length > 0 and srdp.srdp__is_ducklake(relation) -%}
    {%- do exceptions.warn('srdp: the column descriptions of view ' ~ relation ~ ' are not persisted: '
        ~ 'DuckLake 1.0 cannot comment on the columns of a view (Binder Error: Cannot comment on columns for entry '
        ~ relation.identifier ~ ' - it is not a table). The view\'s own description is. Materialize it as a '
        ~ 'table to keep column comments in the catalog.') -%}
    {%- set for_columns = false -%}
  {%- endif -%}
  {{- return(dbt.default__persist_docs(relation, model, for_relation, for_columns)) -}}
{%- endmacro %}


{#- The names of `model`'s columns that have a description. -#}
{% macro srdp__documented_columns(model) -%}
  {%- set names = [] -%}
  {%- for name, column in (model.columns or {}).items() if column.description -%}
    {%- do names.append(name) -%}
  {%- endfor -%}
  {{- return(names) -}}
{%- endmacro %}
