"""Shared fixtures. pyspark is imported only when a test asks for ``spark``."""

from __future__ import annotations

import os
import sys

import pytest

#: A zone with daylight saving and far from UTC, so a hash that leaks the session zone shows.
SPARK_SESSION_TIME_ZONE = "America/Sao_Paulo"


@pytest.fixture(scope="session")
def spark():
    """One local SparkSession for the whole test session: local[2], UI off, a non-UTC zone."""
    pytest.importorskip("pyspark")
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    session = (
        SparkSession.builder.master("local[2]")
        .appName("ubunye-dagster-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.session.timeZone", SPARK_SESSION_TIME_ZONE)
        .config("spark.driver.memory", "2g")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
