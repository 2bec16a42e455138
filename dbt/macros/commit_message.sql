{#-
  srdp_commit_message(writer=none)
      Not needed with the package's dispatch entry: every node's transaction is labelled by
      srdp__begin_write (node_writes.sql). Kept for projects that still have it (harmless: the
      same message is set twice). For a `+pre-hook` of models, seeds and snapshots (it runs inside the node's transaction,
      dbt's default for hooks): labels the DuckLake snapshot the node commits with DuckLake's
      commit author and message, `CALL <database>.set_commit_message('dbt', 'dbt invocation
      <invocation_id> model <name>')`, so `srdp_write_audit` shows who wrote it. The writer is
      `writer`, else the var `srdp_writer`, else `dbt`. A node whose database is not a DuckLake
      catalog is left alone (the hook renders nothing). The package's `create_schema` labels the
      schemas it creates the same way.

      dbt_project.yml:
          models:    {+pre-hook: "{{ srdp.srdp_commit_message() }}"}
          seeds:     {+pre-hook: "{{ srdp.srdp_commit_message() }}"}
          snapshots: {+pre-hook: "{{ srdp.srdp_commit_message() }}"}
-#}
{% macro srdp_commit_message(writer=none) -%}
  {%- if execute and model is defined and this is defined and srdp.srdp__is_ducklake(this) -%}
    {{- srdp.srdp__commit_message_sql(this.database, model.resource_type ~ ' ' ~ model.name, writer) -}}
  {%- endif -%}
{%- endmacro %}


{#- `call "<database>".set_commit_message('<writer>', 'dbt invocation <id> <what>')` -#}
{% macro srdp__commit_message_sql(database, what, writer=none) -%}
  {%- set writer = writer or var('srdp_writer', 'dbt') -%}
  call {{ adapter.quote(database) }}.set_commit_message({{ srdp.srdp_sql_string(writer) }}, {{ srdp.srdp_sql_string('dbt invocation ' ~ invocation_id ~ ' ' ~ what) }})
{%- endmacro %}
