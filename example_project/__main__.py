"""`python -m example_project`: materialise every asset, raise some prices, build the dbt models
before and after a seed changes, then print lineage traces and the rows each change moved."""

from __future__ import annotations

import os
import shlex
import sys
import time
from pathlib import Path

from example_project.paths import OPENLINEAGE_CONFIG, PROJECT_DIR, data_dir, example_home
from example_project.run import (
    TRACED_ASSET,
    TRACED_DBT_MODEL,
    build_dbt_before_and_after_a_seed_change,
    dbt_diff_command,
    diff_command,
    materialise_all,
    open_instance,
    raise_prices,
    trace_command,
)
from ubunye_core.cli import main as ubunye_dagster_cli


def use_example_openlineage(home: Path) -> None:
    """Point OpenLineage at the example's file transport (openlineage.yml), unless it is
    configured already or the data goes elsewhere (its file path is the repository's)."""
    configured = any(name in os.environ for name in ("OPENLINEAGE_CONFIG", "OPENLINEAGE_URL"))
    if configured or home != PROJECT_DIR or Path.cwd().resolve() != PROJECT_DIR.parent:
        return
    (PROJECT_DIR / ".ubunye").mkdir(exist_ok=True)
    os.environ["OPENLINEAGE_CONFIG"] = str(OPENLINEAGE_CONFIG)


def main() -> int:
    """Run the example end to end in this process; the trace command's exit code."""
    home = example_home()
    use_example_openlineage(home)
    started = time.perf_counter()
    print(f"Materialising the example shop into {home} ...", flush=True)
    with open_instance() as instance:
        results = materialise_all(home, instance, report=lambda line: print(line, flush=True))
        results.append(raise_prices(home, instance, report=lambda line: print(line, flush=True)))
        # The dbt models, built, then built again after one seed changes.
        results += build_dbt_before_and_after_a_seed_change(
            home, instance, report=lambda line: print(line, flush=True)
        )
    materialised = sum(len(result.get_asset_materialization_events()) for result in results)
    print(
        f"\n{materialised} materialisations in {len(results)} runs "
        f"({time.perf_counter() - started:.1f}s): data in {data_dir(home)}, "
        f"receipts in {home / '.ubunye' / 'lineage'}\n"
    )
    arguments = trace_command(home, TRACED_ASSET)
    print(f"$ ubunye-dagster {shlex.join(arguments)}")
    code = ubunye_dagster_cli(arguments)
    # Which rows the price rise changed (exit status 1: the versions differ, as it should).
    arguments = diff_command(home)
    print(f"\n$ ubunye-dagster {shlex.join(arguments)}")
    if ubunye_dagster_cli(arguments) != 1:
        return 1
    arguments = trace_command(home, TRACED_DBT_MODEL)
    print(f"\n$ ubunye-dagster {shlex.join(arguments)}")
    code = code or ubunye_dagster_cli(arguments)
    # Which rows the seed change moved downstream (exit status 1 again).
    arguments = dbt_diff_command(home)
    print(f"\n$ ubunye-dagster {shlex.join(arguments)}")
    return code if ubunye_dagster_cli(arguments) == 1 else 1


if __name__ == "__main__":
    sys.exit(main())
