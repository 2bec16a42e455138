-- lake.curated.events_by_batch: a view over the events, replaced in one DuckLake transaction on
-- every run (dbt-duckdb alone fails on the second run: DuckLake refuses its DROP ... CASCADE).
{{ config(materialized='view') }}
select batch, count(*) as events, sum(amount) as amount
from {{ ref('events') }}
group by batch
