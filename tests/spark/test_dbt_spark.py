"""dbt on Spark: the example dbt project, unchanged but for its profile's target, built by real
dbt-spark through the Thrift server of the tests' own SparkSession (dbt's tables are that
session's, as a cluster's metastore is shared between dbt and Dagster on Databricks or EMR); every
model and seed gets its receipt hashed by Spark, the drift sensor judges them as on DuckDB, and
each model shows in Dagster as dbt reports it done, while the build goes on."""

from __future__ import annotations

import runpy
from collections.abc import Callable, Iterator
from importlib.metadata import version
from pathlib import Path
from types import SimpleNamespace

import dagster as dg
import pytest
from dbt_shop import (
    LUCKY_DRAW,
    MODELS,
    ReceiptsOnAnAdapter,
    assert_a_model_showed_while_the_build_went_on,
    copy_shop_on_postgres,
    copy_shop_on_spark,
    watch_a_build,
)
from local_spark import spark_thrift_server
from postgres_cluster import postgres_available, postgres_cluster

from ubunye_rows import fingerprint_arrow

pytest.importorskip("dbt.adapters.spark", reason="the dbt-spark extra is not installed")
pytest.importorskip("pyhive", reason="dbt-spark's Thrift method needs PyHive (extra dbt-spark)")

pytestmark = pytest.mark.spark

#: The script that regenerates docs/dbt.md's table of digests on each adapter.
SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "dbt_adapter_digests.py"


@pytest.fixture(scope="module")
def thrift_port(spark, spark_remote, tmp_path_factory) -> Iterator[int]:
    """The port of a Thrift server inside the tests' SparkSession, its schema ``main`` (the
    profile's) in a temp folder."""
    if spark_remote is not None:
        pytest.skip("the Thrift server runs inside a classic SparkSession's driver")
    location = tmp_path_factory.mktemp("dbt_spark_warehouse") / "main.db"
    with spark_thrift_server(spark, "main", location) as port:
        yield port


#: A model that takes a while, built after the others: the build is still going while it runs.
SLOW_MODEL = (
    "select count(*) as customers, max(pause.slept) as slept from {{ ref('customer_revenue') }}, "
    "(select reflect('java.lang.Thread', 'sleep', cast(6000 as bigint)) as slept) as pause\n"
)


def slow_count_built(spark) -> Callable[[], bool]:
    """Whether dbt has created ``main.slow_count`` in the session's catalog, asked when called."""
    return lambda: spark.catalog.tableExists("main.slow_count")


@pytest.fixture(scope="module")
def first_build_watched(spark, thrift_port, tmp_path_factory):
    """The shop on Spark with a non-deterministic model and a slow last model, built once on a
    thread while watched (one build serves both promises): shop, instance, what was seen."""
    with pytest.MonkeyPatch.context() as monkeypatch, dg.instance_for_test() as instance:
        shop = copy_shop_on_spark(tmp_path_factory.mktemp("dbt_spark"), monkeypatch, thrift_port)
        shop.write("models/lucky_draw.sql", LUCKY_DRAW)
        shop.write("models/slow_count.sql", SLOW_MODEL)
        yield shop, instance, watch_a_build(shop, instance, slow_count_built(spark))


@pytest.fixture(scope="module")
def drawn_twice(first_build_watched):
    """The shop on Spark with a non-deterministic model (and the slow one), built twice, nothing
    changed."""
    shop, instance, watched = first_build_watched
    if watched.error is not None:
        raise watched.error
    return shop, instance, [watched.run, shop.materialise(instance)]


@pytest.fixture(scope="module")
def digests_script() -> SimpleNamespace:
    """scripts/dbt_adapter_digests.py's functions and constants, run as a module of its own."""
    return SimpleNamespace(**runpy.run_path(str(SCRIPT), run_name="dbt_adapter_digests"))


@pytest.fixture(scope="module")
def on_duckdb(dbt_shop_on_duckdb) -> dict:
    """Each seed's and model's output step of the same project built on DuckDB (the session's
    build)."""
    shop, run_id = dbt_shop_on_duckdb
    return shop.outputs(run_id)


def outputs_on_spark(drawn_twice) -> dict:
    """Each seed's and model's output step of the last build on Spark."""
    shop, _, runs = drawn_twice
    return shop.outputs(runs[-1].run_id)


def test_the_same_seeds_and_models_have_the_same_digests_on_duckdb(drawn_twice, on_duckdb):
    on_spark = outputs_on_spark(drawn_twice)
    for asset in MODELS:
        theirs, ours = on_duckdb[asset], on_spark[asset]
        assert theirs.format == "duckdb" and ours.format == "spark"
        assert (ours.data_hash, ours.schema_hash) == (theirs.data_hash, theirs.schema_hash), asset


@pytest.fixture(scope="module")
def digests_table(digests_script, drawn_twice, on_duckdb, tmp_path_factory) -> str:
    """The docs' table of digests made from these builds and one on a temporary PostgreSQL."""
    if not postgres_available():
        pytest.skip("PostgreSQL's server binaries are not installed")
    root = tmp_path_factory.mktemp("dbt_postgres")
    with pytest.MonkeyPatch.context() as monkeypatch, postgres_cluster("admin") as cluster:
        on_postgres = digests_script.built_outputs(
            copy_shop_on_postgres(root, monkeypatch, cluster, "shop")
        )
    outputs = {"duckdb": on_duckdb, "postgres": on_postgres, "spark": outputs_on_spark(drawn_twice)}
    return digests_script.digests_block(outputs)


def test_the_docs_table_of_digests_on_each_adapter_matches_these_builds(
    digests_script, digests_table
):
    text = digests_script.DOC.read_text(encoding="utf-8")
    problems = digests_script.disagreements(text, {"digests": digests_table})
    assert not problems, "run `python scripts/dbt_adapter_digests.py`:\n" + "".join(problems)


def test_a_docs_table_saying_the_digests_differ_is_caught(digests_script, digests_table):
    text = digests_script.DOC.read_text(encoding="utf-8")
    wrong = text.replace("  yes\n", "  no\n", 1)
    assert wrong != text
    [problem] = digests_script.disagreements(wrong, {"digests": digests_table})
    assert "docs/dbt.md digests" in problem


def read_out_through_spark(request: pytest.FixtureRequest, relation: str) -> str:
    """rows-v1 of ``main.<relation>`` read through the tests' SparkSession as Arrow."""
    spark = request.getfixturevalue("spark")
    return fingerprint_arrow(spark.table(f"main.{relation}").toArrow()).data_hash


class TestReceiptsOnSpark(ReceiptsOnAnAdapter):
    adapter, driver = "spark", "PyHive"
    location = "main.{relation}"
    read_out = staticmethod(read_out_through_spark)

    def test_the_environment_names_pyspark_too(self, drawn_twice):
        shop, _, runs = drawn_twice
        record = shop.record("stg_orders", runs[-1].run_id)
        assert record.environment["packages"]["pyspark"] == version("pyspark")


def test_each_model_shows_with_its_receipt_while_the_build_goes_on(first_build_watched):
    _, _, watched = first_build_watched
    assert_a_model_showed_while_the_build_went_on(watched)
