"""Shared fixtures. pyspark is imported only when a test asks for ``spark``.

``--spark-connect`` runs the ``spark`` fixture against a local Spark Connect server (one per test
session) instead of a classic session. One Python process cannot hold both kinds of session (a
Connect session switches pyspark's functions to Connect globally), so the classic run starts a
second pytest with this option for the Spark Connect pass (tests/system/test_spark_connect.py).
"""

from __future__ import annotations

import os
import sys

import pytest
from external_python import executor_python
from external_python import external_python as build_external_python
from local_spark import build_local_spark_session, local_connect_server
from spark_cluster import spark_standalone_cluster

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


#: The files that take longest (minutes: the deployment's PostgreSQL, daemon and webserver, a
#: Spark Connect pass, the webserver, a Spark cluster, wheel builds, the `dg` project, the
#: daemon-driven sensor, the Pipes subprocesses, the Spark modules), run first, longest first.
#: Under ``-n auto --dist loadfile --no-loadscope-reorder`` a file is one unit of work handed
#: out in this order, so no worker is left with a long one at the end.
LONGEST_FIRST = (
    "test_deployment.py",
    "test_spark_connect.py",
    "test_e2e_webserver.py",
    "test_spark_cluster.py",
    "test_wheel_install.py",
    "test_component.py",
    "test_sensor.py",
    "test_pipes.py",
    "test_io_manager_failures.py",
    "test_spark_rows_v1.py",
    "test_spark_conformance.py",
    "test_spark_pipes.py",
    "test_spark_sketch.py",
    "test_spark_example.py",
    "test_adoption.py",
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
