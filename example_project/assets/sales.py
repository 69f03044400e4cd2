"""pandas assets: order lines (two inputs) and the daily-partitioned orders of one day."""

from __future__ import annotations

import dagster as dg
import pandas as pd

from example_project.assets import upstream

SALES_GROUP = "sales"
#: The days the seed data covers.
DAILY = dg.DailyPartitionsDefinition(start_date="2024-01-01", end_date="2024-02-01")
#: Columns of an order line, in the order both the pandas and the Spark asset write them.
ORDER_LINE_COLUMNS = [
    "order_id",
    "customer_id",
    "product_id",
    "category",
    "quantity",
    "unit_price",
    "amount",
    "ordered_at",
]


@dg.asset(
    key=["sales", "order_lines"],
    group_name=SALES_GROUP,
    metadata={
        # Checked by UbunyeIOManager before writing; every result lands in the receipt.
        "ubunye/expectations": [
            {"not_null": "order_id"},
            {"unique": ["order_id"]},
            {"between": {"column": "quantity", "min": 1, "max": 100}},
            {"between": {"column": "amount", "min": 0}},
            {"row_count": {"min": 1}},
        ]
    },
    ins=upstream(orders="raw/orders", products="raw/products"),
)
def order_lines(orders: pd.DataFrame, products: pd.DataFrame) -> pd.DataFrame:
    """Orders that were not cancelled, priced: one line per order with its amount."""
    kept = orders[orders["status"] != "cancelled"]
    priced = kept.merge(products[["product_id", "category", "unit_price"]], on="product_id")
    priced["amount"] = priced["quantity"] * priced["unit_price"]
    return priced[ORDER_LINE_COLUMNS].sort_values("order_id").reset_index(drop=True)


@dg.asset(
    key=["sales", "daily_orders"],
    group_name=SALES_GROUP,
    partitions_def=DAILY,
    ins=upstream(order_lines="sales/order_lines"),
)
def daily_orders(context, order_lines: pd.DataFrame) -> pd.DataFrame:
    """The order lines of the partition's day (UTC)."""
    # `context` stays unannotated: Dagster rejects the string annotation postponed evaluation makes.
    window = context.partition_time_window
    start = pd.Timestamp(window.start).tz_convert("UTC")
    end = pd.Timestamp(window.end).tz_convert("UTC")
    in_day = (order_lines["ordered_at"] >= start) & (order_lines["ordered_at"] < end)
    return order_lines[in_day].reset_index(drop=True)


@dg.asset(
    key=["sales", "price_list"],
    group_name=SALES_GROUP,
    # Stored as a Delta table: every materialisation stays as a version `lineage diff` can read.
    io_manager_key="delta_io_manager",
    ins=upstream(products="raw/products"),
    # A price rise for one category, in percent (none by default).
    config_schema={
        "rise_category": dg.Field(str, default_value=""),
        "rise_percent": dg.Field(float, default_value=0.0),
    },
)
def price_list(context, products: pd.DataFrame) -> pd.DataFrame:
    """The products' current prices (a rise for one category when configured)."""
    prices = products[["product_id", "name", "category", "unit_price"]].copy()
    rising = prices["category"] == context.op_execution_context.op_config["rise_category"]
    factor = 1 + context.op_execution_context.op_config["rise_percent"] / 100
    prices.loc[rising, "unit_price"] = (prices.loc[rising, "unit_price"] * factor).round(2)
    return prices.sort_values("product_id").reset_index(drop=True)
