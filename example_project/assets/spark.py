"""Spark assets: the same order lines as the pandas asset, and revenue per day and category."""

from __future__ import annotations

import dagster as dg
from dagster_pyspark import PySparkResource
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from example_project.assets import upstream
from example_project.assets.sales import ORDER_LINE_COLUMNS

SPARK_GROUP = "spark"


@dg.asset(
    key=["spark", "order_lines"],
    group_name=SPARK_GROUP,
    ins=upstream(orders="raw/orders", products="raw/products"),
)
def spark_order_lines(
    pyspark: PySparkResource, orders: DataFrame, products: DataFrame
) -> DataFrame:
    """The pandas `sales/order_lines` computed by Spark: same rows, so the same rows-v1 digest."""
    kept = orders.where(F.col("status") != "cancelled")
    priced = kept.join(products.select("product_id", "category", "unit_price"), on="product_id")
    priced = priced.withColumn("amount", F.col("quantity") * F.col("unit_price"))
    return priced.select(*ORDER_LINE_COLUMNS)


@dg.asset(
    key=["spark", "category_revenue"],
    group_name=SPARK_GROUP,
    ins=upstream(order_lines="spark/order_lines"),
)
def category_revenue(pyspark: PySparkResource, order_lines: DataFrame) -> DataFrame:
    """Revenue (rounded to cents, as partial sums may meet in any order) and units per UTC day
    and category."""
    # From epoch seconds, so the UTC day does not depend on the session's time zone.
    day = F.date_from_unix_date(F.floor(F.unix_seconds(F.col("ordered_at")) / 86400).cast("int"))
    return (
        order_lines.withColumn("day", day)
        .groupBy("day", "category")
        .agg(F.round(F.sum("amount"), 2).alias("revenue"), F.sum("quantity").alias("units"))
    )
