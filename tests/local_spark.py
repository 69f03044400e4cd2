"""The local SparkSession of the tests and the Spark benches, and small helpers around it.

pyspark is imported inside the functions, so importing this module never starts or needs Spark.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any

#: A zone with daylight saving and far from UTC, so a hash that leaks the session zone shows.
SPARK_SESSION_TIME_ZONE = "America/Sao_Paulo"


def build_local_spark_session(app_name: str, settings: Mapping[str, str] | None = None) -> Any:
    """A local[2] SparkSession: UI and progress bar off, session zone America/Sao_Paulo, 2g of
    driver memory, only errors logged; ``settings`` are set on top."""
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.master("local[2]")
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", SPARK_SESSION_TIME_ZONE)
        .config("spark.driver.memory", "2g")
    )
    for key, value in (settings or {}).items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


def java_feature_version(spark: Any) -> int:
    """The Java feature version the executors run (its Double.toString changed in 19)."""
    from pyspark.sql import functions as F

    property_value = F.reflect(
        F.lit("java.lang.System"), F.lit("getProperty"), F.lit("java.specification.version")
    )
    text = spark.range(1).select(property_value).collect()[0][0]
    return int(text.split(".")[-1] if text.startswith("1.") else text)


def spark_frame(spark: Any, table: Any) -> Any:
    """A Spark DataFrame of an Arrow table, typed by the Arrow schema rather than by inference,
    so a naive Arrow timestamp stays wall time (timestamp_ntz)."""
    from pyspark.sql.pandas.types import from_arrow_schema

    return spark.createDataFrame(table, schema=from_arrow_schema(table.schema))
