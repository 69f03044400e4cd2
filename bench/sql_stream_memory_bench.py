"""Peak memory of ``fingerprint_streamed`` against table size: the same DuckDB table shape at
N and 10 N rows, each hashed in a fresh process; the ratio of the hash's peak RSS growth (10 N
over N) stays near 1 when memory stays at a batch.

    python bench/sql_stream_memory_bench.py --rows 500000
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from hash_bench import cpu_description

CHILD = """
import resource, sys, duckdb
from ubunye_rows.sql.stream import fingerprint_streamed
rows, path = int(sys.argv[1]), sys.argv[2]
con = duckdb.connect(path)
con.execute("SET memory_limit = '128MB'")
con.execute("SET enable_progress_bar = false")
con.execute(f"CREATE TABLE t AS SELECT i::BIGINT AS id, 'row ' || i AS name, i * 0.5 AS half "
            f"FROM range({rows}) r(i)")
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
fingerprint_streamed(con, "t")
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)
"""


def peak_growth_kib(rows: int) -> int:
    """How much the peak RSS of a fresh process grows while it streams ``rows`` rows (KiB)."""
    with tempfile.TemporaryDirectory() as folder:
        done = subprocess.run(
            [sys.executable, "-c", CHILD, str(rows), str(Path(folder) / "t.duckdb")],
            check=True,
            capture_output=True,
            text=True,
        )
    return int(done.stdout.split()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1_000_000)
    rows = parser.parse_args().rows
    print(f"machine: {cpu_description()}")
    small, large = peak_growth_kib(rows), peak_growth_kib(10 * rows)
    print(f"streamed, peak RSS growth: {rows:,} rows {small // 1024} MiB, ", end="")
    print(f"{10 * rows:,} rows {large // 1024} MiB; ratio {large / max(small, 1):.2f} (10x rows)")


if __name__ == "__main__":
    main()
