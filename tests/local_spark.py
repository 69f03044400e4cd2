"""The local SparkSession of the tests and the Spark benches, and small helpers around it.

pyspark is imported inside the functions, so importing this module never starts or needs Spark.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

#: A zone with daylight saving and far from UTC, so a hash that leaks the session zone shows.
SPARK_SESSION_TIME_ZONE = "America/Sao_Paulo"


def build_local_spark_session(app_name: str, settings: Mapping[str, str] | None = None) -> Any:
    """A local[2] SparkSession: UI and progress bar off, session zone America/Sao_Paulo, 2g of
    driver memory, only errors logged; ``settings`` are set on top."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    local = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": SPARK_SESSION_TIME_ZONE,
        "spark.driver.memory": "2g",
        **(settings or {}),
    }
    return build_spark_session("local[2]", app_name, local)


def build_spark_session(master: str, app_name: str, settings: Mapping[str, str]) -> Any:
    """A SparkSession of ``master`` (``local[N]`` or a cluster's URL) with ``settings``, only
    errors logged."""
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in settings.items():
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


def free_loopback_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def local_connect_server(
    log_path: Path, settings: Mapping[str, str] | None = None, start_timeout: float = 180.0
) -> Iterator[str]:
    """A Spark Connect server of the pip pyspark (its spark-connect jar) on 127.0.0.1, local[2],
    with the settings of ``build_local_spark_session`` plus ``settings``; yields its ``sc://`` URL
    and stops it (and only it) on exit."""
    import signal
    import socket
    import subprocess

    from pyspark.find_spark_home import _find_spark_home

    port = free_loopback_port()
    conf = {
        "spark.connect.grpc.binding.address": "127.0.0.1",
        "spark.connect.grpc.binding.port": str(port),
        "spark.ui.enabled": "false",
        "spark.sql.session.timeZone": SPARK_SESSION_TIME_ZONE,
        "spark.driver.memory": "2g",
        **(settings or {}),
    }
    submit = Path(_find_spark_home()) / "bin" / "spark-submit"
    command = [str(submit), "--master", "local[2]", "--name", "ubunye-connect-tests"]
    for key, value in conf.items():
        command += ["--conf", f"{key}={value}"]
    command += ["--class", "org.apache.spark.sql.connect.service.SparkConnectServer"]
    command.append("spark-internal")
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    with open(log_path, "wb") as log:
        server = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
    try:
        deadline = time.monotonic() + start_timeout
        while True:
            if server.poll() is not None:
                tail = log_path.read_text(errors="replace")[-3000:]
                raise RuntimeError(f"Spark Connect server exited ({server.returncode}):\n{tail}")
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError(f"Spark Connect server not listening after {start_timeout}s")
            time.sleep(0.5)
        yield f"sc://127.0.0.1:{port}"
    finally:
        # The server runs in its own process group: the JVM and the Python workers it started.
        with suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()


@contextmanager
def spark_thrift_server(spark: Any, schema: str, location: Path) -> Iterator[int]:
    """A Spark Thrift server (HiveServer2's protocol, the pip pyspark's thriftserver jar) on
    127.0.0.1 inside the classic ``spark``'s own driver, so its clients' tables are ``spark``'s:
    ``schema`` is created first at ``location``, where their files go. Yields its port; on exit
    stops the server and drops ``schema`` with its tables (the session goes on)."""
    port = free_loopback_port()
    spark.conf.set("hive.server2.thrift.port", str(port))
    spark.conf.set("hive.server2.thrift.bind.host", "127.0.0.1")
    # No per-query log files under the machine's /tmp.
    spark.conf.set("hive.server2.logging.operation.enabled", "false")
    spark.sql(f"create schema {schema} location '{location.as_uri()}'")
    jvm = spark.sparkContext._jvm
    # The server's own (in-memory) Derby logs beside the schema, not in the working folder.
    jvm.java.lang.System.setProperty("derby.stream.error.file", str(location.parent / "derby.log"))
    thriftserver = jvm.org.apache.spark.sql.hive.thriftserver.HiveThriftServer2
    server = thriftserver.startWithContext(spark._jsparkSession.sqlContext())
    try:
        yield port
    finally:
        server.stop()
        spark.sql(f"drop schema if exists {schema} cascade")
