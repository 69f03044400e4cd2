"""rows-v1 on a Spark standalone cluster: ours against the reference on the same two-worker cluster.

Run: ``python bench/spark_cluster_bench.py [--rows N] [--repeats K]``. Starts a master and two
workers on 127.0.0.1 (tests/spark_cluster.py), the executors on a venv holding only ubunye-rows,
pyarrow, pandas and numpy (tests/external_python.py, built on first use); this process is the
driver. Needs the reference ``ubunye-engine==0.8.0`` (the dev extra) as the yardstick.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path[:0] = [str(BENCH), str(BENCH.parent / "tests")]

import spark_hash_bench  # noqa: E402
from spark_hash_bench import (  # noqa: E402
    _timed,
    bench_table,
    java_version,
    rows_to_python_workers,
    workers_kernel,
)
from store_bench import machine  # noqa: E402

#: Row groups of the bench's Parquet file, and the read's partitions (Spark splits a file at its
#: row groups): two tasks for each worker's one core.
ROW_GROUPS = 8
READ_PARTITIONS = 4


def load() -> str:
    """The load averages over 1, 5 and 15 minutes, and the time."""
    one, five, fifteen = os.getloadavg()
    return (
        f"load average {one:.2f} {five:.2f} {fifteen:.2f}, {datetime.now(timezone.utc):%H:%M} UTC"
    )


def alternating(names: list[str], repeats: int) -> list[str]:
    """``repeats`` rounds of ``names``, every other round in reverse, one after another."""
    return [name for r in range(repeats) for name in (names if r % 2 == 0 else names[::-1])]


def timed_rounds(contenders: dict[str, Any], df: Any, repeats: int) -> dict[str, Any]:
    """One warm-up each, then ``repeats`` rounds alternating the order; per contender the result
    and its wall and CPU seconds (the JVMs and Python workers this process started)."""
    results = {name: hash_frame(df) for name, hash_frame in contenders.items()}
    wall: dict[str, list[float]] = {name: [] for name in contenders}
    cpu: dict[str, list[float]] = {name: [] for name in contenders}
    for name in alternating(list(contenders), repeats):
        elapsed, seconds, result = _timed(contenders[name], df)
        if result != results[name]:
            raise RuntimeError(f"{name} gave two different results for one frame")
        wall[name].append(elapsed)
        if seconds is not None:
            cpu[name].append(seconds)
    return {"results": results, "wall": wall, "cpu": cpu}


def run_cluster_bench(spark: Any, rows: int, repeats: int) -> dict[str, Any]:
    """Ours, the reference, and Spark alone moving the rows to the Python workers, on one
    Parquet-backed frame on the cluster ``spark`` drives; medians and whether the digests agree
    (with each other and with our Arrow path in this process)."""
    import pyarrow.parquet as pq
    from ubunye.adapters.spark.content_hash import fingerprint_spark as reference_fingerprint

    from ubunye_rows import fingerprint
    from ubunye_rows.hashing.spark import fingerprint_spark

    contenders = {
        "ours": fingerprint_spark,
        "reference": reference_fingerprint,
        "transfer": rows_to_python_workers,
    }
    with tempfile.TemporaryDirectory(prefix="ubunye-spark-cluster-bench-") as folder:
        path = Path(folder) / "table.parquet"
        table = bench_table(rows)
        pq.write_table(table, path, row_group_size=-(-rows // ROW_GROUPS))
        spark.conf.set("spark.sql.files.minPartitionNum", str(READ_PARTITIONS))
        df = spark.read.parquet(str(path))
        timings = timed_rounds(contenders, df, repeats)
        partitions = df.rdd.getNumPartitions()
    ours, reference = timings["results"]["ours"], timings["results"]["reference"]
    arrow = fingerprint(table)
    median = {name: statistics.median(values) for name, values in timings["wall"].items()}
    cpu = {name: statistics.median(v) for name, v in timings["cpu"].items() if len(v) == repeats}
    return {
        "partitions": partitions,
        "wall": timings["wall"],
        "median": median,
        "cpu_median": cpu,
        "counted": timings["results"]["transfer"],
        "digests_equal": (ours.schema_hash, ours.data_hash, ours.row_count)
        == (reference.schema_hash, reference.data_hash, reference.row_count)
        == (arrow.schema_hash, arrow.data_hash, arrow.row_count),
        "data_hash": ours.data_hash,
    }


def report(result: dict[str, Any]) -> None:
    """Print the medians and the ratios of one run."""
    median, cpu = result["median"], result["cpu_median"]
    for name in ("ours", "reference", "transfer"):
        rounds = ", ".join(f"{value:.2f}" for value in result["wall"][name])
        spent = f"  CPU {cpu[name]:.2f} s" if name in cpu else ""
        print(f"{name:<9} median {median[name]:.3f} s{spent}  [{rounds}]")
    print(f"ratio reference/ours (wall): {median['reference'] / median['ours']:.2f}x")
    if "ours" in cpu and "reference" in cpu:
        print(f"ratio reference/ours (CPU of the JVMs and Python workers): "
              f"{cpu['reference'] / cpu['ours']:.2f}x")  # fmt: skip
    print(
        f"transfer (the rows moved to the Python workers and counted, not hashed; "
        f"{result['counted']:,} rows): the reference over it "
        f"{median['reference'] / median['transfer']:.2f}x, ours "
        f"{median['ours'] / median['transfer']:.2f}x"
    )
    print(f"digests equal (ours, reference, our Arrow path): {result['digests_equal']}"
          f"  ({result['data_hash']})")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    from external_python import executor_python
    from local_spark import build_spark_session
    from pyspark import cloudpickle
    from spark_cluster import cluster_driver_environment, spark_standalone_cluster

    # The executors' Python holds no bench module: its functions travel by value.
    cloudpickle.register_pickle_by_value(spark_hash_bench)
    print(machine())
    print(f"at the start: {load()}")
    with (
        tempfile.TemporaryDirectory(prefix="ubunye-spark-cluster-") as folder,
        spark_standalone_cluster(Path(folder), executor_python()) as cluster,
    ):
        os.environ.update(cluster_driver_environment(cluster.executor_python))
        spark = build_spark_session(
            cluster.master_url, "ubunye-cluster-bench", cluster.session_settings()
        )
        try:
            print(
                f"cluster {cluster.master_url}: {len(cluster.worker_folders())} workers, Java "
                f"{java_version(spark)}, executors' Python {cluster.executor_python}, kernel "
                f"there: {workers_kernel(spark)}; rows {args.rows:,}, repeats {args.repeats}"
            )
            result = run_cluster_bench(spark, args.rows, args.repeats)
        finally:
            spark.stop()
    print(f"frame: {result['partitions']} partitions (a Parquet file of {ROW_GROUPS} row groups)")
    report(result)
    print(f"at the end: {load()}")
    if not result["digests_equal"]:
        raise SystemExit("digests differ")


if __name__ == "__main__":
    main()
