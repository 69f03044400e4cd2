"""rows-v1 of a DuckDB table four ways: hashed inside DuckDB in one query (``ubunye_rows.sql``),
streamed from DuckDB as Arrow batches to the kernel (``kernel_columns``: every column), read
into one Arrow table and hashed by the kernel, and read into pandas and hashed by the reference
(ubunye-engine 0.8.0). All in one process, alternating, medians; the digests must agree. Then
the peak memory of the first three, each in a fresh process.

    python bench/sql_hash_bench.py                # 10,000,000 rows, 3 rounds
    python bench/sql_hash_bench.py --quick        # 200,000 rows, 1 round
    python bench/sql_hash_bench.py --postgres 1000000   # also PostgreSQL, a temporary cluster

With ``--postgres N`` the same table's first N rows are loaded into a temporary PostgreSQL cluster
(tests/postgres_cluster.py: Debian's server binaries) and hashed in PostgreSQL (psycopg2) and
streamed to the kernel (ADBC), alternating, medians.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hash_bench import _rss_bytes, cpu_description, flat_table

TABLE = "flat"


def write_table(path: Path, rows: int) -> None:
    """The issue-6 flat table (hash_bench's) of ``rows`` rows as table ``flat`` of a DuckDB file."""
    import duckdb

    table = flat_table(rows)
    with duckdb.connect(str(path)) as connection:
        connection.register("source", table)
        connection.execute(f"CREATE TABLE {TABLE} AS SELECT * FROM source")
        connection.unregister("source")
        connection.execute("CHECKPOINT")


def the_three_ways(connection: Any) -> dict[str, Callable[[], Any]]:
    """Each way of hashing the table, as a call that reads what it needs and returns the digest."""
    import pandas as pd
    from ubunye.lineage.content_hash import fingerprint as reference

    from ubunye_rows import fingerprint_arrow
    from ubunye_rows.sql import fingerprint_duckdb

    def arrow() -> Any:
        return connection.sql(f"SELECT * FROM {TABLE}").to_arrow_table()

    return {
        "in DuckDB": lambda: fingerprint_duckdb(connection, TABLE, kernel_columns=()),
        # Every column streamed as Arrow batches to the kernel: memory stays a batch's. The
        # default for a DuckDB in this process (fingerprint_duckdb(connection, TABLE)).
        "streamed to kernel": lambda: fingerprint_duckdb(connection, TABLE, kernel_columns="all"),
        "Arrow + kernel": lambda: fingerprint_arrow(arrow()),
        # Arrow dtypes: a numpy float column would make the table's NaNs nulls (pandas' own
        # reading of NaN), so the reference would hash other rows.
        "reference, pandas": lambda: reference(arrow().to_pandas(types_mapper=pd.ArrowDtype)),
    }


def compare(connection: Any, repeats: int) -> dict:
    """Median seconds of each way over ``repeats`` alternating rounds (after one warm-up of
    each), and whether all gave the same digest."""
    ways = the_three_ways(connection)
    seconds: dict[str, list[float]] = {name: [] for name in ways}
    digests: dict[str, tuple] = {}
    for name, way in ways.items():
        found = way()
        digests[name] = (found.schema_hash, found.data_hash, found.row_count)
    for round_ in range(repeats):
        order = list(ways) if round_ % 2 == 0 else list(reversed(ways))
        for name in order:
            started = time.perf_counter()
            ways[name]()
            seconds[name].append(time.perf_counter() - started)
    return {
        "medians": {name: statistics.median(found) for name, found in seconds.items()},
        "agree": len(set(digests.values())) == 1,
        "digests": digests,
    }


#: DuckDB's memory limit for the memory runs (its buffer pool would otherwise keep the file's
#: pages it read, up to 80 % of the machine's memory): the hash must fit in it.
MEMORY_LIMIT = "128MB"


def memory_child(path: str, way: str) -> None:
    """Print (as JSON) the peak RSS growth of one way of hashing the table in ``path``."""
    import duckdb

    connection = duckdb.connect(path, read_only=True, config={"memory_limit": MEMORY_LIMIT})
    chosen = the_three_ways(connection)[way]
    connection.sql("SELECT 1").fetchall()
    base = _rss_bytes()
    peak = {"rss": base}
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak["rss"] = max(peak["rss"], _rss_bytes())
            done.wait(0.002)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    started = time.perf_counter()
    found = chosen()
    seconds = time.perf_counter() - started
    done.set()
    sampler.join()
    print(json.dumps({"growth": peak["rss"] - base, "seconds": seconds, "rows": found.row_count}))


def measure_memory(path: Path, way: str) -> dict:
    """:func:`memory_child` in a fresh process."""
    command = [sys.executable, str(Path(__file__).resolve()), "--memory-child", str(path), way]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def postgres_compare(rows: int, repeats: int) -> dict:
    """Median seconds of hashing ``rows`` rows in PostgreSQL and streamed to the kernel."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    import adbc_driver_postgresql.dbapi as adbc
    import psycopg2
    from postgres_cluster import postgres_cluster

    from ubunye_rows import fingerprint_arrow
    from ubunye_rows.sql import fingerprint_postgres

    table = flat_table(rows)
    with postgres_cluster() as cluster:
        streaming = adbc.connect(cluster.url)
        cursor = streaming.cursor()
        cursor.adbc_ingest(TABLE, table, mode="create")
        streaming.commit()
        connection = psycopg2.connect(cluster.url)
        ways = {
            "in PostgreSQL": lambda: fingerprint_postgres(connection, TABLE),
            "streamed (ADBC)": lambda: fingerprint_postgres(streaming, TABLE, kernel_columns="all"),
        }
        seconds: dict[str, list[float]] = {name: [] for name in ways}
        digests = set()
        for round_ in range(repeats):
            for name in list(ways) if round_ % 2 == 0 else list(reversed(ways)):
                started = time.perf_counter()
                digests.add(ways[name]().data_hash)
                seconds[name].append(time.perf_counter() - started)
        connection.close()
        streaming.close()
    digests.add(fingerprint_arrow(table).data_hash)
    return {
        "medians": {name: statistics.median(found) for name, found in seconds.items()},
        "agree": len(digests) == 1,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="200,000 rows, 1 round")
    parser.add_argument("--postgres", type=int, default=0, metavar="ROWS", help="also PostgreSQL")
    parser.add_argument("--memory-child", nargs=2, metavar=("DATABASE", "WAY"), help="internal")
    args = parser.parse_args(argv)
    if args.memory_child:
        memory_child(*args.memory_child)
        return 0
    rows, repeats = (200_000, 1) if args.quick else (args.rows, args.repeats)
    import duckdb

    from ubunye_rows.hashing import native

    module = native.kernel()
    print(f"machine: {cpu_description()}; {os.cpu_count()} cores; duckdb {duckdb.__version__}")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(
        f"kernel: {'native' if module else 'Python path'}; SHA extensions: "
        f"{bool(module and module.sha_extensions())}"
    )
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "bench.duckdb"
        write_table(path, rows)
        print(
            f"table: {rows:,} rows x 7 columns (hash_bench's flat table), "
            f"{path.stat().st_size / 2**20:,.0f} MiB as a DuckDB file"
        )
        with duckdb.connect(str(path), read_only=True) as connection:
            result = compare(connection, repeats)
        base = result["medians"]["in DuckDB"]
        for name, seconds in result["medians"].items():
            print(f"  {name:<18} {seconds:7.2f} s   {seconds / base:5.2f}x in DuckDB")
        print(f"  same digest every way: {result['agree']}")
        print(f"  memory, each in a fresh process, DuckDB's memory_limit {MEMORY_LIMIT}:")
        for way in ("in DuckDB", "streamed to kernel", "Arrow + kernel"):
            found = measure_memory(path, way)
            print(
                f"    {way:<18} peak RSS growth {found['growth'] / 2**20:7,.0f} MiB "
                f"({found['rows']:,} rows in {found['seconds']:.2f} s)"
            )
    agree = result["agree"]
    if args.postgres:
        found = postgres_compare(args.postgres, repeats)
        print(f"PostgreSQL, {args.postgres:,} rows of the same table (a temporary cluster):")
        for name, seconds in found["medians"].items():
            print(f"  {name:<18} {seconds:7.2f} s")
        print(f"  same digest both ways and as the kernel's: {found['agree']}")
        agree = agree and found["agree"]
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
