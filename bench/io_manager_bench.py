"""What the receipt costs: materialise a 1,000,000-row pandas asset with UbunyeIOManager and with
a plain Parquet UPathIOManager, in one process, alternating, and print medians and ratios.

    python bench/io_manager_bench.py [--rows 1000000] [--repeats 5] [--parts]

Each measurement is a whole `dagster.materialize` call on one ephemeral instance: "write"
materialises the big asset (build nothing, store it: the Ubunye side also hashes the rows, digests
the stored bytes and saves the record); "read" materialises a small downstream asset that loads
the big one (the Ubunye side digests the stored bytes beside the decode and, when they match the
recorded byte digest, takes the recorded rows-v1 digest); "read, rows" does the same read with
`verify_reads="rows"` (the rows hashed and checked on every read). The plain Parquet write of the
same table is also timed on its own, for the write's floor: the plain materialisation with its
Parquet write replaced by the hash. A run whose asset stores nothing is timed under each IO
manager and under a do-nothing subclass of UbunyeIOManager: what Dagster spends setting up that
shape of IO manager for a run, before any read or write. The exit status is 1 when a read's digest
differs from the written one.
"""

from __future__ import annotations

import argparse
import functools
import os
import platform
import statistics
import sys
import tempfile
import time
from functools import partial
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


@dg.asset(name="stores_nothing")
def stores_nothing() -> None:
    """An asset whose run never calls its IO manager: what a run costs before any read or write."""


@functools.cache
def set_up_only_class() -> type:
    """UbunyeIOManager's fields and nested resource, doing nothing: a run with it costs what
    Dagster spends setting that shape up, and nothing of the glue."""
    from ubunye_dagster import UbunyeIOManager

    class SetUpOnlyIOManager(UbunyeIOManager):
        def setup_for_execution(self, context: dg.InitResourceContext) -> None:
            """Nothing: no step-start listener."""

        def teardown_after_execution(self, context: dg.InitResourceContext) -> None:
            """Nothing: no records closed, no index updates settled."""

    return SetUpOnlyIOManager


def machine() -> str:
    """CPU model, SHA-NI, usable cores and hash threads: the line every bench starts with."""
    from ubunye_core.materialisations.byte_digest import DEFAULT_ALGORITHM
    from ubunye_rows.hashing.lanes import hash_threads

    model, sha_ni = platform.processor() or "unknown CPU", 0
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            text = info.read()
        model = next(
            (line.split(":", 1)[1].strip() for line in text.splitlines() if "model name" in line),
            model,
        )
        # As `grep -c sha_ni /proc/cpuinfo`: the processors whose flags name it.
        sha_ni = sum(1 for line in text.splitlines() if " sha_ni" in line)
    except OSError:
        pass
    return (
        f"{model}, SHA-NI {'yes' if sha_ni else 'no'} (sha_ni on {sha_ni} processors), "
        f"{len(os.sched_getaffinity(0))} usable "
        f"cores, {hash_threads()} hash threads, byte digest {DEFAULT_ALGORITHM}, "
        f"Python {platform.python_version()}"
    )


def load_average() -> str:
    """The 1, 5 and 15 minute load averages, as `uptime` shows them: other work on the machine."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f}, {five:.2f}, {fifteen:.2f}"


def timed_plain_write(frame: pd.DataFrame, path: Path) -> float:
    """Seconds of the plain Parquet write alone (the frame converted first, untimed)."""
    table = pa.Table.from_pandas(frame, preserve_index=False)
    started = time.perf_counter()
    pq.write_table(table, str(path))
    return time.perf_counter() - started


def read_digest(result: dg.ExecuteInProcessResult) -> tuple[str | None, str | None]:
    """The input ``big`` as the reading step recorded it: (data hash, hash basis)."""
    from ubunye_core.records.model import RunRecord

    (event,) = result.get_asset_materialization_events()
    path = event.materialization.metadata["ubunye/record_path"].value
    with open(path, encoding="utf-8") as handle:
        step = RunRecord.from_json(handle.read()).step("big", "input")
    return step.data_hash, step.hash_basis


def timed_materialise(
    assets: list[dg.AssetsDefinition],
    selection: list[dg.AssetsDefinition],
    io_manager: dg.ConfigurableIOManager | dg.IOManager,
    instance: dg.DagsterInstance,
) -> tuple[float, float | None, dg.ExecuteInProcessResult]:
    """Seconds for one `materialize` of `selection`, the hash seconds its receipt reports
    (None without a receipt), and the result; raises if the run failed."""
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
    return elapsed, (float(hashed.value) if hashed is not None else None), result


def ubunye_manager(
    root: Path, verify_reads: str = "fail", manager_class: type | None = None
) -> dg.ConfigurableIOManager:
    """UbunyeIOManager (or ``manager_class``, a subclass) storing under ``root`` (both read
    settings share the stored data)."""
    from ubunye_dagster import UbunyeIOManager, UbunyeResource

    return (manager_class or UbunyeIOManager)(
        base_path=str(root / "ubunye" / "data"),
        ubunye=UbunyeResource(usecase_dir=str(root / "ubunye"), verify_reads=verify_reads),
    )


def measure(frame: pd.DataFrame, repeats: int) -> tuple[dict[str, list[float]], list[str]]:
    """Alternate the IO managers ``repeats`` times after one warm-up; returns the seconds of each
    measurement and a line for every read whose digest is not the written one."""
    assets = bench_assets(frame)
    times: dict[str, list[float]] = {}
    wrong: list[str] = []
    with tempfile.TemporaryDirectory() as folder, dg.DagsterInstance.ephemeral() as instance:
        root = Path(folder)
        for repeat in range(repeats + 1):
            sample: dict[str, float] = {}
            rounds = [
                partial(plain_round, assets, root, instance, sample),
                partial(ubunye_round, assets, root, instance, sample, wrong),
                partial(plain_write_round, frame, root, sample),
                partial(set_up_round, root, instance, sample),
            ]
            for run in rounds if repeat % 2 == 0 else reversed(rounds):
                run()
            if repeat > 0:  # the first round warms up: imports, first Parquet writer, caches
                for key, seconds in sample.items():
                    times.setdefault(key, []).append(seconds)
    return times, wrong


def set_up_round(root: Path, instance, sample: dict[str, float]) -> None:
    """A run whose asset stores nothing, under the plain IO manager, the do-nothing subclass of
    UbunyeIOManager (Dagster's set-up of its shape) and UbunyeIOManager itself."""
    managers = {
        "set-up plain": lambda: ParquetBaselineIOManager(base_path=UPath(root / "baseline")),
        "set-up dagster": lambda: ubunye_manager(root, manager_class=set_up_only_class()),
        "set-up ubunye": lambda: ubunye_manager(root),
    }
    for key, manager in managers.items():
        started = time.perf_counter()
        dg.materialize(
            [stores_nothing],
            resources={"io_manager": manager()},
            instance=instance,
            run_config=QUIET,
        )
        sample[key] = time.perf_counter() - started


def plain_write_round(frame: pd.DataFrame, root: Path, sample: dict[str, float]) -> None:
    """The plain Parquet write alone, then the hash the IO manager runs, alone."""
    sample["plain write"] = timed_plain_write(frame, root / "plain.parquet")
    sample["hash alone"] = timed_hash_alone(frame, sample)


def timed_hash_alone(frame: pd.DataFrame, sample: dict[str, float]) -> float:
    """Seconds of rows-v1 over the frame's Arrow table as the IO manager hashes it (converted
    first, untimed), nothing else running; its digest goes in ``sample`` as its key."""
    from ubunye_dagster.io.handlers import arrow_files

    table = pa.Table.from_pandas(frame, preserve_index=False)
    started = time.perf_counter()
    fp = arrow_files.fingerprint_stored(table, "pandas")
    seconds = time.perf_counter() - started
    sample[f"digest alone:{fp.data_hash}"] = 0.0
    return seconds


def plain_round(assets, root: Path, instance, sample: dict[str, float]) -> None:
    """Write and read through the plain Parquet UPathIOManager."""
    big, summary = assets
    manager = ParquetBaselineIOManager(base_path=UPath(root / "baseline"))
    sample["parquet write"], _, _ = timed_materialise(assets, [big], manager, instance)
    sample["parquet read"], _, _ = timed_materialise(assets, [summary], manager, instance)


def ubunye_round(assets, root: Path, instance, sample: dict[str, float], wrong: list) -> None:
    """Write through UbunyeIOManager, then read it with the byte proof and with rows hashed."""
    big, summary = assets
    write, hashed, written = timed_materialise(assets, [big], ubunye_manager(root), instance)
    (event,) = written.get_asset_materialization_events()
    digest = event.materialization.metadata["ubunye/data_hash"].value
    sample["ubunye write"], sample["hash"] = write, hashed or 0.0
    sample[f"digest written:{digest}"] = 0.0
    for label, setting in (("read", "fail"), ("read, rows", "rows")):
        manager = ubunye_manager(root, setting)
        sample[f"ubunye {label}"], _, result = timed_materialise(
            assets, [summary], manager, instance
        )
        seen, basis = read_digest(result)
        sample[f"basis {label}:{basis}"] = 0.0
        if seen != digest:
            wrong.append(f"{label}: read {seen} ({basis}), written {digest}")


def measure_parts(frame: pd.DataFrame, repeats: int) -> None:
    """The read and write parts outside Dagster, alternating, medians: what the byte digest and
    the overlap cost on their own (``--parts``)."""
    import hashlib

    import blake3

    from ubunye_core.materialisations.stored import read_stored
    from ubunye_dagster.io.handlers import arrow_files

    table = pa.Table.from_pandas(frame, preserve_index=False)
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        stored = UPath(root / "stored.parquet")
        pq.write_table(table, str(stored))
        data = stored.read_bytes()

        def staged_write(hash_first: bool) -> None:
            if hash_first:
                arrow_files.fingerprint_stored(table, "pandas")
            staged = arrow_files.StagedParquetFile(table, UPath(root / "staged.parquet"))
            if not hash_first:
                arrow_files.fingerprint_stored(table, "pandas")
            staged.finish({"ubunye.writer": "pandas"})

        parts = {
            "read: pq.read_table(path).to_pandas()": lambda: pq.read_table(str(stored)).to_pandas(),
            "read: bytes in memory, blake3 in a thread beside the decode": lambda: read_stored(
                stored, digest_with="blake3"
            ).table.to_pandas(),
            "read: bytes in memory, no digest": lambda: read_stored(stored).table.to_pandas(),
            "digest of the file: blake3": lambda: blake3.blake3(data).digest(),
            "digest of the file: hashlib sha256": lambda: hashlib.sha256(data).digest(),
            "write: rows-v1 alone": lambda: arrow_files.fingerprint_stored(table, "pandas"),
            "write: pq.write_table alone": lambda: pq.write_table(table, str(root / "p.parquet")),
            "write: rows-v1, then the staged file": lambda: staged_write(True),
            "write: the staged file in a thread beside rows-v1": lambda: staged_write(False),
        }
        times: dict[str, list[float]] = {name: [] for name in parts}
        for repeat in range(repeats + 1):
            for name in parts if repeat % 2 == 0 else reversed(list(parts)):
                started = time.perf_counter()
                parts[name]()
                if repeat:
                    times[name].append(time.perf_counter() - started)
    print(f"parts ({len(data) / 1e6:.1f} MB Parquet file), medians of {repeats}:")
    for name, values in times.items():
        print(f"  {name:<62} {statistics.median(values):6.3f}s")


def main(argv: list[str] | None = None) -> int:
    """Build the table, alternate the IO managers `repeats` times, print medians and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--parts", action="store_true", help="time the read and write parts outside Dagster"
    )
    args = parser.parse_args(argv)

    frame = seven_column_table(args.rows)
    if args.parts:
        print(machine())
        measure_parts(frame, args.repeats)
        return 0
    times, wrong = measure(frame, args.repeats)
    med = {key: statistics.median(values) for key, values in times.items()}
    print(machine())
    print(
        f"{args.rows:,} rows x {frame.shape[1]} columns, {args.repeats} alternating repeats "
        f"(after one warm-up), medians of whole materialize() calls:"
    )
    for label, base, ours in (
        ("write", "parquet write", "ubunye write"),
        ("read", "parquet read", "ubunye read"),
        ("read, rows", "parquet read", "ubunye read, rows"),
    ):
        print(
            f"  {label:<10}  parquet UPathIOManager {med[base]:6.3f}s   UbunyeIOManager "
            f"{med[ours]:6.3f}s   ratio {med[ours] / med[base]:4.2f}x   "
            f"(+{med[ours] - med[base]:.3f}s)"
        )
    floor = med["parquet write"] - med["plain write"] + med["hash alone"]
    print(
        f"  rows-v1 of the table alone: {med['hash alone']:.3f}s (inside the write, beside the "
        f"Parquet encoding: {med['hash']:.3f}s); the plain Parquet write alone: "
        f"{med['plain write']:.3f}s"
    )
    print(
        f"  write floor (plain materialise - its Parquet write + the hash alone): {floor:.3f}s; "
        f"UbunyeIOManager write {med['ubunye write'] / floor:4.2f}x the floor "
        f"(overhead beyond the hash {100 * (med['ubunye write'] / floor - 1):+.0f}%)"
    )
    outside = med["ubunye write"] - med["hash"]
    floor_inside = floor - med["hash alone"] + med["hash"]
    print(
        f"  UbunyeIOManager write outside its hash: {outside:.3f}s against "
        f"{med['parquet write'] - med['plain write']:.3f}s of the plain materialise outside its "
        f"Parquet write ({100 * (med['ubunye write'] / floor_inside - 1):+.0f}% over the floor "
        "taken with the hash as timed inside the write)"
    )
    plain_run = med["set-up plain"]
    glue, dagster = (1000 * (med[key] - plain_run) for key in ("set-up ubunye", "set-up dagster"))
    print(
        f"  a run whose asset stores nothing: parquet UPathIOManager {plain_run:.3f}s; "
        f"UbunyeIOManager {glue:+.1f} ms; its do-nothing subclass (Dagster setting up the same "
        f"fields and nested resource) {dagster:+.1f} ms"
    )
    digests = {key.split(":", 1)[1] for key in times if key.startswith("digest ")}
    if len(digests) != 1:
        wrong.append(f"written and hashed alone: {sorted(digests)}")
    bases = sorted({key.split(":", 1)[1] for key in times if key.startswith("basis read:")})
    rows_bases = sorted(
        {key.split(":", 1)[1] for key in times if key.startswith("basis read, rows:")}
    )
    print(
        f"  digests equal (written, hashed alone, read back): {'yes' if not wrong else 'NO'} "
        f"(hash_basis of the read: {', '.join(bases)}; with verify_reads='rows': "
        f"{', '.join(rows_bases)})"
    )
    for line in wrong:
        print(f"  DIFFERENT {line}")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
