select
    c.customer_id,
    c.name,
    c.country,
    count(o.order_id) as orders,
    -- The sum's type said outright: engines widen a decimal sum differently (DuckDB to
    -- decimal(38,2), PostgreSQL to a numeric without precision, which rows-v1 cannot name).
    cast(sum(o.amount) as decimal(12, 2)) as revenue
from {{ ref('raw_customers') }} as c
left join {{ ref('stg_orders') }} as o on o.customer_id = c.customer_id
group by c.customer_id, c.name, c.country
