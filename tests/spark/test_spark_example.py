"""The example end to end with Spark, as the README's quick start runs it (`python -m
example_project`): every asset receipted, and the Spark and pandas order lines agree."""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Iterator
from typing import Any
from unittest import mock

import dagster as dg
import pytest
from example_receipts import ASSET_GROUPS, PARTITIONED, assert_receipt_matches_record, receipt

from example_project import __main__ as quick_start
from example_project.paths import HOME_ENV
from example_project.run import DAYS, TRACED_ASSET

# Its module fixtures are built once: as a Spark module, it runs on the one Spark worker
# (tests/conftest.py).
pytestmark = pytest.mark.spark


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


def test_the_quick_start_materialises_everything_and_prints_a_trace(
    quick_start_run: dict[str, Any],
) -> None:
    assert quick_start_run["exit_code"] == 0, quick_start_run["out"]
    traced = receipt(quick_start_run["instance"], TRACED_ASSET)
    assert traced["ubunye/data_hash"] in quick_start_run["out"]


def test_every_asset_has_a_record_and_a_receipt(quick_start_run: dict[str, Any]) -> None:
    home, instance = quick_start_run["home"], quick_start_run["instance"]
    for asset in ASSET_GROUPS:
        for partition in DAYS if asset == PARTITIONED else [None]:
            record, metadata = assert_receipt_matches_record(instance, home, asset, partition)
            assert metadata["ubunye/environment_hash"] == record["environment_hash"], asset


def test_the_pandas_and_the_spark_order_lines_have_the_same_digest(
    quick_start_run: dict[str, Any],
) -> None:
    pandas_made = receipt(quick_start_run["instance"], "sales/order_lines")
    spark_made = receipt(quick_start_run["instance"], "spark/order_lines")
    for key in ("ubunye/schema_hash", "ubunye/data_hash", "dagster/row_count"):
        assert pandas_made[key] == spark_made[key], key


def test_a_spark_input_is_hashed_like_the_pandas_output_it_reads(
    quick_start_run: dict[str, Any],
) -> None:
    orders = receipt(quick_start_run["instance"], "raw/orders")
    spark_made = receipt(quick_start_run["instance"], "spark/order_lines")
    assert spark_made["ubunye/inputs"]["orders"]["data_hash"] == orders["ubunye/data_hash"]
