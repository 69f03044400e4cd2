"""What a drift sensor tick costs over a Postgres event log holding thousands of materialisations.

    python bench/sensor_tick_bench.py [--levels 1000,5000,10000] [--assets 50] [--new 5]
                                      [--fill-threads 8]

A temporary PostgreSQL cluster on 127.0.0.1 (``tests/postgres_cluster.py``) backs a
DagsterInstance (``dagster_postgres`` run, event log and schedule storage). Two real
materialisations of one asset declared deterministic through UbunyeIOManager (different
random rows, so the second drifted) give the metadata, tags and run records the sensor judges;
the event log is then filled with materialisations reported to the instance, round-robin over
``--assets`` asset keys: each asset repeats the first receipt (reproduced), but one asset
alternates the two (flagged every time, with the changed rows read from the two run records).
Each round of one materialisation per asset is reported on ``--fill-threads`` threads (Dagster
opens a connection per statement), one round after another, so every asset's materialisations
stay in order and the assets interleave in the event log.
At each level the bench times, with Dagster's own `build_sensor_context` and the sensor from
`build_drift_sensor()` (watching every asset with Ubunye metadata, its defaults: at most 200
materialisations a tick, 30 s budget):

- the first tick from an empty cursor (what it judges, the tick's seconds, the peak of Python's
  allocations during it by tracemalloc), and storing its check evaluations as the daemon does;
- at the last level, every tick until the cursor has caught up (median and slowest): it must judge
  every materialisation but the already reported ones, or the bench exits with status 1;
- a steady tick: ``--new`` new materialisations after a caught-up cursor;
- at the last level, where a first tick's time goes (cProfile): the event log queries of
  finding what is new and of each asset's previous materialisation, the connections Dagster
  opens for them, the SQL, deserialising the events, and everything else.

The resident set size after each level shows whether memory grows with the event log. The load
average is printed before and after.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import pstats
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import dagster as dg
import numpy as np
import pandas as pd
import yaml

HERE = Path(__file__).resolve().parent
QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
#: The asset whose two real materialisations every reported one copies.
SAMPLE = "sample"


def sample_materialisations(root: Path) -> list[dg.AssetMaterialization]:
    """Two materialisations of a 2,000-row asset through UbunyeIOManager, records under
    ``root``; the rows differ between them (a non-deterministic asset)."""
    from ubunye_dagster import UbunyeIOManager, UbunyeResource

    seeds = iter([1, 2])

    # Declared deterministic, so a change in its rows is flagged (it reads no asset).
    @dg.asset(name=SAMPLE, metadata={"ubunye/deterministic": True})
    def sample() -> pd.DataFrame:
        rng = np.random.default_rng(next(seeds))
        return pd.DataFrame({"id": np.arange(2_000), "value": rng.normal(size=2_000)})

    manager = UbunyeIOManager(
        base_path=str(root / "data"), ubunye=UbunyeResource(usecase_dir=str(root))
    )
    found = []
    with dg.DagsterInstance.ephemeral() as instance:
        for _ in range(2):
            result = dg.materialize(
                [sample], resources={"io_manager": manager}, instance=instance, run_config=QUIET
            )
            (event,) = result.get_asset_materialization_events()
            found.append(event.materialization)
    return found


def postgres_instance(home: Path, storage: dict) -> dg.DagsterInstance:
    """A DagsterInstance whose dagster.yaml keeps everything in the cluster."""
    (home / "dagster.yaml").write_text(
        yaml.safe_dump({"storage": {"postgres": {"postgres_db": storage}}}), encoding="utf-8"
    )
    return dg.DagsterInstance.from_config(str(home))


def report(
    instance: dg.DagsterInstance,
    samples: list[dg.AssetMaterialization],
    keys: list[dg.AssetKey],
    start: int,
    stop: int,
    threads: int = 8,
) -> float:
    """Report materialisations ``start`` to ``stop`` (round-robin over ``keys``; the first key
    alternates the two samples, the others repeat the first), a round of ``len(keys)`` at a time
    on ``threads`` threads; returns the seconds it took."""

    def one(index: int) -> None:
        key = keys[index % len(keys)]
        turn = index // len(keys)
        copied = samples[turn % 2] if key == keys[0] else samples[0]
        instance.report_runless_asset_event(
            dg.AssetMaterialization(asset_key=key, metadata=copied.metadata, tags=copied.tags)
        )

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=threads) as pool:
        round_start = start
        while round_start < stop:
            # A round holds each key once, so no asset's two materialisations race; a round
            # that starts mid-way through the keys ends at the last key.
            round_stop = min(stop, (round_start // len(keys) + 1) * len(keys))
            list(pool.map(one, range(round_start, round_stop)))
            round_start = round_stop
    return time.perf_counter() - started


def tick(
    sensor: dg.SensorDefinition,
    instance: dg.DagsterInstance,
    definitions: dg.Definitions,
    cursor: str | None,
) -> tuple[float, dg.SensorResult]:
    """One evaluation of the sensor at ``cursor``: its seconds and its result."""
    context = dg.build_sensor_context(instance=instance, cursor=cursor, definitions=definitions)
    started = time.perf_counter()
    result = sensor(context)
    return time.perf_counter() - started, result


def traced_peak(run: Callable[[], object]) -> float:
    """Peak MiB of Python allocations while ``run`` runs (tracemalloc; slows the run down)."""
    gc.collect()
    tracemalloc.start()
    try:
        run()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def resident_mib() -> float:
    """This process's resident set size in MiB (``/proc/self/status``)."""
    for line in Path("/proc/self/status").read_text(encoding="utf-8").splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def judged(result: dg.SensorResult) -> tuple[int, int]:
    """(materialisations judged, flagged) by a tick, from its check evaluations."""
    evaluations = result.asset_events or []
    return len(evaluations), sum(1 for item in evaluations if not item.passed)


def measured_tick(sensor, instance, definitions, cursor: str | None) -> tuple[dg.SensorResult, str]:
    """One tick at ``cursor``, and its figures: seconds, materialisations judged (flagged), and
    the peak Python allocations of the same tick again (traced, so not timed)."""
    took, result = tick(sensor, instance, definitions, cursor)
    count, flagged = judged(result)
    peak = traced_peak(lambda: tick(sensor, instance, definitions, cursor))
    return result, (
        f"{took:6.3f}s, judged {count} ({flagged} flagged); peak Python allocations {peak:6.1f} MiB"
    )


def store_evaluations(instance: dg.DagsterInstance, result: dg.SensorResult) -> float:
    """Seconds to store a tick's check evaluations in the event log, as the daemon does."""
    started = time.perf_counter()
    for evaluation in result.asset_events or []:
        instance.report_runless_asset_event(evaluation)
    return time.perf_counter() - started


#: Where a tick's time goes: (part, the profiled function's file suffix and name).
TICK_PARTS = (
    (
        "finding what is new (one query per asset)",
        "ubunye_dagster/drift/sensor.py",
        "_pending_records",
    ),
    (
        "each asset's previous materialisation",
        "ubunye_dagster/drift/previous_materialisation.py",
        "previous_record",
    ),
    ("  of which opening connections", "~", "<built-in method psycopg2._psycopg._connect>"),
    ("  of which the SQL", "~", "<method 'execute' of 'psycopg2.extensions.cursor' objects>"),
    ("  of which deserialising events", "dagster_shared/serdes/serdes.py", "deserialize_value"),
    (
        "the changed rows of a flagged one",
        "ubunye_dagster/drift/sensor.py",
        "_changed_rows_metadata",
    ),
)


def tick_profile(sensor, instance, definitions, cursor: str | None) -> list[str]:
    """One tick under cProfile: the whole tick's seconds, then each part's cumulative seconds
    and calls (the parts marked "of which" are summed over both queries above them)."""
    profile = cProfile.Profile()
    profile.enable()
    took, _ = tick(sensor, instance, definitions, cursor)
    profile.disable()
    stats = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    lines = [f"    where a first tick's time goes (cProfile, {took:.3f}s in all):"]
    for part, file_suffix, name in TICK_PARTS:
        found = [
            (calls, cumulative)
            for (file, _, function), (_, calls, _, cumulative, _) in stats.items()
            if function == name and file.endswith(file_suffix)
        ]
        calls = sum(item[0] for item in found)
        seconds = sum(item[1] for item in found)
        lines.append(f"      {part:<44} {seconds:6.3f}s  ({calls} calls)")
    return lines


def catch_up(
    sensor, instance, definitions, cursor: str | None
) -> tuple[list[float], int, str | None]:
    """Tick until nothing is new; the seconds of every tick that moved the cursor, how many
    materialisations they judged in all, and the final cursor."""
    seconds: list[float] = []
    count = 0
    while True:
        took, result = tick(sensor, instance, definitions, cursor)
        if result.cursor == cursor:
            return seconds, count, cursor
        cursor = result.cursor
        seconds.append(took)
        count += judged(result)[0]


def measure_level(args, sensor, instance, definitions, samples, keys, reported: int, level: int):
    """Fill the event log to ``level``, time the ticks of that level and print them."""
    filled = report(instance, samples, keys, reported, level, args.fill_threads)
    print(f"  {level:>6,} materialisations ({filled:.1f}s to report {level - reported:,}):")
    first, figures = measured_tick(sensor, instance, definitions, None)
    print(f"    first tick, empty cursor: {figures}")
    if level == args.levels[-1]:
        count = judged(first)[0]
        print("\n".join(tick_profile(sensor, instance, definitions, None)))
        stored = store_evaluations(instance, first)
        print(f"    storing that tick's {count} check evaluations: {stored:6.3f}s")
        ticks, caught_up, cursor = catch_up(sensor, instance, definitions, None)
        # The stored evaluations' materialisations are already reported: not judged again.
        missed = level - count - caught_up
        print(
            f"    catching up from an empty cursor: {len(ticks)} ticks judged {caught_up:,} of "
            f"{level:,} ({count} already reported; {missed} missed), "
            f"median {statistics.median(ticks):6.3f}s, slowest {max(ticks):6.3f}s"
        )
        if missed:
            raise SystemExit(f"the sensor missed {missed} materialisations catching up")
    else:
        cursor = catch_up(sensor, instance, definitions, None)[2]
    report(instance, samples, keys, level, level + args.new, args.fill_threads)
    figures = measured_tick(sensor, instance, definitions, cursor)[1]
    print(f"    steady tick, {args.new} new: {figures}; resident set {resident_mib():6.1f} MiB")
    return level + args.new


def main(argv: list[str] | None = None) -> int:
    """Start the cluster, fill its event log level by level, and print each level's ticks."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--levels", default="1000,5000,10000")
    parser.add_argument("--assets", type=int, default=50)
    parser.add_argument("--new", type=int, default=5)
    parser.add_argument("--fill-threads", type=int, default=8)
    args = parser.parse_args(argv)
    args.levels = [int(level) for level in args.levels.split(",")]
    sys.path.insert(0, str(HERE.parent / "tests"))
    from io_manager_bench import load_average, machine
    from postgres_cluster import postgres_cluster

    from ubunye_dagster import build_drift_sensor

    sensor = build_drift_sensor()
    keys = [dg.AssetKey(f"asset_{index:03d}") for index in range(args.assets)]
    definitions = dg.Definitions(assets=[dg.AssetSpec(key) for key in keys], sensors=[sensor])
    print(machine())
    print(f"before: {load_average()}", flush=True)
    with tempfile.TemporaryDirectory() as folder, postgres_cluster() as cluster:
        samples = sample_materialisations(Path(folder) / "store")
        with postgres_instance(Path(folder), cluster.dagster_storage_config()) as instance:
            print(
                f"PostgreSQL on 127.0.0.1 (dagster-postgres), {args.assets} assets, "
                f"materialisations reported round-robin; the first asset drifts every time:"
            )
            reported = 0
            for level in args.levels:
                reported = measure_level(
                    args, sensor, instance, definitions, samples, keys, reported, level
                )
    print(f"after: {load_average()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
