select
    c.customer_id,
    c.name,
    c.country,
    count(o.order_id) as orders,
    sum(o.amount) as revenue
from {{ ref('raw_customers') }} as c
left join {{ ref('stg_orders') }} as o on o.customer_id = c.customer_id
group by c.customer_id, c.name, c.country
