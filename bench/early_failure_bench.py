"""The channels for the `error` record of a step that fails before it touches the IO manager:
what each costs on runs that succeed, and whether each records a failure under `dg.materialize`.

    python bench/early_failure_bench.py [--assets 10] [--repeats 5]

Channels: "none" (UbunyeIOManager alone: the baseline), "hook" (a failure hook on every asset
definition: `with_error_records`, `with_ubunye`), "teardown" (the IO manager's teardown reads
this process's step failures from the event log: the component's channel), and "run sensor" (a
run-failure sensor, evaluated only by the daemon). Each measurement is one whole
`dagster.materialize` of `--assets` small assets on one ephemeral instance, channels alternating.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import dagster as dg
import pandas as pd
from figures import medians_against, whole_number_options
from io_manager_bench import QUIET, machine

from ubunye_core.store import LineageStore
from ubunye_dagster import UbunyeIOManager, UbunyeResource, with_error_records
from ubunye_dagster.receipts.early_failures import forget_watched, watch_early_failures

SENSOR_EVALUATIONS = {"n": 0}


def small_assets(count: int, failing: bool) -> list[dg.AssetsDefinition]:
    """``count`` independent assets of 100 rows; the first fails at once when ``failing``."""

    def make(index: int) -> dg.AssetsDefinition:
        @dg.asset(name=f"part_{index}")
        def part() -> pd.DataFrame:
            if failing and index == 0:
                raise ConnectionError("source unreachable")
            return pd.DataFrame({"n": range(100)})

        return part

    return [make(index) for index in range(count)]


@dg.run_failure_sensor(name="error_record_sensor")
def error_record_sensor(context: dg.RunFailureSensorContext) -> None:
    SENSOR_EVALUATIONS["n"] += 1  # would build the record from the event log here


def materialise(channel: str, root: Path, count: int, failing: bool) -> tuple[float, int]:
    """One materialisation under ``channel``: its seconds and the error records it left."""
    manager = UbunyeIOManager(
        base_path=str(root / "data"), ubunye=UbunyeResource(usecase_dir=str(root))
    )
    assets = small_assets(count, failing)
    if channel == "hook":
        assets = with_error_records(assets)
    if channel == "teardown":
        watch_early_failures(assets, place_settings=manager.resource.model_dump_json())
    started = time.perf_counter()
    dg.materialize(
        assets, resources={"io_manager": manager}, run_config=QUIET, raise_on_error=False
    )
    seconds = time.perf_counter() - started
    forget_watched()  # the other channels' runs read no event
    records = LineageStore.for_usecase_dir(root).list_runs("dagster/default/part_0")
    errors = sum(1 for r in records if r.status == "error")
    if channel == "run sensor":
        errors += SENSOR_EVALUATIONS["n"]
    return seconds, errors


def main(argv: list[str] | None = None) -> int:
    args = whole_number_options(__doc__, argv, assets=10, repeats=5)
    print(machine())
    channels = ["none", "hook", "teardown", "run sensor"]
    timings: dict[str, list[float]] = {channel: [] for channel in channels}
    recorded: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as folder:
        for repeat in range(args.repeats + 1):
            for channel in channels:
                root = Path(folder) / f"{channel}-{repeat}"
                seconds, _ = materialise(channel, root, args.assets, failing=False)
                if repeat:  # the first round warms imports and caches
                    timings[channel].append(seconds)
        for channel in channels:
            _, recorded[channel] = materialise(channel, Path(folder) / channel, 2, failing=True)
    print(f"{args.assets} assets per run, median of {args.repeats} runs that succeed:")
    for channel, (median, of_none) in medians_against(timings, "none").items():
        print(
            f"  {channel:<10} {median:7.3f} s  x{of_none:.3f}   early failure recorded "
            f"under dg.materialize: {'yes' if recorded[channel] else 'no'}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
