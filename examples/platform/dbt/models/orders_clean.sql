-- lake.curated.orders_clean: the latest version of each order (raw is append-only, so an order
-- loaded twice is there twice), with its amount summed from its items (dlt's child table).
with latest as (
    select *
    from {{ source('raw', 'orders') }}
    qualify row_number() over (partition by id order by _dlt_load_id desc) = 1
)
select
    o.id::BIGINT as order_id,
    o.order_date::DATE as order_date,
    o.customer::VARCHAR as customer,
    count(i._dlt_id)::BIGINT as items,
    coalesce(sum(i.qty * i.price), 0)::DECIMAL(12, 2) as amount
from latest o
left join {{ source('raw', 'orders__items') }} i on i._dlt_parent_id = o._dlt_id
group by all
