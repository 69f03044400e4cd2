"""rows-v1 speed on Arrow and pandas: ours against the reference (ubunye-engine 0.8.0).

Run: ``python bench/hash_bench.py [--rows N] [--repeats K] [--quick] [--spark]``.
Both tools hash the same frames in one process, alternating; medians, the ratio
reference/ours and digest agreement are printed, then the peak memory of hashing a
10,000,000-row table (in a fresh process) relative to the table's own Arrow size.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

FLAT_SEED = 20261129
NESTED_SEED = 20261130
HERE = Path(__file__).resolve().parent


def flat_table(rows: int, seed: int = FLAT_SEED) -> Any:
    """The issue-6 table: int64, float64 with NaNs, int32, string, bool, UTC timestamp, date."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    rng = np.random.default_rng(seed)
    amount = np.round(rng.lognormal(4.0, 2.0, rows) * np.where(rng.random(rows) < 0.3, -1, 1), 2)
    amount[rng.random(rows) < 0.05] = np.nan
    words = np.array(
        ["Mokoena, Thabo", "Ndlovu", "naïve café", "Zoë", 'say "hi"', "C:\\temp", "Smith", "李"]
    )
    pick = rng.choice(len(words), rows, p=[0.3, 0.3, 0.1, 0.1, 0.02, 0.02, 0.15, 0.01])
    name = pc.binary_join_element_wise(
        pa.array(words[pick]), pa.array(rng.integers(0, 10**7, rows)).cast(pa.string()), " #"
    )
    micros = rng.integers(1_400_000_000_000_000, 1_800_000_000_000_000, rows)
    return pa.table(
        {
            "id": pa.array(np.arange(rows, dtype=np.int64)),
            "amount": pa.array(amount, pa.float64()),
            "quantity": pa.array(rng.integers(-1000, 100_000, rows, dtype=np.int32)),
            "customer": name,
            "active": pa.array(rng.random(rows) < 0.7),
            "created_at": pa.array(micros, pa.timestamp("us", tz="UTC")),
            "day": pa.array(rng.integers(10_000, 21_000, rows, dtype=np.int32), pa.date32()),
        }
    )


def nested_table(rows: int, seed: int = NESTED_SEED) -> Any:
    """Lists (with null items), a map (unsorted keys, null values), a struct, two decimals."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    rng = np.random.default_rng(seed)

    def offsets(most: int) -> Any:
        sizes = rng.integers(0, most + 1, rows)
        return pa.array(np.concatenate([[0], np.cumsum(sizes)]).astype(np.int32))

    def some_null(values: Any, share: float) -> Any:
        return pc.if_else(
            pa.array(rng.random(len(values)) < share), pa.scalar(None, values.type), values
        )

    words = np.array(["red", "green", "blue", "naïve", 'say "hi"', "ünï", "x\\y"])
    tag_offsets = offsets(4)
    tags = pa.array(words[rng.integers(0, len(words), tag_offsets[-1].as_py())])
    score_offsets = offsets(3)
    scores = pa.array(np.round(rng.normal(50, 20, score_offsets[-1].as_py()), 3))
    attr_offsets = offsets(3)
    entries = attr_offsets[-1].as_py()
    # Keys unique within a map, in no particular order.
    keys = pc.binary_join_element_wise(
        pa.array(np.array(["zeta", "alpha", "mid", "beta"])[rng.integers(0, 4, entries)]),
        pa.array(np.arange(entries) % 97).cast(pa.string()),
        "_",
    )
    values = some_null(pa.array(rng.integers(-1000, 1000, entries)), 0.1)
    label = some_null(pa.array(words[rng.integers(0, len(words), rows)]), 0.2)
    point = pa.StructArray.from_arrays(
        [pa.array(rng.normal(0, 100, rows)), pa.array(rng.normal(0, 100, rows)), label],
        names=["x", "y", "label"],
    )
    cents = pa.array(rng.integers(-(10**9), 10**9, rows)).cast(pa.string())
    price = pc.binary_join_element_wise(
        pc.utf8_slice_codeunits(cents, 0, -2), pc.utf8_slice_codeunits(cents, -2), "."
    )
    rate = pc.binary_join_element_wise(
        pa.array(rng.integers(0, 10**6, rows)).cast(pa.string()),
        pa.array(rng.integers(10**17, 10**18, rows)).cast(pa.string()),
        ".",
    )
    return pa.table(
        {
            "id": pa.array(np.arange(rows, dtype=np.int64)),
            "tags": pa.ListArray.from_arrays(tag_offsets, some_null(tags, 0.05)),
            "scores": pa.ListArray.from_arrays(score_offsets, scores),
            "attrs": pa.MapArray.from_arrays(attr_offsets, keys, values),
            "point": point,
            "price": some_null(pc.cast(price.cast(pa.string()), pa.decimal128(12, 2)), 0.03),
            "rate": pc.cast(rate, pa.decimal128(38, 18)),
        }
    )


def as_pandas(table: Any) -> Any:
    """The table as a pandas frame: numpy dtypes where pandas has them, Arrow dtypes otherwise."""
    import pandas as pd
    import pyarrow as pa

    nested = any(pa.types.is_nested(f.type) or pa.types.is_decimal(f.type) for f in table.schema)
    return table.to_pandas(types_mapper=pd.ArrowDtype) if nested else table.to_pandas()


def compare(
    label: str, frame: Any, repeats: int, ours: Callable[[Any], Any], reference: Callable
) -> dict:
    """Time both tools over ``repeats`` rounds, order swapped each round, after a warm-up."""
    contenders = {"ours": ours, "reference": reference}
    results = {name: hash_frame(frame) for name, hash_frame in contenders.items()}
    seconds: dict[str, list[float]] = {name: [] for name in contenders}
    for round_number in range(repeats):
        order = list(contenders) if round_number % 2 == 0 else list(reversed(contenders))
        for name in order:
            start = time.perf_counter()
            contenders[name](frame)
            seconds[name].append(time.perf_counter() - start)
    mine, theirs = results["ours"], results["reference"]
    same = (mine.data_hash, mine.schema_hash, mine.row_count) == (
        theirs.data_hash,
        theirs.schema_hash,
        theirs.row_count,
    )
    median_ours = statistics.median(seconds["ours"])
    median_reference = statistics.median(seconds["reference"])
    row = {
        "case": label,
        "median_ours": median_ours,
        "median_reference": median_reference,
        "ratio": median_reference / median_ours,
        "digests_equal": same and mine.data_hash is not None,
        "ours_error": mine.error,
    }
    print(
        f"{label:<22} ours {median_ours:7.3f} s   reference {median_reference:7.3f} s   "
        f"ratio {row['ratio']:5.2f}x   digests equal: {row['digests_equal']}",
        flush=True,
    )
    if mine.error:
        print(f"    ours failed: {mine.error}", flush=True)
    return row


def cpu_description() -> str:
    """The CPU model and whether it has the SHA extensions (SHA-NI), from /proc/cpuinfo."""
    model, flags = "unknown CPU", set()
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                key, _, value = line.partition(":")
                if key.strip() == "model name" and model == "unknown CPU":
                    model = value.strip()
                elif key.strip() == "flags" and not flags:
                    flags = set(value.split())
    except OSError:
        return "unknown CPU (no /proc/cpuinfo)"
    return f"{model}, {'with' if 'sha_ni' in flags else 'WITHOUT'} SHA-NI"


def floor_compare(table: Any, repeats: int) -> dict:
    """``fingerprint(table)`` against the floor: DataFusion's ``sha256`` alone over the table's
    canonical lines (built beforehand), on the same threads; also the lines built alone."""
    from concurrent.futures import ThreadPoolExecutor

    import pyarrow as pa
    import pyarrow.compute as pc

    from ubunye_rows import fingerprint
    from ubunye_rows.hashing.arrow_lines import slice_lines, table_slices
    from ubunye_rows.hashing.lanes import hash_threads, sum_line_lanes_datafusion
    from ubunye_rows.hashing.types import schema_pairs

    names = sorted(table.column_names)
    kinds = dict(schema_pairs(table.schema))
    ordered = [kinds[name] for name in names]
    threads = hash_threads()
    lines = pa.concat_arrays([slice_lines(s, ordered) for s in table_slices(table, names)])

    def build_only() -> None:
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(lambda s: len(slice_lines(s, ordered)), table_slices(table, names)))

    contenders = {
        "ours": lambda: fingerprint(table),
        "floor": lambda: sum_line_lanes_datafusion(lines, threads=threads),
        "lines": build_only,
    }
    seconds: dict[str, list[float]] = {name: [] for name in contenders}
    for run in contenders.values():
        run()  # warm-up
    for round_number in range(repeats):
        order = list(contenders) if round_number % 2 == 0 else list(reversed(contenders))
        for name in order:
            start = time.perf_counter()
            contenders[name]()
            seconds[name].append(time.perf_counter() - start)
    medians = {name: statistics.median(times) for name, times in seconds.items()}
    size = pc.sum(pc.binary_length(lines)).as_py() / max(1, len(lines))
    ratio = medians["ours"] / medians["floor"]
    print(
        f"{'flat, Arrow vs floor':<22} ours {medians['ours']:7.3f} s   floor   "
        f"{medians['floor']:7.3f} s   ratio {ratio:5.2f}x the floor (goal <= 1.30x)\n"
        f"    floor: DataFusion sha256 alone over the {len(lines):,} canonical lines "
        f"({size:.0f} bytes each on average) on {threads} threads; "
        f"building the lines alone: {medians['lines']:.3f} s",
        flush=True,
    )
    return {"case": "floor", "digests_equal": True, **medians}


def stage_breakdown(table: Any, repeats: int) -> None:
    """CPU seconds per stage on one thread (less moved by other work than wall time): each
    column's values as text (``value_texts``), all the lines, and SHA-256 of the lines
    (DataFusion, one partition)."""
    import pyarrow as pa

    from ubunye_rows.hashing.arrow_lines import slice_lines, table_slices, value_texts
    from ubunye_rows.hashing.lanes import sum_line_lanes_datafusion
    from ubunye_rows.hashing.types import schema_pairs

    kinds = dict(schema_pairs(table.schema))
    names = sorted(table.column_names)

    def cpu(run: Callable[[], Any]) -> float:
        run()
        times = []
        for _ in range(repeats):
            start = time.process_time()
            run()
            times.append(time.process_time() - start)
        return statistics.median(times)

    def lines_of(columns: list[str]) -> Callable[[], Any]:
        ordered = [kinds[name] for name in columns]
        slices = list(table_slices(table, columns))
        return lambda: [slice_lines(piece, ordered) for piece in slices]

    every = [slice_lines(s, [kinds[n] for n in names]) for s in table_slices(table, names)]
    lines = pa.concat_arrays(every)
    build = cpu(lines_of(names))
    slices = list(table_slices(table, names))
    per_column = {
        name: cpu(lambda i=i, name=name: [value_texts(s.column(i), kinds[name]) for s in slices])
        for i, name in enumerate(names)
    }
    sha = cpu(lambda: sum_line_lanes_datafusion(lines, threads=1))
    columns = ", ".join(f"{name} {seconds:.3f}" for name, seconds in per_column.items())
    print(
        f"stages, CPU seconds on one thread, {table.num_rows:,} flat rows: building the lines "
        f"{build:.3f}, of which each column's values as text: {columns} (sum "
        f"{sum(per_column.values()):.3f}); the rest is the heads and the join of the members. "
        f"SHA-256 {sha:.3f}; "
        f"a build within the 1.3x goal would take at most {0.3 * sha:.3f}",
        flush=True,
    )


def memory_run(rows: int) -> dict:
    """Peak growth of RSS and of Arrow's allocations while ours hashes a ``rows``-row table."""
    import pyarrow as pa

    from ubunye_rows import fingerprint

    fingerprint(flat_table(1000))  # imports and first-call set-up are not the table's cost
    table = flat_table(rows)
    table_bytes = table.nbytes
    base_rss, base_arrow = _rss_bytes(), pa.total_allocated_bytes()
    peak = {"rss": base_rss, "arrow": base_arrow}
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak["rss"] = max(peak["rss"], _rss_bytes())
            peak["arrow"] = max(peak["arrow"], pa.total_allocated_bytes())
            done.wait(0.002)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    start = time.perf_counter()
    result = fingerprint(table)
    seconds = time.perf_counter() - start
    done.set()
    sampler.join()
    return {
        "rows": rows,
        "table_bytes": table_bytes,
        "rss_growth": peak["rss"] - base_rss,
        "arrow_growth": peak["arrow"] - base_arrow,
        "seconds": seconds,
        "complete": result.is_complete,
        "error": result.error,
    }


def _rss_bytes() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def print_memory(rows: int) -> dict | None:
    """Run :func:`memory_run` in a fresh process (a clean heap) and print the ratios."""
    if not Path("/proc/self/status").exists():
        print("memory: skipped (needs Linux /proc for RSS)")
        return None
    command = [sys.executable, str(Path(__file__).resolve()), "--memory-child", str(rows)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        print(f"memory: the measuring process failed:\n{done.stderr}")
        return None
    result = json.loads(done.stdout.strip().splitlines()[-1])
    size = result["table_bytes"]
    print(
        f"memory ({result['rows']:,} rows, table {size / 2**20:,.0f} MiB, hashed in "
        f"{result['seconds']:.2f} s, complete: {result['complete']}): "
        f"peak RSS growth {result['rss_growth'] / 2**20:,.0f} MiB = "
        f"{result['rss_growth'] / size:.2f}x the table; peak Arrow allocation growth "
        f"{result['arrow_growth'] / 2**20:,.0f} MiB = {result['arrow_growth'] / size:.2f}x",
        flush=True,
    )
    return result


def run_spark(rows: int, repeats: int) -> dict | None:
    """The Spark ratio from ``bench/spark_hash_bench.py`` (another bench's file) when present."""
    if importlib.util.find_spec("pyspark") is None:
        print("spark: skipped (pyspark is not importable)")
        return None
    path = HERE / "spark_hash_bench.py"
    if not path.exists():
        print(f"spark: skipped ({path.name} is not there yet)")
        return None
    spec = importlib.util.spec_from_file_location("spark_hash_bench", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if not hasattr(module, "run_spark_bench"):
        print(f"spark: skipped ({path.name} has no run_spark_bench)")
        return None
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("ubunye-hash-bench")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "America/Sao_Paulo")
        .config("spark.driver.memory", "2g")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    try:
        result = module.run_spark_bench(spark, rows, repeats)
    finally:
        spark.stop()
    print(
        f"{'spark local[2]':<22} ours {result['median_ours']:7.3f} s   reference "
        f"{result['median_reference']:7.3f} s   ratio {result['ratio_reference_over_ours']:5.2f}x"
        f"   digests equal: {result['digests_equal']}   (Java {result['java']}, lines written "
        f"in Python workers; with to_json lines on the JVM: "
        f"{result['ratio_reference_over_ours_to_json']:.2f}x)",
        flush=True,
    )
    return result


def flat_lines(rows: int) -> Any:
    """The canonical lines of the flat table, as one Arrow string array."""
    import pyarrow as pa

    from ubunye_rows.hashing.arrow_lines import slice_lines, table_slices
    from ubunye_rows.hashing.types import schema_pairs

    table = flat_table(rows)
    names = sorted(table.column_names)
    kinds = dict(schema_pairs(table.schema))
    parts = [slice_lines(b, [kinds[n] for n in names]) for b in table_slices(table, names)]
    return pa.concat_arrays(parts)


def duckdb_lanes(lines: Any) -> tuple[int, int]:
    """Lane sums by DuckDB's ``sha256`` (hex text), summed in SQL: a candidate we measured."""
    import duckdb
    import pyarrow as pa

    frame = pa.table({"line": lines})  # noqa: F841  (DuckDB finds it by name)
    query = (
        "SELECT sum(('0x' || substr(h, 1, 16))::UBIGINT::HUGEINT), "
        "sum(('0x' || substr(h, 17, 16))::UBIGINT::HUGEINT) "
        "FROM (SELECT sha256(line) AS h FROM frame)"
    )
    a, b = duckdb.connect().sql(query).fetchall()[0]
    return int(a) % 2**64, int(b) % 2**64


def threaded_hashlib_lanes(lines: Any, threads: int) -> tuple[int, int]:
    """hashlib on ``threads`` threads over equal parts: shows what the GIL leaves of it."""
    from concurrent.futures import ThreadPoolExecutor

    from ubunye_rows.hashing.lanes import sum_line_lanes_hashlib

    step = -(-len(lines) // threads)
    parts = [lines.slice(start, step) for start in range(0, len(lines), step)]
    with ThreadPoolExecutor(threads) as pool:
        sums = list(pool.map(sum_line_lanes_hashlib, parts))
    return sum(a for a, _ in sums) % 2**64, sum(b for _, b in sums) % 2**64


def compare_lane_engines(rows: int, repeats: int) -> None:
    """Time each way of summing lanes over the flat table's lines (best and median)."""
    import pyarrow.compute as pc

    from ubunye_rows.hashing import lanes

    lines = flat_lines(rows)
    size = pc.sum(pc.binary_length(lines)).as_py()
    print(f"lane engines on {len(lines):,} lines, {size / len(lines):.0f} bytes each on average")
    candidates: dict[str, Callable[[], tuple[int, int]]] = {
        "hashlib, 1 thread": lambda: lanes.sum_line_lanes_hashlib(lines),
        "hashlib, 2 threads": lambda: threaded_hashlib_lanes(lines, 2),
    }
    if importlib.util.find_spec("duckdb") is not None:
        candidates["duckdb sha256, lanes in SQL"] = lambda: duckdb_lanes(lines)
    if importlib.util.find_spec("datafusion") is not None:
        candidates["datafusion sha256, 1 partition"] = lambda: lanes.sum_line_lanes_datafusion(
            lines, threads=1
        )
        candidates["datafusion sha256, 2 partitions"] = lambda: lanes.sum_line_lanes_datafusion(
            lines, threads=2
        )
    expected = lanes.sum_line_lanes_hashlib(lines)
    seconds: dict[str, list[float]] = {name: [] for name in candidates}
    for _ in range(repeats):
        for name, run in candidates.items():
            start = time.perf_counter()
            same = run() == expected
            seconds[name].append(time.perf_counter() - start)
            if not same:
                raise SystemExit(f"{name} gave other sums than hashlib")
    for name, times in seconds.items():
        print(f"  {name:<34} best {min(times):6.3f} s   median {statistics.median(times):6.3f} s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows of each table")
    parser.add_argument(
        "--nested-rows", type=int, help="rows of the nested table (default: a fifth of --rows)"
    )
    parser.add_argument("--repeats", type=int, default=5, help="timed rounds per case")
    parser.add_argument("--memory-rows", type=int, default=10_000_000)
    parser.add_argument("--quick", action="store_true", help="small sizes: a smoke run")
    parser.add_argument("--spark", action="store_true", help="also the Spark bench (local[2])")
    parser.add_argument("--no-memory", action="store_true", help="skip the memory measurement")
    parser.add_argument("--lanes", action="store_true", help="only compare the lane engines")
    parser.add_argument(
        "--stages", action="store_true", help="only the CPU seconds of each stage, one thread"
    )
    parser.add_argument("--memory-child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.memory_child:
        print(json.dumps(memory_run(args.memory_child)))
        return 0
    if args.quick:
        args.rows, args.repeats, args.memory_rows = 20_000, 2, 200_000
    # The reference writes nested values one at a time in Python: a fifth keeps its runs short.
    if args.lanes:
        compare_lane_engines(args.rows, args.repeats)
        return 0
    if args.stages:
        stage_breakdown(flat_table(args.rows), args.repeats)
        return 0
    nested_rows = args.nested_rows or max(1, args.rows // 5)

    from ubunye.lineage.content_hash import fingerprint as reference

    from ubunye_rows import fingerprint as ours
    from ubunye_rows.hashing.lanes import hash_threads, lane_engine

    print(
        f"{cpu_description()}; python {sys.version.split()[0]}, {os.cpu_count()} cores, "
        f"lane engine {lane_engine()}, {hash_threads()} hash threads; rows {args.rows:,} "
        f"(nested {nested_rows:,}), repeats {args.repeats}",
        flush=True,
    )
    rows = []
    flat = flat_table(args.rows)
    nested = nested_table(nested_rows)
    if lane_engine() == "datafusion":
        floor_compare(flat, args.repeats)
    rows.append(compare("flat, Arrow", flat, args.repeats, ours, reference))
    rows.append(compare("flat, pandas", as_pandas(flat), args.repeats, ours, reference))
    rows.append(compare("nested, Arrow", nested, args.repeats, ours, reference))
    rows.append(compare("nested, pandas", as_pandas(nested), args.repeats, ours, reference))
    del flat, nested
    if not args.no_memory:
        print_memory(args.memory_rows)
    if args.spark:
        spark_result = run_spark(args.rows, args.repeats)
        if spark_result is not None:
            rows.append(spark_result)
    return 0 if all(row["digests_equal"] for row in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
