"""What the example project's tests read back: its assets, their receipts and their run records."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import dagster as dg

from example_project.definitions import USECASE

#: Every asset of the example and its group (the package its records are filed under).
ASSET_GROUPS = {
    "raw/customers": "raw",
    "raw/orders": "raw",
    "raw/products": "raw",
    "sales/order_lines": "sales",
    "sales/daily_orders": "sales",
    "sales/price_list": "sales",
    "customers/customer_stats": "customers",
    "customers/country_revenue": "customers",
    "spark/order_lines": "spark",
    "spark/category_revenue": "spark",
}
#: The dbt project's models and seeds (example_project/dbt_shop), all in the `dbt_shop` group.
DBT_ASSETS = {
    f"dbt_shop/{name}" for name in ("raw_customers", "raw_orders", "stg_orders", "customer_revenue")
}
SPARK_ASSETS = {asset for asset, group in ASSET_GROUPS.items() if group == "spark"}
NON_SPARK_ASSETS = set(ASSET_GROUPS) - SPARK_ASSETS
#: The one daily-partitioned asset.
PARTITIONED = "sales/daily_orders"


def latest_metadata(
    instance: dg.DagsterInstance, asset: str, partition: str | None = None
) -> tuple[str, dict[str, Any]]:
    """The run id and the plain metadata values of the asset's (partition's) latest
    materialisation."""
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(
            asset_key=dg.AssetKey.from_user_string(asset),
            asset_partitions=[partition] if partition else None,
        ),
        limit=1,
    ).records
    assert records, f"no materialisation of {asset} {partition or ''}"
    event = records[0].event_log_entry
    metadata = event.asset_materialization.metadata
    return event.run_id, {label: value.value for label, value in metadata.items()}


def receipt(instance: dg.DagsterInstance, asset: str) -> dict[str, Any]:
    """The plain metadata values of the asset's latest materialisation."""
    return latest_metadata(instance, asset)[1]


def load_record(home: Path, asset: str, run_id: str) -> dict[str, Any]:
    """The run record document the identity mapping names for ``asset`` and ``run_id``."""
    task = asset.replace("/", ".")
    path = home / ".ubunye" / "lineage" / USECASE / ASSET_GROUPS[asset] / task / f"{run_id}.json"
    return json.loads(path.read_text(encoding="utf-8"))


def assert_receipt_matches_record(
    instance: dg.DagsterInstance, home: Path, asset: str, partition: str | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The asset's latest materialisation succeeded with one hashed output, and its receipt
    carries that output's digest and row count; returns (record, receipt)."""
    run_id, metadata = latest_metadata(instance, asset, partition)
    record = load_record(home, asset, f"{run_id}.{partition}" if partition else run_id)
    (output,) = record["outputs"]
    assert record["status"] == "success", asset
    assert record["task_path"] == f"{USECASE}/{ASSET_GROUPS[asset]}/{asset.replace('/', '.')}"
    assert output["data_hash"].startswith("sha256:"), asset
    assert metadata["ubunye/data_hash"] == output["data_hash"], asset
    assert metadata["ubunye/schema_hash"] == output["schema_hash"], asset
    assert metadata["dagster/row_count"] == output["row_count"] > 0, asset
    return record, metadata
