"""What the receipt costs a small asset: a job of chained 2,000-row pandas assets materialised
with UbunyeIOManager and with a plain Parquet UPathIOManager, in one process, alternating.

    python bench/chain_bench.py [--assets 60] [--rows 2000] [--repeats 5]

Each measurement is one whole `dagster.materialize` of the chain on one ephemeral instance: the
first asset builds a frame, each next one loads its upstream and returns it with one column
changed, so every step reads one input and writes one output. Printed: the machine, the
medians of wall and CPU time (this process, all threads: the machine may be shared), the
ratios, the extra milliseconds an asset, and whether every recorded input digest is its
upstream's output digest (the exit status is 1 when one is not).
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import dagster as dg
import pandas as pd
from figures import whole_number_options
from io_manager_bench import QUIET, ParquetBaselineIOManager, machine, seven_column_table
from upath import UPath


def chain_assets(first: pd.DataFrame, count: int) -> list[dg.AssetsDefinition]:
    """``step_0`` returns ``first``; ``step_i`` loads ``step_{i-1}`` and bumps its int column."""

    @dg.asset(name="step_0")
    def step_0() -> pd.DataFrame:
        return first

    return chained_after(step_0, count)


def chained_after(step_0: dg.AssetsDefinition, count: int) -> list[dg.AssetsDefinition]:
    """``step_0`` and ``count - 1`` assets after it, ``step_i`` loading ``step_{i-1}`` and
    bumping its int column ``id``."""
    assets = [step_0]
    for index in range(1, count):

        @dg.asset(name=f"step_{index}", ins={"upstream": dg.AssetIn(f"step_{index - 1}")})
        def step(upstream: pd.DataFrame) -> pd.DataFrame:
            return upstream.assign(id=upstream["id"] + 1)

        assets.append(step)
    return assets


def ubunye_manager(root: Path) -> dg.ConfigurableIOManager:
    """UbunyeIOManager with its records under ``root``."""
    from ubunye_dagster import UbunyeIOManager, UbunyeResource

    return UbunyeIOManager(
        base_path=str(root / "ubunye" / "data"),
        ubunye=UbunyeResource(usecase_dir=str(root / "ubunye")),
    )


def timed_chain(assets, manager, instance) -> tuple[float, float, dg.ExecuteInProcessResult]:
    """Wall and CPU seconds (this process, all threads) of one `materialize` of the whole
    chain, and its result."""
    started, cpu = time.perf_counter(), time.process_time()
    result = dg.materialize(
        assets, resources={"io_manager": manager}, instance=instance, run_config=QUIET
    )
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    if not result.success:
        raise RuntimeError("bench run failed")
    return elapsed, cpu, result


def broken_links(result: dg.ExecuteInProcessResult) -> list[str]:
    """Steps whose recorded input digest is not the output digest its upstream recorded."""
    from ubunye_core.records.model import RunRecord

    outputs, inputs = {}, {}
    for event in result.get_asset_materialization_events():
        path = event.materialization.metadata["ubunye/record_path"].value
        record = RunRecord.from_json(Path(path).read_text(encoding="utf-8"))
        name = event.materialization.asset_key.path[-1]
        outputs[name] = record.outputs[0].data_hash
        if record.inputs:
            inputs[name] = record.inputs[0].data_hash
    return [
        f"{name}: input {digest}, upstream wrote {outputs.get(f'step_{int(name[5:]) - 1}')}"
        for name, digest in sorted(inputs.items())
        if digest is None or digest != outputs.get(f"step_{int(name[5:]) - 1}")
    ]


def main(argv: list[str] | None = None) -> int:
    """Alternate the two IO managers ``repeats`` times after one warm-up; print the figures."""
    args = whole_number_options(__doc__, argv, assets=60, rows=2_000, repeats=5)
    assets = chain_assets(seven_column_table(args.rows), args.assets)
    times: dict[str, list[float]] = {"plain": [], "ubunye": [], "plain cpu": [], "ubunye cpu": []}
    wrong: list[str] = []
    with tempfile.TemporaryDirectory() as folder, dg.DagsterInstance.ephemeral() as instance:
        root = Path(folder)
        plain = ParquetBaselineIOManager(base_path=UPath(root / "baseline"))
        for repeat in range(args.repeats + 1):
            order = ["plain", "ubunye"] if repeat % 2 == 0 else ["ubunye", "plain"]
            for side in order:
                manager = plain if side == "plain" else ubunye_manager(root)
                seconds, cpu, result = timed_chain(assets, manager, instance)
                if side == "ubunye":
                    wrong += broken_links(result)
                if repeat > 0:  # the first round warms up: imports, caches
                    times[side].append(seconds)
                    times[f"{side} cpu"].append(cpu)
    med = {side: statistics.median(values) for side, values in times.items()}
    print(machine())
    print(
        f"{args.assets} chained assets of {args.rows:,} rows, {args.repeats} alternating "
        "repeats (after one warm-up), medians of whole materialize() calls:"
    )
    extra = (med["ubunye"] - med["plain"]) / args.assets * 1000
    print(
        f"  parquet UPathIOManager {med['plain']:6.3f}s   UbunyeIOManager {med['ubunye']:6.3f}s"
        f"   ratio {med['ubunye'] / med['plain']:4.2f}x   ({extra:+.1f} ms an asset)"
    )
    cpu_extra = (med["ubunye cpu"] - med["plain cpu"]) / args.assets * 1000
    print(
        f"  CPU of this process:   {med['plain cpu']:6.3f}s   {med['ubunye cpu']:6.3f}s"
        f"   ratio {med['ubunye cpu'] / med['plain cpu']:4.2f}x   ({cpu_extra:+.1f} ms an asset)"
    )
    print(f"  every input digest is its upstream's output digest: {'yes' if not wrong else 'NO'}")
    for line in wrong[:10]:
        print(f"  DIFFERENT {json.dumps(line)}")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
