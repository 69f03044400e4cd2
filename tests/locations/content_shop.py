"""The code location of the run-what-changed test and bench: ``N`` sources (Parquet files), each
read by a chain of ``DEPTH`` assets, neighbouring chains joined (``pair_<i>``) and one
``report`` over every pair, all stored through ``UbunyeIOManager``, and the automation daemon's
sensor ticking every few seconds.

Settings, from the environment: ``$UBUNYE_CONTENT_SHOP_DIR`` (sources under ``sources/``, data
and records under it), ``$UBUNYE_CONTENT_SHOP_SOURCES`` (3), ``$UBUNYE_CONTENT_SHOP_DEPTH`` (2),
``$UBUNYE_CONTENT_SHOP_MODE``: ``content`` (sources observed by their rows,
``on_content_change()``) or ``eager`` (sources observed by their files' modification times, as
a project without receipts would, and ``AutomationCondition.eager()``), and
``$UBUNYE_CONTENT_SHOP_EXECUTOR``: ``in_process`` or ``multiprocess``, and
``$UBUNYE_CONTENT_SHOP_TICK`` (5): the automation sensor's ``minimum_interval_seconds``.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import dagster as dg
import pandas as pd

from ubunye_dagster import with_ubunye
from ubunye_dagster.automation import on_content_change

DIR_ENV = "UBUNYE_CONTENT_SHOP_DIR"
SOURCES_ENV = "UBUNYE_CONTENT_SHOP_SOURCES"
DEPTH_ENV = "UBUNYE_CONTENT_SHOP_DEPTH"
MODE_ENV = "UBUNYE_CONTENT_SHOP_MODE"
EXECUTOR_ENV = "UBUNYE_CONTENT_SHOP_EXECUTOR"
TICK_ENV = "UBUNYE_CONTENT_SHOP_TICK"
#: The automation sensor's name and its default interval.
SENSOR = "content_automation"
SENSOR_INTERVAL_SECONDS = 5


def source_key(index: int) -> dg.AssetKey:
    return dg.AssetKey(["raw", f"source_{index}"])


def source_path(folder: Path, index: int) -> Path:
    return folder / "sources" / f"source_{index}.parquet"


def step_key(index: int, level: int) -> dg.AssetKey:
    return dg.AssetKey(f"chain_{index}_{level}")


def pair_key(index: int) -> dg.AssetKey:
    return dg.AssetKey(f"pair_{index}")


REPORT = dg.AssetKey("report")


def _chain(index: int, depth: int, path: Path) -> list[dg.AssetsDefinition]:
    """Source ``index`` read, then summed by region and scaled, one asset per level."""

    @dg.asset(key=step_key(index, 0), deps=[source_key(index)])
    def read() -> pd.DataFrame:
        return pd.read_parquet(path).sort_values("order_id").reset_index(drop=True)

    return [read, *(_level(index, level) for level in range(1, depth))]


def _level(index: int, level: int) -> dg.AssetsDefinition:
    @dg.asset(key=step_key(index, level), ins={"rows": dg.AssetIn(step_key(index, level - 1))})
    def step(rows: pd.DataFrame) -> pd.DataFrame:
        totals = rows.groupby("region", as_index=False)["amount"].sum()
        return totals.assign(amount=totals["amount"] * level)

    return step


def _pair(index: int, depth: int) -> dg.AssetsDefinition:
    ins = {
        "left": dg.AssetIn(step_key(index, depth - 1)),
        "right": dg.AssetIn(step_key(index + 1, depth - 1)),
    }

    @dg.asset(key=pair_key(index), ins=ins)
    def pair(left: pd.DataFrame, right: pd.DataFrame) -> pd.DataFrame:
        joined = left.merge(right, on="region", how="outer", suffixes=("_left", "_right"))
        return joined.fillna(0).sort_values("region").reset_index(drop=True)

    return pair


def _report(pairs: int) -> dg.AssetsDefinition:
    ins = {f"pair_{index}": dg.AssetIn(pair_key(index)) for index in range(pairs)}

    @dg.asset(key=REPORT, ins=ins)
    def report(**frames: pd.DataFrame) -> pd.DataFrame:
        sums = [frame.drop(columns="region").to_numpy().sum() for frame in frames.values()]
        return pd.DataFrame({"pair": list(frames), "total": sums})

    return report


def graph(folder: Path, sources: int, depth: int) -> list[dg.AssetsDefinition]:
    """Every asset below the sources: ``sources * depth + (sources - 1) + 1`` of them."""
    assets = [a for i in range(sources) for a in _chain(i, depth, source_path(folder, i))]
    assets += [_pair(i, depth) for i in range(sources - 1)]
    return [*assets, _report(sources - 1)]


def _observed_by_modification_time(index: int, path: Path) -> dg.AssetsDefinition:
    """A source observed as Dagster's documentation shows: its file's modification time."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=dg.BetaWarning)

        @dg.observable_source_asset(key=source_key(index))
        def observed() -> dg.DataVersion:
            return dg.DataVersion(str(path.stat().st_mtime_ns))

    return observed


def definitions(
    folder: Path,
    sources: int,
    depth: int,
    mode: str,
    executor: str,
    tick_seconds: int = SENSOR_INTERVAL_SECONDS,
) -> dg.Definitions:
    """The location's definitions (see the module's docstring)."""
    chosen = dg.in_process_executor if executor == "in_process" else dg.multiprocess_executor
    with warnings.catch_warnings():
        # on_content_change() reads provenance where the definitions are loaded (a beta flag).
        warnings.simplefilter("ignore", category=dg.BetaWarning)
        sensor = dg.AutomationConditionSensorDefinition(
            SENSOR,
            target=dg.AssetSelection.all(),
            default_status=dg.DefaultSensorStatus.RUNNING,
            minimum_interval_seconds=tick_seconds,
            use_user_code_server=mode == "content",
        )
    below = graph(folder, sources, depth)
    settings = {"usecase_dir": str(folder), "base_path": str(folder / "data"), "drift_sensor": None}
    if mode == "content":
        specs = [dg.AssetSpec(source_key(i)) for i in range(sources)]
        observe = {
            source_key(i).to_user_string(): {"path": str(source_path(folder, i))}
            for i in range(sources)
        }
        defs = dg.Definitions(assets=[*specs, *below], sensors=[sensor], executor=chosen)
        return with_ubunye(defs, observe=observe, automation=on_content_change(), **settings)
    observed = [_observed_by_modification_time(i, source_path(folder, i)) for i in range(sources)]
    defs = dg.Definitions(assets=[*observed, *below], sensors=[sensor], executor=chosen)
    return with_ubunye(defs, automation=dg.AutomationCondition.eager(), **settings)


def from_environment() -> dg.Definitions:
    """The definitions the environment describes."""
    return definitions(
        Path(os.environ[DIR_ENV]),
        int(os.environ.get(SOURCES_ENV, "3")),
        int(os.environ.get(DEPTH_ENV, "2")),
        os.environ.get(MODE_ENV, "content"),
        os.environ.get(EXECUTOR_ENV, "in_process"),
        int(os.environ.get(TICK_ENV, str(SENSOR_INTERVAL_SECONDS))),
    )


if DIR_ENV in os.environ:
    defs = from_environment()
