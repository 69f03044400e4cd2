"""Shared fixtures. pyspark is imported only when a test asks for ``spark``."""

from __future__ import annotations

import pytest
from local_spark import build_local_spark_session

#: Settings the tests add to the local session: few shuffle partitions, Arrow transfers.
TEST_SETTINGS = {
    "spark.sql.shuffle.partitions": "4",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
}


@pytest.fixture(scope="session")
def spark():
    """One local SparkSession for the whole test session: local[2], UI off, a non-UTC zone."""
    pytest.importorskip("pyspark")
    session = build_local_spark_session("ubunye-dagster-tests", TEST_SETTINGS)
    yield session
    session.stop()
