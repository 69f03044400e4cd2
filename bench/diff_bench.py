"""Row diff speed: two stored 1,000,000-row versions where 10 rows changed.

Run: ``python bench/diff_bench.py [--rows N] [--changed K] [--repeats R]``. Three ways to find
the changed rows, alternating in one process, medians: ours (hash every row, compare only the
differing buckets' rows), ours comparing every row (all 256 buckets), and reading both files
whole into pandas and an outer merge on every column (the usual way without a key).
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from figures import medians_against, whole_number_options
from hash_bench import flat_table
from sketch_bench import machine

from ubunye_core.diff.report import diff_versions, path_version
from ubunye_core.diff.rows import diff_tables
from ubunye_core.materialisations.stored import read_stored


def write_versions(folder: Path, rows: int, changed: int) -> tuple[str, str]:
    """Version A and version B (``changed`` rows' amounts moved) as Parquet files."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = flat_table(rows)
    amount = table.column("amount").to_numpy(zero_copy_only=False).copy()
    picked = np.random.default_rng(7).choice(rows, changed, replace=False)
    amount[picked] = -12345.5
    after = table.set_column(1, "amount", pa.array(amount, pa.float64()))
    a, b = folder / "a.parquet", folder / "b.parquet"
    pq.write_table(table, a)
    pq.write_table(after, b)
    return str(a), str(b)


def ours(a: str, b: str) -> tuple[int, int, int]:
    report = diff_versions(path_version(a), path_version(b))
    assert report.diff is not None
    return len(report.diff.removed), len(report.diff.added), report.diff.compared_before


def ours_every_row(a: str, b: str) -> tuple[int, int, int]:
    diff = diff_tables(read_stored(a).view, read_stored(b).view, buckets=range(256))
    return len(diff.removed), len(diff.added), diff.compared_before


def pandas_merge(a: str, b: str) -> tuple[int, int, int]:
    import pandas as pd

    left, right = pd.read_parquet(a), pd.read_parquet(b)
    merged = left.merge(right, how="outer", on=list(left.columns), indicator=True)
    sides = merged["_merge"].value_counts()
    return int(sides.get("left_only", 0)), int(sides.get("right_only", 0)), len(left)


def timed(work: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    result = work()
    return time.perf_counter() - started, result


def main(argv: list[str] | None = None) -> int:
    args = whole_number_options(__doc__, argv, rows=1_000_000, changed=10, repeats=5)
    print(machine())
    print(f"rows {args.rows:,}, rows changed {args.changed}, repeats {args.repeats}, medians")
    ways = {
        "ours (differing buckets)": ours,
        "ours, every row compared": ours_every_row,
        "pandas, read whole + merge": pandas_merge,
    }
    with tempfile.TemporaryDirectory() as folder:
        a, b = write_versions(Path(folder), args.rows, args.changed)
        times: dict[str, list[float]] = {name: [] for name in ways}
        results: dict[str, Any] = {}
        for _ in range(args.repeats):
            for name, way in ways.items():
                seconds, results[name] = timed(lambda way=way: way(a, b))
                times[name].append(seconds)
    for name, (median, of_merge) in medians_against(times, "pandas, read whole + merge").items():
        removed, added, compared = results[name]
        print(
            f"{name:<28} {median:6.3f} s  ({1 / of_merge:4.2f}x the merge)  removed {removed}, "
            f"added {added}, rows of A compared {compared:,}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
