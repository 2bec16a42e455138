{#-
  A seed's full refresh on DuckLake drops the views dbt built on the seed, as dbt on PostgreSQL
  does with `drop table ... cascade` (dbt's own seed tests expect the downstream view to be gone
  until the next `dbt run` rebuilds it). DuckLake has no CASCADE (`Not implemented Error: Cascade
  Drop not supported in DuckLake`) and records no dependencies (a view is SQL text bound when it is
  read), so dbt's graph says which views depend on the seed.

  srdp__dependent_views(node)
      The relations of the models materialized as `view` that select from `node`, directly or
      through other views and ephemeral models (what a CASCADE reaches; a table model in between
      stops it, as it does in PostgreSQL), in the node's database (one DuckDB transaction writes
      one database), that this invocation does not build (not in `selected_resources`) and that
      exist as views in the catalog now. Read in the open transaction. A selected view is left
      for its own node to replace (`dbt build --full-refresh`: a reader never finds it missing,
      and it reads the new seed meanwhile); views elsewhere, or built outside dbt, are left alone.
-#}

{% macro srdp__dependent_views(node) -%}
  {%- set children = {} -%}
  {%- for candidate in graph.nodes.values()
        if candidate.resource_type == 'model' and candidate.config.materialized in ['view', 'ephemeral'] -%}
    {%- for parent in candidate.depends_on.nodes -%}
      {%- do children.setdefault(parent, []).append(candidate) -%}
    {%- endfor -%}
  {%- endfor -%}
  {%- set views = [] -%}
  {%- do srdp.srdp__collect_views(node.unique_id, children, [node.unique_id], views) -%}
  {%- set existing = [] -%}
  {%- for unique_id, view in views if unique_id not in selected_resources
                                    and (view.database | lower) == (node.database | lower)
                                    and srdp.srdp__existing_type(view) == 'view' -%}
    {%- do existing.append(view) -%}
  {%- endfor -%}
  {{- return(existing) -}}
{%- endmacro %}


{#- Appends to `views` a [unique id, relation] pair for each view model among the descendants of
    `unique_id` in `children` (parent id -> view and ephemeral models), each once; `seen` holds
    the ids already visited. -#}
{% macro srdp__collect_views(unique_id, children, seen, views) -%}
  {%- for child in children.get(unique_id, []) if child.unique_id not in seen -%}
    {%- do seen.append(child.unique_id) -%}
    {%- if child.config.materialized == 'view' -%}
      {%- do views.append([child.unique_id, api.Relation.create(database=child.database, schema=child.schema,
                                                                identifier=child.alias, type='view')]) -%}
    {%- endif -%}
    {%- do srdp.srdp__collect_views(child.unique_id, children, seen, views) -%}
  {%- endfor -%}
{%- endmacro %}


{#- Drops, in the open transaction, the views of srdp__dependent_views(node), after checking that
    dbt may write their schemas (srdp_check_writer), and tells dbt's relation cache. Logs each. -#}
{% macro srdp__drop_dependent_views(node) -%}
  {%- set views = srdp.srdp__dependent_views(node) -%}
  {%- if views | length == 0 -%}
    {{- return(views) -}}
  {%- endif -%}
  {%- do srdp.srdp__check_writes(none, none, views) -%}
  {%- for view in views -%}
    {%- do log('srdp: the full refresh of seed ' ~ node.name ~ ' drops the view ' ~ view ~ ' built on it '
               ~ '(as dbt on PostgreSQL does by CASCADE); the next dbt run rebuilds it', info=True) -%}
    {%- call statement('srdp_drop_dependent_view') -%}
      drop view {{ view }}
    {%- endcall -%}
    {%- do adapter.cache_dropped(view) -%}
  {%- endfor -%}
  {{- return(views) -}}
{%- endmacro %}
