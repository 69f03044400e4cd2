select
    order_id,
    customer_id,
    cast(ordered_on as date) as ordered_on,
    cast(amount as decimal(10, 2)) as amount
from {{ ref('raw_orders') }}
