{#-
  srdp_generate_schema_name(custom_schema_name, node): the schema a node is built in, with a
  custom schema used as it is. dbt's default appends it to the target's schema
  (`config(schema='marts')` with `schema: curated` in the profile builds `lake.curated_marts`, a
  schema srdp.toml gives to nobody, which srdp_check_writes then refuses). With this macro
  `schema='marts'` builds `lake.marts`, which srdp.toml must give to dbt:

      [catalogs.lake.schemas.marts]
      writer = "dbt"
      layer = "curated"

  Nodes without a custom schema are built in the profile's `schema`. Use it from the root
  project (dbt takes `generate_schema_name` from the root project, not from a package), in
  `macros/generate_schema_name.sql`:

      {% macro generate_schema_name(custom_schema_name, node) -%}
        {{- srdp.srdp_generate_schema_name(custom_schema_name, node) -}}
      {%- endmacro %}
-#}

{% macro srdp_generate_schema_name(custom_schema_name, node) -%}
  {%- if custom_schema_name is none -%}
    {{- target.schema -}}
  {%- else -%}
    {{- custom_schema_name | trim -}}
  {%- endif -%}
{%- endmacro %}
