"""What keeping the sketch costs: rows-v1 with per-bucket sums against plain lane sums.

Run: ``python bench/sketch_bench.py [--rows N] [--repeats K] [--spark]``. Both variants hash the
same tables in one process, alternating; medians and the ratio (with sketch / without) are
printed. "Without" swaps the per-bucket sums for the two plain uint64 sums rows-v1 needs, so the
difference is exactly the sketch's cost. With ``--spark`` the grouped aggregation is timed
against the single ungrouped aggregation on ``local[2]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hash_bench import as_pandas, flat_table, nested_table

from ubunye_rows import fingerprint
from ubunye_rows.hashing import sketch as sketch_module


def machine() -> str:
    """CPU model, SHA-NI and cores, for the figures' heading."""
    import os

    model, sha_ni = "unknown CPU", False
    try:
        text = Path("/proc/cpuinfo").read_text()
        model = next(
            line.split(":", 1)[1].strip() for line in text.splitlines() if "model name" in line
        )
        sha_ni = " sha_ni" in text
    except (OSError, StopIteration):
        pass
    python = sys.version.split()[0]
    return f"{model}, SHA-NI {'yes' if sha_ni else 'no'}, {os.cpu_count()} cores, python {python}"


def _plain_sums(totals: Any, digests: Any, count: int) -> None:
    """rows-v1's own work only: the two lane sums, kept in bucket 0."""
    import numpy as np

    if count == 0:
        return
    words = digests.view(">u8").reshape(count, 4)
    sums = [count, *(words[:, lane].astype(np.uint64).sum(dtype=np.uint64) for lane in (0, 1))]
    totals[:, :1] += np.array(sums, dtype=np.uint64).reshape(3, 1)  # arrays wrap silently


@contextmanager
def without_sketch() -> Any:
    """Hash with plain lane sums instead of per-bucket sums (same digest, no usable sketch)."""
    kept = sketch_module.add_digest_buckets
    sketch_module.add_digest_buckets = _plain_sums
    try:
        yield
    finally:
        sketch_module.add_digest_buckets = kept


def jvm_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds the process ``pid`` has used (Linux ``/proc``)."""
    import os

    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timed(work: Callable[..., Any], *args: Any) -> tuple[float, float, Any]:
    """Wall seconds, CPU seconds of the whole process (all threads) and the result."""
    started, cpu = time.perf_counter(), time.process_time()
    result = work(*args)
    return time.perf_counter() - started, time.process_time() - cpu, result


def compare(label: str, frame: Any, repeats: int) -> None:
    """Alternate with and without the sketch; print medians, ratio and digest agreement."""
    walls: dict[bool, list[float]] = {True: [], False: []}
    cpus: dict[bool, list[float]] = {True: [], False: []}
    digests = set()
    for _ in range(repeats):
        for keep in (True, False):
            if keep:
                wall, cpu, fp = timed(lambda: fingerprint(frame))
            else:
                with without_sketch():
                    wall, cpu, fp = timed(lambda: fingerprint(frame))
            walls[keep].append(wall)
            cpus[keep].append(cpu)
            digests.add(fp.data_hash)
    print_ratios(label, walls, ("CPU", cpus), f"digests equal: {len(digests) == 1}")


def print_ratios(
    label: str,
    walls: dict[bool, list[float]],
    cpu: tuple[str, dict[bool, list[float]]],
    agreement: str,
) -> None:
    """One line: median wall and CPU seconds with the sketch and without, and their ratios."""
    cpu_name, cpus = cpu
    wall_with, wall_without = statistics.median(walls[True]), statistics.median(walls[False])
    cpu_with, cpu_without = statistics.median(cpus[True]), statistics.median(cpus[False])
    print(
        f"{label:<15} wall {wall_with:6.3f} s vs {wall_without:6.3f} s "
        f"({wall_with / wall_without:5.3f}x)"
        f"   {cpu_name} {cpu_with:6.3f} s vs {cpu_without:6.3f} s ({cpu_with / cpu_without:5.3f}x)"
        f"   {agreement}"
    )


def spark_compare(rows: int, repeats: int) -> None:
    """The grouped (sketch) Spark job against one ungrouped aggregation of the same lanes, both
    with the lines written by ``to_json`` on the JVM: wall time and the JVM's CPU time (steadier
    on a shared machine)."""
    import os

    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    from ubunye_rows.hashing import spark as spark_hash

    session = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    os.environ["UBUNYE_SPARK_ENGINE"] = "jvm"  # the JVM path's own cost, not the workers'
    df = session.createDataFrame(flat_table(rows)).cache()
    df.count()

    def ungrouped(df: Any) -> tuple[int, int]:
        digests = spark_hash.spark_canonical_lines(df).select(F.sha2("line", 256).alias("d"))
        lanes = digests.select(
            spark_hash._signed_lane(F.substring("d", 1, 16)).alias("a"),
            spark_hash._signed_lane(F.substring("d", 17, 16)).alias("b"),
        )
        sums = [
            F.sum(spark_hash._lane_piece(F.col(lane), shift, bits))
            for lane in ("a", "b")
            for shift, bits in zip(spark_hash.PIECE_SHIFTS, spark_hash.PIECE_BITS, strict=True)
        ]
        row = lanes.agg(F.count(F.lit(1)), *sums).collect()[0]
        return spark_hash.lane_sums_from_piece_sums(list(row[1:]))

    jvm = session.sparkContext._gateway.proc.pid  # the JVM pyspark started: its CPU is the job's
    walls: dict[bool, list[float]] = {True: [], False: []}
    cpus: dict[bool, list[float]] = {True: [], False: []}
    sums: dict[bool, set] = {True: set(), False: set()}
    spark_hash.spark_sketch(df), ungrouped(df)  # warm-up: the JVM compiles both plans' code
    for _ in range(repeats):
        for grouped in (True, False):
            before = jvm_cpu_seconds(jvm)
            wall, _, result = timed(spark_hash.spark_sketch if grouped else ungrouped, df)
            walls[grouped].append(wall)
            cpus[grouped].append(jvm_cpu_seconds(jvm) - before)
            sums[grouped].add(result.lane_sums() if grouped else result)
    agreement = f"sums equal: {len(sums[True] | sums[False]) == 1}"
    print_ratios("spark local[2]", walls, ("JVM CPU", cpus), agreement)
    session.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--spark", action="store_true", help="also the Spark job")
    parser.add_argument("--only-spark", action="store_true", help="only the Spark job")
    args = parser.parse_args(argv)
    print(machine())
    print(
        f"rows {args.rows:,} (nested {args.rows // 5:,}), repeats {args.repeats}, medians; "
        "with sketch vs without"
    )
    if not args.only_spark:
        flat = flat_table(args.rows)
        nested = nested_table(args.rows // 5)
        compare("flat, Arrow", flat, args.repeats)
        compare("flat, pandas", as_pandas(flat), args.repeats)
        compare("nested, Arrow", nested, args.repeats)
    if args.spark or args.only_spark:
        spark_compare(args.rows, args.repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
