"""A Spark driver program for the standalone cluster (tests/spark_cluster.py), run in a process of
its own: ``python tests/spark_cluster_driver.py MASTER_URL FOLDER PARTITIONS``.

For every Arrow IPC file in FOLDER/tables it hashes the table as a Spark DataFrame spread over
PARTITIONS partitions, with each partition's lines written and hashed by ``ubunye_rows`` in the
executors' Python workers (``UBUNYE_SPARK_ENGINE=arrow``: no fallback to the JVM), and the
reference's Spark hash of the same frame (on the JVM). It materialises one Spark asset of the
``mixed`` table through UbunyeIOManager (data and records under FOLDER/usecase), and asks the
executors what their Python holds. It writes all of it to FOLDER/driver.json; the test compares.
The executors' Python is the environment's ``PYSPARK_PYTHON`` (``SparkCluster.driver_environment``).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

#: Modules an executor is asked about: what it must hold, and what it must not.
PROBED_MODULES = ("ubunye_rows", "ubunye_rows._kernel", "pyarrow", "pandas", "numpy", "dagster")
PROBED_MODULES += ("dagster_pipes", "ubunye_dagster", "ubunye_core", "ubunye", "pyspark")
#: The table the Spark asset returns.
ASSET_TABLE = "mixed"


def executor_report(batches: Iterator[Any]) -> Iterator[Any]:
    """In a Python worker: its interpreter, its working folder (the executor's own, under its
    worker's work folder), where each probed module would be imported from (null: nowhere), and
    every distribution installed beside it with the distributions it requires."""
    import importlib.metadata
    import importlib.util
    import re

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
    installed = {}
    for distribution in importlib.metadata.distributions():
        required = [
            re.split(r"[\s;<>=!~\[(]", requirement, maxsplit=1)[0]
            for requirement in distribution.requires or []
            if "extra ==" not in requirement
        ]
        installed[distribution.metadata["Name"]] = required
    report = {
        "python": sys.executable,
        "cwd": os.getcwd(),
        "modules": origins,
        "distributions": installed,
    }
    yield pa.RecordBatch.from_pydict({"report": [json.dumps(report)]})


def executors_report(spark: Any, partitions: int) -> list[dict]:
    """What the Python workers of ``partitions`` tasks report (one report a task)."""
    tasks = spark.range(partitions, numPartitions=partitions)
    rows = tasks.mapInArrow(executor_report, "report string").collect()
    return [json.loads(row["report"]) for row in rows]


def read_tables(folder: Path) -> dict[str, Any]:
    """Every Arrow IPC file in ``folder``, by stem."""
    import pyarrow as pa

    found = {}
    for path in sorted(folder.glob("*.arrow")):
        with pa.ipc.open_file(path) as reader:
            found[path.stem] = reader.read_all()
    return found


def digest_of(fp: Any) -> list:
    """(schema hash, data hash, row count) of a fingerprint, ours or the reference's."""
    return [fp.schema_hash, fp.data_hash, fp.row_count]


def cluster_digests(spark: Any, tables: dict[str, Any], partitions: int) -> dict[str, Any]:
    """Per table: our digest and the reference's as hashed on the cluster, or the error a hash
    raised."""
    from local_spark import spark_frame
    from ubunye.adapters.spark.content_hash import fingerprint_spark as reference_spark

    from ubunye_rows.hashing.spark import fingerprint_spark

    found: dict[str, Any] = {}
    for name, table in tables.items():
        df = spark_frame(spark, table).repartition(partitions)
        try:
            found[name] = {
                "digest": digest_of(fingerprint_spark(df)),
                "reference": digest_of(reference_spark(df)),
                "partitions": df.rdd.getNumPartitions(),
            }
        except Exception as exc:  # reported, so the test names the table that failed
            found[name] = {"error": f"{type(exc).__name__}: {exc}"[:2000]}
    return found


def materialise_asset(
    spark_config: dict[str, str], table: Any, partitions: int, usecase: Path
) -> dict[str, Any]:
    """Materialise one Spark asset of ``table`` through UbunyeIOManager (a dagster-pyspark
    ``PySparkResource`` reaching the cluster); what its run record says of its output."""
    import dagster as dg
    from dagster_pyspark import PySparkResource
    from local_spark import spark_frame

    from ubunye_core.store import LineageStore
    from ubunye_dagster import UbunyeIOManager, UbunyeResource

    # The resource by key rather than by annotation: a local name cannot be one (the module's
    # annotations are strings).
    @dg.asset(required_resource_keys={"pyspark"})
    def cluster_orders(context):
        session = context.resources.pyspark.spark_session
        return spark_frame(session, table).repartition(partitions)

    manager = UbunyeIOManager(
        base_path=str(usecase / "data"), ubunye=UbunyeResource(usecase_dir=str(usecase))
    )
    resources = {"io_manager": manager, "pyspark": PySparkResource(spark_config=spark_config)}
    result = dg.materialize([cluster_orders], resources=resources)
    record = LineageStore.for_usecase_dir(usecase).load(
        "dagster/default/cluster_orders", result.run_id
    )
    [output] = record.outputs
    written = usecase / "data" / "cluster_orders.parquet"
    return {
        "success": result.success,
        "backend": record.backend,
        "digest": [output.schema_hash, output.data_hash, output.row_count],
        "hash_basis": output.hash_basis,
        "parts": len(list(written.glob("part-*.parquet"))),
    }


def main() -> None:
    master_url, folder, partitions = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
    from local_spark import build_spark_session
    from spark_cluster import cluster_session_settings

    from ubunye_rows.hashing.spark import SPARK_ENGINE_ENV

    os.environ[SPARK_ENGINE_ENV] = "arrow"
    settings = {"spark.master": master_url, **cluster_session_settings()}
    spark = build_spark_session(master_url, "ubunye-cluster-driver", cluster_session_settings())
    tables = read_tables(folder / "tables")
    try:
        result = {
            "session_time_zone": spark.conf.get("spark.sql.session.timeZone"),
            "digests": cluster_digests(spark, tables, partitions),
            "asset": materialise_asset(
                settings, tables[ASSET_TABLE], partitions, folder / "usecase"
            ),
            "executors": executors_report(spark, 4),
        }
    finally:
        spark.stop()
    (folder / "driver.json").write_text(json.dumps(result, indent=1), "utf-8")


if __name__ == "__main__":
    main()
