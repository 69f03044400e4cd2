"""What the receipt costs: materialise a 1,000,000-row pandas asset with UbunyeIOManager and with
a plain Parquet UPathIOManager, in one process, alternating, and print medians and ratios.

    python bench/io_manager_bench.py [--rows 1000000] [--repeats 5]

Two measurements per IO manager, each a whole `dagster.materialize` call on one ephemeral
instance: "write" materialises the big asset (build nothing, store it: the Ubunye side also hashes
the rows and saves the record); "read" materialises a small downstream asset that loads the big one
(the Ubunye side also hashes the input and checks it against the recorded digest).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import dagster as dg
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from upath import UPath

SEED = 6
#: Dagster's console logger at WARNING, so the figures are not buried in event lines.
QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


class ParquetBaselineIOManager(dg.UPathIOManager):
    """The baseline: pandas to Parquet and back through pyarrow, nothing else."""

    extension: str = ".parquet"

    def dump_to_path(self, context: dg.OutputContext, obj: pd.DataFrame, path: UPath) -> None:
        """Write the frame as one Parquet file."""
        pq.write_table(pa.Table.from_pandas(obj, preserve_index=False), str(path))

    def load_from_path(self, context: dg.InputContext, path: UPath) -> pd.DataFrame:
        """Read the Parquet file back into pandas."""
        return pq.read_table(str(path)).to_pandas()


def seven_column_table(rows: int) -> pd.DataFrame:
    """The hash bench's table shape: int64, float64 with NaNs, int32, string, bool, UTC
    timestamp, date (fixed seed)."""
    rng = np.random.default_rng(SEED)
    values = rng.normal(size=rows)
    values[rng.random(rows) < 0.05] = np.nan
    start = np.datetime64("2024-01-01T00:00:00", "us")
    instants = start + rng.integers(0, 366 * 86_400_000_000, size=rows).astype("timedelta64[us]")
    return pd.DataFrame(
        {
            "id": np.arange(rows, dtype="int64"),
            "value": values,
            "bucket": rng.integers(0, 1000, size=rows, dtype="int32"),
            "label": pd.array([f"item-{n % 50_000:05d}" for n in range(rows)], dtype="str"),
            "flag": rng.random(rows) < 0.5,
            "at": pd.to_datetime(instants).tz_localize("UTC"),
            "day": pd.to_datetime(instants).normalize().date,
        }
    )


def bench_assets(frame: pd.DataFrame) -> list[dg.AssetsDefinition]:
    """The big asset (returns the prepared frame) and a small one that reads it."""

    @dg.asset(name="big")
    def big() -> pd.DataFrame:
        return frame

    @dg.asset(name="summary")
    def summary(big: pd.DataFrame) -> pd.DataFrame:
        return pd.DataFrame({"rows": [len(big)]})

    return [big, summary]


def timed_materialise(
    assets: list[dg.AssetsDefinition],
    selection: list[dg.AssetsDefinition],
    io_manager: dg.ConfigurableIOManager | dg.IOManager,
    instance: dg.DagsterInstance,
) -> tuple[float, float | None]:
    """Seconds for one `materialize` of `selection`, and the hash seconds its receipt reports
    (None without a receipt); raises if the run failed."""
    started = time.perf_counter()
    result = dg.materialize(
        assets,
        selection=selection,
        resources={"io_manager": io_manager},
        instance=instance,
        run_config=QUIET,
    )
    elapsed = time.perf_counter() - started
    if not result.success:
        raise RuntimeError("bench run failed")
    (event,) = result.get_asset_materialization_events()
    hashed = event.materialization.metadata.get("ubunye/hash_seconds")
    return elapsed, (float(hashed.value) if hashed is not None else None)


def main(argv: list[str] | None = None) -> int:
    """Build the table, alternate the two IO managers `repeats` times, print medians and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)

    from ubunye_dagster import UbunyeIOManager, UbunyeResource

    frame = seven_column_table(args.rows)
    assets = bench_assets(frame)
    big, summary = assets
    with tempfile.TemporaryDirectory() as folder, dg.DagsterInstance.ephemeral() as instance:
        root = Path(folder)
        managers: dict[str, Callable[[], dg.ConfigurableIOManager | dg.IOManager]] = {
            "parquet": lambda: ParquetBaselineIOManager(base_path=UPath(root / "baseline")),
            "ubunye": lambda: UbunyeIOManager(
                base_path=str(root / "ubunye" / "data"),
                ubunye=UbunyeResource(usecase_dir=str(root / "ubunye")),
            ),
        }
        times: dict[tuple[str, str], list[float]] = {}
        for repeat in range(args.repeats + 1):
            order = list(managers) if repeat % 2 == 0 else list(reversed(managers))
            for name in order:
                manager = managers[name]()
                write, hashed = timed_materialise(assets, [big], manager, instance)
                read, _ = timed_materialise(assets, [summary], manager, instance)
                if repeat == 0:
                    continue  # warm-up: imports, first Parquet writer, caches
                times.setdefault((name, "write"), []).append(write)
                times.setdefault((name, "read"), []).append(read)
                if hashed is not None:
                    times.setdefault((name, "hash"), []).append(hashed)

    print(
        f"{args.rows:,} rows x {frame.shape[1]} columns, {args.repeats} alternating repeats "
        f"(after one warm-up), medians of whole materialize() calls:"
    )
    for step in ("write", "read"):
        base = statistics.median(times[("parquet", step)])
        ours = statistics.median(times[("ubunye", step)])
        print(
            f"  {step:<5}  parquet UPathIOManager {base:6.3f}s   UbunyeIOManager {ours:6.3f}s   "
            f"ratio {ours / base:4.2f}x   (+{ours - base:.3f}s)"
        )
    if times.get(("ubunye", "hash")):
        print(
            f"  of which hashing the written rows (ubunye/hash_seconds, median): "
            f"{statistics.median(times[('ubunye', 'hash')]):.3f}s"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
