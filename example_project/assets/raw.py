"""Raw tables: the shipped CSV files read with pandas, typed once, as one multi-asset."""

from __future__ import annotations

import dagster as dg
import pandas as pd

from example_project.paths import SEED_DIR

RAW_GROUP = "raw"


@dg.multi_asset(
    outs={
        "customers": dg.AssetOut(key=["raw", "customers"], description="Shop customers."),
        "orders": dg.AssetOut(
            key=["raw", "orders"],
            description="Orders of January 2024 (UTC).",
            metadata={
                "ubunye/expectations": [
                    {
                        "one_of": {
                            "column": "status",
                            "values": ["delivered", "shipped", "cancelled"],
                        }
                    },
                    {"not_null": "ordered_at", "severity": "warn"},
                ]
            },
        ),
        "products": dg.AssetOut(key=["raw", "products"], description="Products and prices."),
    },
    group_name=RAW_GROUP,
)
def raw_tables() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Read the three seed CSV files and give each column its type."""
    customers = pd.read_csv(SEED_DIR / "customers.csv", dtype={"customer_id": "int64"})
    customers["signup_date"] = pd.to_datetime(customers["signup_date"]).dt.date
    orders = pd.read_csv(
        SEED_DIR / "orders.csv",
        dtype={"order_id": "int64", "customer_id": "int64", "product_id": "int64"},
    )
    orders["ordered_at"] = pd.to_datetime(orders["ordered_at"], utc=True).dt.as_unit("us")
    products = pd.read_csv(SEED_DIR / "products.csv", dtype={"unit_price": "float64"})
    return customers, orders, products
