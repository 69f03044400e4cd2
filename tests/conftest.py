"""Shared fixtures. pyspark is imported only when a test asks for ``spark``.

``--spark-connect`` runs the ``spark`` fixture against a local Spark Connect server (one per test
session) instead of a classic session. One Python process cannot hold both kinds of session (a
Connect session switches pyspark's functions to Connect globally), so the classic run starts a
second pytest with this option for the Spark Connect pass (tests/system/test_spark_connect.py).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from external_python import executor_python
from external_python import external_python as build_external_python
from local_spark import build_local_spark_session, local_connect_server
from session_builds import built_once_per_session, session_folder
from spark_cluster import spark_standalone_cluster

#: The options of every JVM the tests start (the Spark sessions, the Connect server, the clusters'
#: daemons and executors, the Thrift server dbt reaches), inherited by the processes they start:
#: C1 compiles alone and one thread collects. Their work is small and short-lived, and C2's
#: compiler threads and a parallel collector took about half of their CPU on two cores.
JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
os.environ.setdefault("JAVA_TOOL_OPTIONS", JVM_OPTIONS)

#: Settings the tests add to the local session: few shuffle partitions, Arrow transfers.
TEST_SETTINGS = {
    "spark.sql.shuffle.partitions": "4",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
}


@pytest.fixture(scope="session", autouse=True)
def index_cache_dir(tmp_path_factory):
    """Indexes of object stores go to a session folder, not the user's cache (also for the CLI
    and writers the tests start as subprocesses)."""
    folder = tmp_path_factory.mktemp("lineage-index-cache")
    before = os.environ.get("UBUNYE_INDEX_CACHE_DIR")
    os.environ["UBUNYE_INDEX_CACHE_DIR"] = str(folder)
    yield folder
    if before is None:
        os.environ.pop("UBUNYE_INDEX_CACHE_DIR", None)
    else:
        os.environ["UBUNYE_INDEX_CACHE_DIR"] = before


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--spark-connect",
        action="store_true",
        help="run the spark fixture against a local Spark Connect server",
    )


@pytest.fixture(scope="session")
def spark_remote(request, tmp_path_factory):
    """The ``sc://`` URL of the session's local Spark Connect server (``--spark-connect``), or None
    for a classic session."""
    if not request.config.getoption("--spark-connect"):
        yield None
        return
    pytest.importorskip("pyspark")
    log_path = tmp_path_factory.mktemp("spark-connect") / "server.log"
    with local_connect_server(log_path, TEST_SETTINGS) as url:
        yield url


@pytest.fixture(scope="session")
def spark(spark_remote):
    """One SparkSession for the whole test session: local[2], UI off, a non-UTC zone; classic,
    or a Spark Connect client of the local server with ``--spark-connect``."""
    pytest.importorskip("pyspark")
    if spark_remote is not None:
        from pyspark.sql import SparkSession

        session = SparkSession.builder.remote(spark_remote).getOrCreate()
        assert type(session).__module__.startswith("pyspark.sql.connect"), type(session)
    else:
        session = build_local_spark_session("ubunye-dagster-tests", TEST_SETTINGS)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def spark_config(spark, spark_remote) -> dict[str, str]:
    """The ``spark_config`` of a dagster-pyspark ``PySparkResource`` reaching the same Spark."""
    return {"spark.remote": spark_remote} if spark_remote else {}


@pytest.fixture(scope="session")
def external_python():
    """The interpreter of a virtual environment with only ubunye-rows (pandas, Spark, Pipes
    extras) and dagster-pipes: the external side of Dagster Pipes (tests/external_python.py)."""
    return build_external_python()


@pytest.fixture(scope="module")
def spark_cluster(tmp_path_factory):
    """A Spark standalone cluster for the module's tests: a master and two workers on 127.0.0.1,
    the executors on a venv holding only ubunye-rows, pyarrow, pandas and numpy (a
    ``spark_cluster.SparkCluster``); stopped when the module's tests are done."""
    pytest.importorskip("pyspark")
    if sys.platform != "linux":
        pytest.skip("the cluster's daemons run on Linux")
    folder = tmp_path_factory.mktemp("spark-cluster")
    with spark_standalone_cluster(folder, executor_python()) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def dbt_quick_start(tmp_path_factory) -> tuple[Path, list[str]]:
    """A home where the quick start's dbt half ran (the example's dbt models built, one seed
    changed, built again; example_project/run.py), once for the whole test session, and the
    two run ids. Shared by the workers: read it or copy it, never change it."""
    pytest.importorskip("dagster_dbt", reason="the dbt extra is not installed")
    from dbt_scenarios import build_quick_start

    folder = session_folder(tmp_path_factory, "dbt-quick-start")
    return folder, built_once_per_session(folder, build_quick_start)


@pytest.fixture(scope="session")
def dbt_shop_on_duckdb(tmp_path_factory):
    """The example's dbt project built once on DuckDB by tests/dbt_shop.py's harness, for the
    whole test session: the ``DbtShop`` and the run id. Shared by the workers: read it only."""
    pytest.importorskip("dagster_dbt", reason="the dbt extra is not installed")
    from dbt_scenarios import build_shop_on_duckdb
    from dbt_shop import DbtShop

    folder = session_folder(tmp_path_factory, "dbt-shop-on-duckdb")
    return DbtShop(folder), built_once_per_session(folder, build_shop_on_duckdb)


@pytest.fixture(scope="session")
def components_project(tmp_path_factory) -> Path:
    """A project laid out by `create-dagster project` with the receipts component scaffolded
    (tests/components_project.py), made once for the whole test session. Shared by the workers:
    copy it (``copy_project``), never change it."""
    from components_project import PROJECT, create_project

    folder = session_folder(tmp_path_factory, "components-project")
    built_once_per_session(folder, lambda into: str(create_project(into)))
    return folder / PROJECT


#: The files that take longest (minutes on two loaded cores: the deployment's PostgreSQL, daemon,
#: webserver and Spark cluster, the `dg` projects, the webserver, dbt on PostgreSQL and Spark, the
#: automation daemon's days, a Spark cluster, the dbt drift builds, the Pipes subprocesses, the
#: Spark modules, the wheel, the Spark Connect pass), run first, longest first (the order of
#: their times in a run of ``python -m pytest -n auto --durations=60``). Under ``-n auto --dist
#: loadfile --no-loadscope-reorder`` a file is one unit of work handed out in this order, so no
#: worker is left with a long one at the end.
LONGEST_FIRST = (
    "test_deployment.py",
    "test_component.py",
    "test_e2e_webserver.py",
    "test_dbt_postgres.py",
    "test_dbt_spark.py",
    "test_run_what_changed.py",
    "test_spark_cluster.py",
    "test_dbt_drift.py",
    "test_pipes.py",
    "test_spark_example.py",
    "test_wheel_install.py",
    "test_dbt_receipts.py",
    "test_spark_connect.py",
    "test_adoption.py",
    "test_io_manager_failures.py",
    "test_dbt_example.py",
    "test_spark_pipes.py",
    "test_spark_rows_v1.py",
    "test_spark_conformance.py",
    "test_sensor.py",
    "test_spark_sketch.py",
)


#: The folders of the test kinds marked by where they are (``-m "not system"``).
MARKED_BY_FOLDER = {"system": pytest.mark.system}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The longest files first, in ``LONGEST_FIRST`` order; every other test keeps its place.
    A test under ``tests/system`` is marked ``system``."""
    rank = {name: place for place, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))
    for item in items:
        marker = MARKED_BY_FOLDER.get(item.path.parent.name)
        if marker is not None:
            item.add_marker(marker)
