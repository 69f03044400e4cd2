"""dbt on Spark: the example dbt project, unchanged but for its profile's target, built by real
dbt-spark through the Thrift server of the tests' own SparkSession (dbt's tables are that
session's, as a cluster's metastore is shared between dbt and Dagster on Databricks or EMR); every
model and seed gets its receipt hashed by Spark, and the drift sensor judges them as on DuckDB."""

from __future__ import annotations

from collections.abc import Iterator
from importlib.metadata import version

import dagster as dg
import pytest
from dbt_shop import MODELS, assert_environment_names, copy_shop, copy_shop_on_spark
from local_spark import spark_thrift_server

from ubunye_core.records.drift import INPUTS_CHANGED, SAME_INPUTS
from ubunye_dagster.sensor import build_drift_sensor
from ubunye_rows import fingerprint_arrow

pytest.importorskip("dbt.adapters.spark", reason="the dbt-spark extra is not installed")
pytest.importorskip("pyhive", reason="dbt-spark's Thrift method needs PyHive (extra dbt-spark)")

pytestmark = pytest.mark.spark

#: A model whose rows differ on every build from the same code, inputs and environment.
LUCKY_DRAW = "select order_id, random() as draw from {{ ref('raw_orders') }}\n"


@pytest.fixture(scope="module")
def thrift_port(spark, spark_remote, tmp_path_factory) -> Iterator[int]:
    """The port of a Thrift server inside the tests' SparkSession, its schema ``main`` (the
    profile's) in a temp folder."""
    if spark_remote is not None:
        pytest.skip("the Thrift server runs inside a classic SparkSession's driver")
    location = tmp_path_factory.mktemp("dbt_spark_warehouse") / "main.db"
    with spark_thrift_server(spark, "main", location) as port:
        yield port


@pytest.fixture(scope="module")
def drawn_twice(thrift_port, tmp_path_factory):
    """The shop on Spark with a non-deterministic model, built twice, nothing changed."""
    with pytest.MonkeyPatch.context() as monkeypatch, dg.instance_for_test() as instance:
        shop = copy_shop_on_spark(tmp_path_factory.mktemp("dbt_spark"), monkeypatch, thrift_port)
        shop.write("models/lucky_draw.sql", LUCKY_DRAW)
        runs = [shop.materialise(instance), shop.materialise(instance)]
        yield shop, instance, runs


def judged(instance: dg.DagsterInstance) -> dict[str, dg.AssetCheckEvaluation]:
    """The drift sensor's latest verdict on each asset, after one tick over every receipt."""
    data = build_drift_sensor(None).evaluate_tick(dg.build_sensor_context(instance=instance))
    return {event.asset_key.to_user_string(): event for event in data.asset_events}


def test_each_dbt_node_gets_a_receipt_hashed_by_spark(drawn_twice):
    shop, _, runs = drawn_twice
    for asset in (*MODELS, "lucky_draw"):
        output = shop.record(asset, runs[-1].run_id).outputs[-1]
        assert output.hash_error is None, (asset, output.hash_error)
        assert output.hash_method == "rows-v1" and output.data_hash.startswith("sha256:")
        assert output.location == f"main.{asset}"
        assert output.format == "spark"


def test_the_digest_by_spark_is_the_kernels_on_the_rows_read_out(drawn_twice, spark):
    shop, _, runs = drawn_twice
    for asset in MODELS:
        recorded = shop.record(asset, runs[-1].run_id).outputs[-1].data_hash
        assert recorded == fingerprint_arrow(spark.table(f"main.{asset}").toArrow()).data_hash


def test_the_same_seeds_and_models_have_the_same_digests_on_duckdb(drawn_twice, tmp_path):
    on_spark, _, runs = drawn_twice
    with pytest.MonkeyPatch.context() as monkeypatch, dg.instance_for_test() as instance:
        on_duckdb = copy_shop(tmp_path, monkeypatch)
        duckdb_run = on_duckdb.materialise(instance)
    for asset in MODELS:
        theirs = on_duckdb.record(asset, duckdb_run.run_id).outputs[-1]
        ours = on_spark.record(asset, runs[-1].run_id).outputs[-1]
        assert theirs.format == "duckdb" and ours.format == "spark"
        assert (ours.data_hash, ours.schema_hash) == (theirs.data_hash, theirs.schema_hash), asset


def test_the_environment_names_dbt_spark_pyspark_and_pyhive(drawn_twice):
    shop, _, runs = drawn_twice
    record = shop.record("stg_orders", runs[-1].run_id)
    assert_environment_names(record, "spark", "PyHive")
    assert record.environment["packages"]["pyspark"] == version("pyspark")


def test_the_inputs_are_the_upstream_receipts_of_the_same_build(drawn_twice):
    shop, _, runs = drawn_twice
    record = shop.record("customer_revenue", runs[-1].run_id)
    by_name = {step.name: step for step in record.inputs}
    assert set(by_name) == {"raw_customers", "stg_orders"}
    for name, step in by_name.items():
        assert step.data_hash == shop.record(name, runs[-1].run_id).outputs[-1].data_hash


def test_a_non_deterministic_model_on_spark_is_flagged(drawn_twice):
    _, instance, _ = drawn_twice
    verdicts = judged(instance)

    assert not verdicts["lucky_draw"].passed
    assert verdicts["lucky_draw"].metadata["ubunye/reason"].value == SAME_INPUTS
    for steady in ("stg_orders", "customer_revenue"):
        assert verdicts[steady].passed, steady
        assert verdicts[steady].metadata["ubunye/verdict"].value == "unchanged"


@pytest.fixture(scope="module")
def seed_changed(drawn_twice):
    """The same shop built a third time, after one order of its seed was corrected (judged after
    the tests of the first two builds, which come first in this module)."""
    shop, instance, _ = drawn_twice
    seed = shop.project_dir / "seeds" / "raw_orders.csv"
    seed.write_text(seed.read_text().replace("7.25", "8.25"), encoding="utf-8")
    shop.materialise(instance)
    return judged(instance)


def test_a_changed_seed_on_spark_is_explained_by_its_input(seed_changed):
    verdicts = seed_changed
    for steady in ("raw_customers", "stg_orders", "customer_revenue"):
        assert verdicts[steady].passed, steady
    for downstream in ("stg_orders", "customer_revenue"):
        assert verdicts[downstream].metadata["ubunye/reason"].value == INPUTS_CHANGED
    assert verdicts["raw_orders"].metadata["ubunye/verdict"].value == "explained"
