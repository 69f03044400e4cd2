"""polars and pandas assets over customers: a polars aggregation read back by pandas."""

from __future__ import annotations

import dagster as dg
import pandas as pd
import polars as pl

from example_project.assets import upstream

CUSTOMERS_GROUP = "customers"


@dg.asset(
    key=["customers", "customer_stats"],
    group_name=CUSTOMERS_GROUP,
    ins=upstream(order_lines="sales/order_lines", customers="raw/customers"),
)
def customer_stats(order_lines: pl.DataFrame, customers: pl.DataFrame) -> pl.DataFrame:
    """Per customer (polars): number of orders, total spend, first and last order."""
    # Spend is rounded to cents: a parallel float sum may add in any order, cents do not move.
    per_customer = order_lines.group_by("customer_id").agg(
        pl.len().cast(pl.Int64).alias("orders"),
        pl.col("amount").sum().round(2).alias("spend"),
        pl.col("ordered_at").min().alias("first_order_at"),
        pl.col("ordered_at").max().alias("last_order_at"),
    )
    return (
        customers.select("customer_id", "country", "signup_date")
        .join(per_customer, on="customer_id", how="left")
        .sort("customer_id")
    )


@dg.asset(
    key=["customers", "country_revenue"],
    group_name=CUSTOMERS_GROUP,
    ins=upstream(customer_stats="customers/customer_stats"),
)
def country_revenue(customer_stats: pd.DataFrame) -> pd.DataFrame:
    """Per country (pandas, reading what polars wrote): customers, buyers and revenue."""
    grouped = customer_stats.groupby("country", as_index=False).agg(
        customers=("customer_id", "count"),
        buyers=("orders", "count"),
        revenue=("spend", "sum"),
    )
    grouped["revenue"] = grouped["revenue"].round(2)
    return grouped.sort_values("revenue", ascending=False).reset_index(drop=True)
