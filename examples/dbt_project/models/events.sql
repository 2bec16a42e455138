-- lake.curated.events: every run appends the next batch of the events CSV (0, 1, 2, ...).
select
    id::BIGINT as id,
    batch::INTEGER as batch,
    name::VARCHAR as name,
    amount::DECIMAL(12, 2) as amount
from read_csv({{ srdp.srdp_sql_string(var('events_csv')) }}, header = true, all_varchar = true)
{% if is_incremental() %}
where batch::INTEGER = (select coalesce(max(batch) + 1, 0) from {{ this }})
{% else %}
where batch::INTEGER = 0
{% endif %}
