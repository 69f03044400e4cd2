"""The example end to end with Spark, as the README's quick start runs it (`python -m
example_project`): every asset receipted, and the Spark and pandas order lines agree."""

from __future__ import annotations

import contextlib
import io
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import dagster as dg
import pytest

from example_project import __main__ as quick_start
from example_project.definitions import USECASE
from example_project.paths import HOME_ENV
from example_project.run import DAYS, TRACED_ASSET

pytestmark = pytest.mark.spark

#: Every asset of the example and its group (its record's package).
ASSETS = {
    "raw/customers": "raw",
    "raw/orders": "raw",
    "raw/products": "raw",
    "sales/order_lines": "sales",
    "sales/daily_orders": "sales",
    "customers/customer_stats": "customers",
    "customers/country_revenue": "customers",
    "spark/order_lines": "spark",
    "spark/category_revenue": "spark",
}
PARTITIONED = "sales/daily_orders"


def latest_metadata(
    instance: dg.DagsterInstance, asset: str, partition: str | None = None
) -> tuple[str, dict[str, Any]]:
    """The run id and plain metadata values of the asset's (partition's) latest materialisation."""
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(
            asset_key=dg.AssetKey.from_user_string(asset),
            asset_partitions=[partition] if partition else None,
        ),
        limit=1,
    ).records
    assert records, f"no materialisation of {asset} {partition or ''}"
    event = records[0].event_log_entry
    return event.run_id, {k: v.value for k, v in event.asset_materialization.metadata.items()}


@pytest.fixture(scope="module")
def quick_start_run(spark, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """`python -m example_project` in this process (so it reuses the test SparkSession), with
    its data, records and Dagster instance in temp folders."""
    home = tmp_path_factory.mktemp("example")
    dagster_home = tmp_path_factory.mktemp("dagster_home")
    printed = io.StringIO()
    environment = {HOME_ENV: str(home), "DAGSTER_HOME": str(dagster_home)}
    with mock.patch.dict(os.environ, environment):
        with contextlib.redirect_stdout(printed):
            exit_code = quick_start.main()
        with dg.DagsterInstance.get() as instance:
            yield {
                "home": home,
                "instance": instance,
                "exit_code": exit_code,
                "out": printed.getvalue(),
            }


def record(home: Path, asset: str, run_id: str) -> dict[str, Any]:
    """The run record the identity mapping names for `asset` and `run_id`."""
    task = asset.replace("/", ".")
    path = home / ".ubunye" / "lineage" / USECASE / ASSETS[asset] / task / f"{run_id}.json"
    return json.loads(path.read_text(encoding="utf-8"))


def test_the_quick_start_materialises_everything_and_prints_a_trace(
    quick_start_run: dict[str, Any],
) -> None:
    assert quick_start_run["exit_code"] == 0, quick_start_run["out"]
    _, metadata = latest_metadata(quick_start_run["instance"], TRACED_ASSET)
    assert metadata["ubunye/data_hash"] in quick_start_run["out"]


def test_every_asset_has_a_record_and_a_receipt(quick_start_run: dict[str, Any]) -> None:
    home, instance = quick_start_run["home"], quick_start_run["instance"]
    for asset in ASSETS:
        for partition in DAYS if asset == PARTITIONED else [None]:
            run_id, metadata = latest_metadata(instance, asset, partition)
            found = record(home, asset, f"{run_id}.{partition}" if partition else run_id)
            (output,) = found["outputs"]
            assert found["status"] == "success", asset
            assert output["data_hash"].startswith("sha256:"), asset
            assert metadata["ubunye/data_hash"] == output["data_hash"], asset
            assert metadata["dagster/row_count"] == output["row_count"] > 0, asset
            assert metadata["ubunye/environment_hash"] == found["environment_hash"], asset


def test_the_pandas_and_the_spark_order_lines_have_the_same_digest(
    quick_start_run: dict[str, Any],
) -> None:
    instance = quick_start_run["instance"]
    _, pandas_made = latest_metadata(instance, "sales/order_lines")
    _, spark_made = latest_metadata(instance, "spark/order_lines")
    assert pandas_made["ubunye/schema_hash"] == spark_made["ubunye/schema_hash"]
    assert pandas_made["ubunye/data_hash"] == spark_made["ubunye/data_hash"]
    assert pandas_made["dagster/row_count"] == spark_made["dagster/row_count"]


def test_a_spark_input_is_hashed_like_the_pandas_output_it_reads(
    quick_start_run: dict[str, Any],
) -> None:
    instance = quick_start_run["instance"]
    _, orders = latest_metadata(instance, "raw/orders")
    _, spark_made = latest_metadata(instance, "spark/order_lines")
    assert spark_made["ubunye/inputs"]["orders"]["data_hash"] == orders["ubunye/data_hash"]
