"""Spark rows-v1 speed: ours against the reference's aggregation on the same Parquet-backed frame.

Run: ``python bench/spark_hash_bench.py [--rows N] [--repeats K]`` (starts a local[2] session).
Needs the reference ``ubunye-engine==0.8.0`` (the dev extra) as the yardstick.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SEED = 20260601


def bench_table(rows: int, seed: int = SEED) -> Any:
    """The issue-6 table as Arrow: int64, float64 with NaNs, int32, string, bool, UTC ts, date."""
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(seed)
    floats = rng.normal(0.0, 1000.0, rows)
    floats[rng.random(rows) < 0.05] = np.nan
    words = np.array(["alpha", "beta", "gamma", "delta", "Mokoena, Thabo", "naïve", "ünïcödé"])
    text = [
        f"{word}-{number}"
        for word, number in zip(rng.choice(words, rows), range(rows), strict=True)
    ]
    micros = rng.integers(0, 2_000_000_000_000_000, rows)
    return pa.table(
        {
            "id": pa.array(np.arange(rows, dtype=np.int64)),
            "amount": pa.array(floats, pa.float64()),
            "count": pa.array(rng.integers(-(2**31), 2**31 - 1, rows, dtype=np.int32)),
            "name": pa.array(text, pa.string()),
            "flag": pa.array(rng.random(rows) < 0.5),
            "seen": pa.array(micros, pa.timestamp("us", tz="UTC")),
            "day": pa.array(rng.integers(-10_000, 30_000, rows, dtype=np.int32), pa.date32()),
        }
    )


def _spark_cpu_seconds() -> float | None:
    """CPU seconds (user + system) used so far by the JVMs this process started and their Python
    workers (Linux only).

    Wall time is at the mercy of whatever else runs on the machine; CPU time much less so.
    """
    import os

    ticks = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    children: dict[int, list[int]] = {}
    stats: dict[int, list[str]] = {}
    try:
        entries = [entry for entry in os.listdir("/proc") if entry.isdigit()]
    except OSError:
        return None
    for entry in entries:
        try:
            with open(f"/proc/{entry}/stat") as handle:
                text = handle.read()
        except OSError:  # the process ended while we looked
            continue
        fields = text[text.rindex(")") + 2 :].split()
        pid = int(entry)
        stats[pid] = [text[text.index("(") + 1 : text.rindex(")")], *fields]
        children.setdefault(int(fields[1]), []).append(pid)
    total, todo = 0, list(children.get(os.getpid(), []))
    while todo:
        pid = todo.pop()
        todo.extend(children.get(pid, []))
        if pid not in stats:
            continue
        name, *fields = stats[pid]
        if name == "java" or name.startswith("python"):
            total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / ticks if total else None


def _timed(hash_frame: Any, df: Any) -> tuple[float, float | None, Any]:
    cpu_before = _spark_cpu_seconds()
    start = time.perf_counter()
    result = hash_frame(df)
    elapsed = time.perf_counter() - start
    cpu_after = _spark_cpu_seconds()
    cpu = None if cpu_before is None or cpu_after is None else cpu_after - cpu_before
    return elapsed, cpu, result


def run_spark_bench(spark: Any, rows: int = 1_000_000, repeats: int = 3) -> dict:
    """Time our ``fingerprint_spark`` and the reference's on one Parquet-backed DataFrame.

    The two alternate (order swapped each round) after one warm-up each; returns wall and JVM
    CPU seconds, their medians, the ratios reference/ours, and whether the digests agree (with
    each other and with our Arrow path on the same Parquet file).
    """
    import pyarrow.parquet as pq
    from ubunye.adapters.spark.content_hash import fingerprint_spark as reference_fingerprint

    from ubunye_rows import fingerprint
    from ubunye_rows.hashing.spark import SPARK_ENGINE_ENV, fingerprint_spark, spark_line_engine

    def ours_to_json(df: Any) -> Any:
        """Ours with every line written by to_json on the JVM (the fallback engine)."""
        before = os.environ.get(SPARK_ENGINE_ENV)
        os.environ[SPARK_ENGINE_ENV] = "jvm"
        try:
            return fingerprint_spark(df)
        finally:
            if before is None:
                del os.environ[SPARK_ENGINE_ENV]
            else:
                os.environ[SPARK_ENGINE_ENV] = before

    contenders = {
        "ours": fingerprint_spark,
        "ours_to_json": ours_to_json,
        "reference": reference_fingerprint,
        "transfer": rows_to_python_workers,
    }
    with tempfile.TemporaryDirectory(prefix="ubunye-spark-bench-") as folder:
        path = Path(folder) / "table.parquet"
        pq.write_table(bench_table(rows), path)
        df = spark.read.parquet(str(path))
        arrow_digest = fingerprint(pq.read_table(path))
        digests = {name: hash_frame(df) for name, hash_frame in contenders.items()}  # warm-up
        seconds: dict[str, list[float]] = {name: [] for name in contenders}
        cpu_seconds: dict[str, list[float]] = {name: [] for name in contenders}
        for round_number in range(repeats):
            order = list(contenders) if round_number % 2 == 0 else list(reversed(contenders))
            for name in order:
                elapsed, cpu, result = _timed(contenders[name], df)
                seconds[name].append(elapsed)
                if cpu is not None:
                    cpu_seconds[name].append(cpu)
                if result != digests[name]:
                    raise RuntimeError(f"{name} gave two different digests for one frame")
    ours, reference = digests["ours"], digests["reference"]
    counted = digests.pop("transfer")  # a row count, not a digest
    if counted != reference.row_count:
        raise RuntimeError(f"the workers counted {counted} rows, not {reference.row_count}")
    median_to_json = statistics.median(seconds["ours_to_json"])
    median_ours = statistics.median(seconds["ours"])
    median_reference = statistics.median(seconds["reference"])
    cpu_ratio = (
        statistics.median(cpu_seconds["reference"]) / statistics.median(cpu_seconds["ours"])
        if len(cpu_seconds["ours"]) == repeats and len(cpu_seconds["reference"]) == repeats
        else None
    )
    return {
        "rows": rows,
        "repeats": repeats,
        "seconds_ours": seconds["ours"],
        "seconds_reference": seconds["reference"],
        "median_ours": median_ours,
        "median_reference": median_reference,
        "ratio_reference_over_ours": median_reference / median_ours,
        "spark_cpu_seconds_ours": cpu_seconds["ours"],
        "spark_cpu_seconds_reference": cpu_seconds["reference"],
        "spark_cpu_ratio_reference_over_ours": cpu_ratio,
        "engine": spark_line_engine(),
        "median_ours_to_json": median_to_json,
        "ratio_reference_over_ours_to_json": median_reference / median_to_json,
        "median_transfer": statistics.median(seconds["transfer"]),
        "seconds_transfer": seconds["transfer"],
        "digests_equal": all(
            (d.data_hash, d.schema_hash, d.row_count)
            == (reference.data_hash, reference.schema_hash, reference.row_count)
            for d in digests.values()
        ),
        "arrow_digest_equal": (arrow_digest.data_hash, arrow_digest.row_count)
        == (ours.data_hash, ours.row_count),
        "data_hash": ours.data_hash,
        "java": java_version(spark),
        "workers_kernel": workers_kernel(spark),
    }


def _count_rows(batches: Any) -> Any:
    """In a Python worker: the partition's rows, counted (nothing hashed)."""
    import pyarrow as pa

    yield pa.RecordBatch.from_pydict({"rows": [sum(batch.num_rows for batch in batches)]})


def rows_to_python_workers(df: Any) -> int:
    """What any hash in Spark's Python workers pays before it hashes: the same frame scanned,
    every column moved to the workers as Arrow (``mapInArrow``, as ours does) and counted there;
    the row count."""
    from pyspark.sql import functions as F

    positional = df.toDF(*[f"_c{index}" for index in range(len(df.columns))])
    counted = positional.mapInArrow(_count_rows, "rows long")
    return int(counted.agg(F.sum("rows")).collect()[0][0])


def _worker_kernel(batches: Any) -> Any:
    """In a Python worker: whether the native kernel imports there, and its SHA extensions."""
    import pyarrow as pa

    from ubunye_rows.hashing import native

    module = native.kernel()
    for _ in batches:
        pass
    state = "missing" if module is None else f"yes (SHA extensions {module.sha_extensions()})"
    yield pa.RecordBatch.from_pydict({"kernel": [state]})


def workers_kernel(spark: Any) -> str:
    """What the Python workers hash with: the kernel (and SHA-NI) or the Python path."""
    found = spark.range(2, numPartitions=2).mapInArrow(_worker_kernel, "kernel string").collect()
    return ", ".join(sorted({row["kernel"] for row in found}))


def java_version(spark: Any) -> str:
    """The Java version the executors run (Spark's own Double.toString depends on it)."""
    from pyspark.sql import functions as F

    prop = F.reflect(F.lit("java.lang.System"), F.lit("getProperty"), F.lit("java.version"))
    return str(spark.range(1).select(prop).collect()[0][0])


def _local_session() -> Any:
    """The tests' local session (``tests/local_spark.py``), under this bench's name."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from local_spark import build_local_spark_session

    return build_local_spark_session("ubunye-spark-hash-bench")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from hash_bench import cpu_description

    spark = _local_session()
    try:
        result = run_spark_bench(spark, rows=args.rows, repeats=args.repeats)
    finally:
        spark.stop()

    def listed(values: list[float]) -> str:
        return ", ".join(f"{value:.2f}" for value in values)

    print(
        f"{cpu_description()}; rows: {result['rows']:,}  repeats: {result['repeats']}  "
        f"(Spark local[2], Java {result['java']}, engine {result['engine']}, kernel in the "
        f"Python workers: {result['workers_kernel']})"
    )
    print(f"ours      median {result['median_ours']:.3f} s  [{listed(result['seconds_ours'])}]")
    print(
        f"ours, to_json lines (UBUNYE_SPARK_ENGINE=jvm) median "
        f"{result['median_ours_to_json']:.3f} s: ratio reference/it "
        f"{result['ratio_reference_over_ours_to_json']:.2f}"
    )
    print(
        f"reference median {result['median_reference']:.3f} s"
        f"  [{listed(result['seconds_reference'])}]"
    )
    print(f"ratio reference/ours (wall): {result['ratio_reference_over_ours']:.2f}  (goal >= 4x)")
    transfer = result["median_transfer"]
    print(
        f"Spark alone, the rows moved to the Python workers and counted, not hashed: median "
        f"{transfer:.3f} s  [{listed(result['seconds_transfer'])}]: the reference over it "
        f"{result['median_reference'] / transfer:.2f}x; ours spends "
        f"{result['median_ours'] - transfer:.3f} s beyond it"
    )
    if result["spark_cpu_ratio_reference_over_ours"] is not None:
        print(
            f"CPU seconds (JVM and Python workers) ours "
            f"[{listed(result['spark_cpu_seconds_ours'])}]"
            f"  reference [{listed(result['spark_cpu_seconds_reference'])}]"
        )
        print(
            f"ratio reference/ours (Spark CPU): {result['spark_cpu_ratio_reference_over_ours']:.2f}"
        )
    print(f"digests equal: {result['digests_equal']}  ({result['data_hash']})")
    print(f"our Arrow digest of the same Parquet equal: {result['arrow_digest_equal']}")
    if not result["digests_equal"]:
        raise SystemExit("digests differ")


if __name__ == "__main__":
    main()
