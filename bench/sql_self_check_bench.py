"""What the in-database self-check costs (``ubunye_rows.sql.self_check``): the golden vectors each
database holds hashed in it before its first hash, once per process. On a DuckDB file and on a
temporary PostgreSQL cluster (tests/postgres_cluster.py), each in this process:

- the first check (it pays the imports the golden vectors' types need, once per process);
- the check again, the verdict forgotten before each run (medians of ``--repeats``);
- the baseline, alternating with it: hashing a 100,000-row table (hash_bench's flat table) in
  the same database with the check skipped; the ratio of the check to it.

    python bench/sql_self_check_bench.py
    python bench/sql_self_check_bench.py --repeats 9 --rows 100000
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from hash_bench import cpu_description, flat_table

TABLE = "flat"


def seconds_of(call: Callable[[], Any]) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def measure(check: Callable[[], Any], hash_table: Callable[[], Any], repeats: int) -> dict:
    """The first check, the median of checks after it (the verdict forgotten before each), the
    median baseline hash, alternating."""
    from ubunye_rows.sql.self_check import forget_verdicts

    forget_verdicts()
    first = seconds_of(check)
    hash_table()  # warm-up
    checks, baselines = [], []
    for _ in range(repeats):
        forget_verdicts()
        checks.append(seconds_of(check))
        baselines.append(seconds_of(hash_table))
    return {
        "first": first,
        "check": statistics.median(checks),
        "baseline": statistics.median(baselines),
        "trusted": check().trusted,
    }


def duckdb_figures(rows: int, repeats: int) -> dict:
    import duckdb

    from ubunye_rows.sql import fingerprint_duckdb
    from ubunye_rows.sql.duckdb import installed_dialect
    from ubunye_rows.sql.self_check import trusted_verdict

    with tempfile.TemporaryDirectory() as folder:
        connection = duckdb.connect(str(Path(folder) / "bench.duckdb"))
        connection.register("source", flat_table(rows))
        connection.execute(f"CREATE TABLE {TABLE} AS SELECT * FROM source")
        connection.unregister("source")
        dialect = installed_dialect()
        found = measure(
            lambda: trusted_verdict(connection, dialect, lambda name, chosen: fingerprint_duckdb(
                connection, name, kernel_columns=(), self_check=False, dialect=chosen
            )),
            lambda: fingerprint_duckdb(connection, TABLE, kernel_columns=(), self_check=False),
            repeats,
        )  # fmt: skip
        connection.close()
    return found


def postgres_figures(rows: int, repeats: int) -> dict:
    import adbc_driver_postgresql.dbapi as adbc
    import psycopg2
    from postgres_cluster import postgres_cluster

    from ubunye_rows.sql import fingerprint_postgres
    from ubunye_rows.sql.dialects import PostgresDialect
    from ubunye_rows.sql.self_check import trusted_verdict

    with postgres_cluster() as cluster:
        with adbc.connect(cluster.url) as loading:
            cursor = loading.cursor()
            cursor.adbc_ingest(TABLE, flat_table(rows), mode="create")
            loading.commit()
            cursor.close()
        connection = psycopg2.connect(cluster.url)
        dialect = PostgresDialect()
        found = measure(
            lambda: trusted_verdict(connection, dialect, lambda name, chosen: fingerprint_postgres(
                connection, name, self_check=False, dialect=chosen
            )),
            lambda: fingerprint_postgres(connection, TABLE, self_check=False),
            repeats,
        )  # fmt: skip
        found["version"] = connection.server_version
        connection.close()
    return found


def print_figures(name: str, found: dict, rows: int) -> None:
    print(f"{name}:")
    print(f"  first check in the process   {found['first']:6.3f} s (imports included)")
    print(f"  check, median                {found['check']:6.3f} s")
    print(f"  baseline: {rows:,} rows hashed {found['baseline']:6.3f} s")
    print(f"  check / baseline             {found['check'] / found['baseline']:6.2f}x")
    print(f"  trusted (the database's digests are the golden ones): {found['trusted']}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    import duckdb

    from ubunye_rows.hashing import native

    module = native.kernel()
    print(f"machine: {cpu_description()}; {os.cpu_count()} cores; duckdb {duckdb.__version__}")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"SHA extensions in the kernel: {bool(module and module.sha_extensions())}")
    duckdb_found = duckdb_figures(args.rows, args.repeats)
    print_figures("DuckDB (a database file)", duckdb_found, args.rows)
    postgres_found = postgres_figures(args.rows, args.repeats)
    print_figures(
        f"PostgreSQL {postgres_found['version']} (a temporary cluster)", postgres_found, args.rows
    )
    trusted = duckdb_found["trusted"] and postgres_found["trusted"]
    return 0 if trusted else 1


if __name__ == "__main__":
    sys.exit(main())
