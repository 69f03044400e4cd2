"""Shared fixtures. pyspark is imported only when a test asks for ``spark``."""

from __future__ import annotations

import os

import pytest
from local_spark import build_local_spark_session

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


@pytest.fixture(scope="session")
def spark():
    """One local SparkSession for the whole test session: local[2], UI off, a non-UTC zone."""
    pytest.importorskip("pyspark")
    session = build_local_spark_session("ubunye-dagster-tests", TEST_SETTINGS)
    yield session
    session.stop()
