"""A Spark driver program for the standalone cluster (tests/spark_cluster.py), run in a process of
its own: ``python tests/spark_cluster_driver.py MASTER_URL TABLES_FOLDER PARTITIONS OUT_JSON``.

It hashes every Arrow IPC file in TABLES_FOLDER as a Spark DataFrame spread over PARTITIONS
partitions, with each partition's lines written and hashed by ``ubunye_rows`` in the executors'
Python workers (``UBUNYE_SPARK_ENGINE=arrow``: no fallback to the JVM), and asks the executors
what their Python holds. It writes both to OUT_JSON; the test compares. The executors' Python is
the environment's ``PYSPARK_PYTHON`` (``cluster_driver_environment``).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

#: Modules an executor is asked about: what it must hold, and what it must not.
PROBED_MODULES = ("ubunye_rows", "ubunye_rows._kernel", "pyarrow", "pandas", "dagster")
PROBED_MODULES += ("ubunye_dagster", "ubunye_core", "ubunye")


def executor_report(batches: Iterator[Any]) -> Iterator[Any]:
    """In a Python worker: its interpreter, its working folder (the executor's own, under its
    worker's work folder) and where each probed module would be imported from (null: nowhere)."""
    import importlib.util

    import pyarrow as pa

    for _ in batches:
        pass
    origins = {}
    for name in PROBED_MODULES:
        try:
            spec = importlib.util.find_spec(name)
        except ModuleNotFoundError:  # a parent package is missing
            spec = None
        origins[name] = None if spec is None else str(spec.origin)
    report = {"python": sys.executable, "cwd": os.getcwd(), "modules": origins}
    yield pa.RecordBatch.from_pydict({"report": [json.dumps(report)]})


def executors_report(spark: Any, partitions: int) -> list[dict]:
    """What the Python workers of ``partitions`` tasks report (one report a task)."""
    tasks = spark.range(partitions, numPartitions=partitions)
    rows = tasks.mapInArrow(executor_report, "report string").collect()
    return [json.loads(row["report"]) for row in rows]


def cluster_digests(spark: Any, tables: Path, partitions: int) -> dict[str, Any]:
    """Per table file: (schema hash, data hash, row count) as hashed on the cluster, or the
    error the hash raised."""
    import pyarrow as pa
    from local_spark import spark_frame

    from ubunye_rows.hashing.spark import fingerprint_spark

    found: dict[str, Any] = {}
    for path in sorted(tables.glob("*.arrow")):
        with pa.ipc.open_file(path) as reader:
            table = reader.read_all()
        df = spark_frame(spark, table).repartition(partitions)
        try:
            fp = fingerprint_spark(df)
        except Exception as exc:  # reported, so the test names the table that failed
            found[path.stem] = {"error": f"{type(exc).__name__}: {exc}"[:2000]}
            continue
        found[path.stem] = {
            "digest": [fp.schema_hash, fp.data_hash, fp.row_count],
            "partitions": df.rdd.getNumPartitions(),
        }
    return found


def main() -> None:
    master_url, tables, partitions, out = sys.argv[1:5]
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from local_spark import build_spark_session
    from spark_cluster import cluster_session_settings

    from ubunye_rows.hashing.spark import SPARK_ENGINE_ENV

    os.environ[SPARK_ENGINE_ENV] = "arrow"
    spark = build_spark_session(master_url, "ubunye-cluster-driver", cluster_session_settings())
    try:
        result = {
            "session_time_zone": spark.conf.get("spark.sql.session.timeZone"),
            "digests": cluster_digests(spark, Path(tables), int(partitions)),
            "executors": executors_report(spark, 4),
        }
    finally:
        spark.stop()
    Path(out).write_text(json.dumps(result, indent=1), "utf-8")


if __name__ == "__main__":
    main()
