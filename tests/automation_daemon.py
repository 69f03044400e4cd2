"""Simulated days under Dagster's automation daemon: ``dagster-daemon run`` over the code location
``tests/locations/content_shop.py`` (SQLite storage in a temporary ``DAGSTER_HOME``), sources
rewritten each day (some with new rows, the rest with the same rows), observed in this process,
and the daemon left to request what its conditions ask for until it settles.

Shared by ``tests/system/test_run_what_changed.py`` and ``bench/run_what_changed_bench.py``.
Reads the automation sensor's ticks through the instance (Dagster internals, as the daemon
writes them).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import dagster as dg
import pandas as pd
import yaml
from deployment_services import ServiceProcess, daemon_process, wait_for, write_workspace

LOCATION = Path(__file__).resolve().parent / "locations" / "content_shop.py"
#: The checkout: its packages come first on the daemon's path, as on this process's.
ROOT = LOCATION.parents[2]
sys.path.insert(0, str(LOCATION.parent))
import content_shop as shop  # noqa: E402

ROWS_PER_SOURCE = 40
REGIONS = ("north", "south", "east", "west")
#: Automation ticks that must find nothing to request, after the last run ended, to call a day
#: settled.
QUIET_TICKS = 2


def source_rows(index: int, day: int) -> pd.DataFrame:
    """Source ``index``'s rows as they stand on ``day`` (they move only on the days it changes)."""
    ids = range(ROWS_PER_SOURCE)
    return pd.DataFrame(
        {
            "order_id": list(ids),
            "region": [REGIONS[(i + index) % len(REGIONS)] for i in ids],
            "amount": [(i * 7 + index * 3 + day) % 101 for i in ids],
        }
    )


@dataclass
class Shop:
    """One folder of sources, data and records, and the version of each source's rows."""

    folder: Path
    sources: int
    depth: int
    mode: str = "content"
    executor: str = "in_process"
    #: How often the automation sensor ticks, at most (seconds).
    tick_seconds: int = shop.SENSOR_INTERVAL_SECONDS
    #: The day each source's rows were last changed.
    versions: dict[int, int] = field(default_factory=dict)

    def environment(self) -> dict[str, str]:
        return {
            shop.DIR_ENV: str(self.folder),
            shop.SOURCES_ENV: str(self.sources),
            shop.DEPTH_ENV: str(self.depth),
            shop.MODE_ENV: self.mode,
            shop.EXECUTOR_ENV: self.executor,
            shop.TICK_ENV: str(self.tick_seconds),
        }

    def definitions(self) -> dg.Definitions:
        return shop.definitions(self.folder, self.sources, self.depth, self.mode, self.executor)

    def write_day(self, day: int, changed: set[int]) -> None:
        """Every source written again: those in ``changed`` with new rows, the others with the
        rows they had, in another order."""
        (self.folder / "sources").mkdir(parents=True, exist_ok=True)
        for index in range(self.sources):
            if index in changed or index not in self.versions:
                self.versions[index] = day
            rows = source_rows(index, self.versions[index])
            rows = rows.sample(frac=1.0, random_state=day)  # same rows, another order
            rows.to_parquet(shop.source_path(self.folder, index), index=False)

    def assets(self) -> list[dg.AssetKey]:
        """Every asset below the sources."""
        return [key for a in shop.graph(self.folder, self.sources, self.depth) for key in a.keys]

    def cone(self, changed: set[int]) -> set[dg.AssetKey]:
        """The assets downstream of the sources in ``changed``."""
        graph = self.definitions().resolve_asset_graph()
        found: set[dg.AssetKey] = set()
        for index in changed:
            found |= graph.get(shop.source_key(index)).child_keys
        frontier = set(found)
        while frontier:
            frontier = {c for key in frontier for c in graph.get(key).child_keys} - found
            found |= frontier
        return found

    def execute(self, instance: dg.DagsterInstance, selection: dg.AssetSelection) -> None:
        """Run ``selection`` in this process on ``instance``."""
        job = dg.define_asset_job("in_process_run", selection=selection)
        runnable = dg.Definitions.merge(self.definitions(), dg.Definitions(jobs=[job]))
        result = runnable.resolve_job_def("in_process_run").execute_in_process(instance=instance)
        assert result.success

    def observe(self, instance: dg.DagsterInstance) -> None:
        """Observe every source once, as a schedule or the UI's Observe would."""
        keys = [shop.source_key(index) for index in range(self.sources)]
        self.execute(instance, dg.AssetSelection.assets(*keys))


def materialisations(instance: dg.DagsterInstance, key: dg.AssetKey) -> int:
    return len(instance.fetch_materializations(key, limit=1000).records)


def data_version(instance: dg.DagsterInstance, key: dg.AssetKey) -> str | None:
    [record] = instance.fetch_materializations(key, limit=1).records
    return record.asset_materialization.tags.get("dagster/data_version")


@dataclass
class Daemon:
    """The daemon over the shop, the instance it shares with this process, and the runs so far."""

    shop: Shop
    instance: dg.DagsterInstance
    process: ServiceProcess

    def _ticks(self) -> list:
        from dagster._core.definitions.run_request import InstigatorType

        states = [
            state
            for state in self.instance.all_instigator_state(instigator_type=InstigatorType.SENSOR)
            if state.name == shop.SENSOR
        ]
        if not states:
            return []
        [state] = states
        return list(
            self.instance.get_ticks(state.instigator_origin_id, state.selector_id, limit=20)
        )

    def _settled_at(self, since: float) -> float | None:
        """When the last run since ``since`` ended, once nothing runs and the automation sensor
        has since ticked ``QUIET_TICKS`` times requesting nothing; None before that."""
        records = self.instance.get_run_records(dg.RunsFilter(created_after=_utc(since)))
        if any(record.dagster_run.status not in _FINISHED for record in records):
            return None
        ended = max((record.end_time or since for record in records), default=since)
        quiet = [
            tick
            for tick in self._ticks()
            if tick.timestamp > ended and tick.is_completed and not tick.run_ids
        ]
        return ended if len(quiet) >= QUIET_TICKS else None

    def settle(self, since: float, timeout: float) -> float:
        """Wait until the daemon has run everything it requests after ``since``; the seconds from
        ``since`` to the end of the last run. A TimeoutError ends with the daemon's log."""
        try:
            ended = wait_for(
                "the automation daemon to settle",
                lambda: self._settled_at(since),
                timeout,
                interval=1,
            )
        except TimeoutError as late:
            raise TimeoutError(f"{late}\n{self.process.log_tail()}") from None
        return ended - since

    def day(self, day: int, changed: set[int], timeout: float = 300) -> float:
        """Write the day's sources, observe them, wait for the daemon; the seconds it took."""
        self.shop.write_day(day, changed)
        started = time.time()
        self.shop.observe(self.instance)
        return self.settle(started, timeout)

    def failed_runs(self) -> list[str]:
        return [
            record.dagster_run.run_id
            for record in self.instance.get_run_records()
            if record.dagster_run.status == dg.DagsterRunStatus.FAILURE
        ]


_FINISHED = {dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED}


def _utc(epoch: float):
    from datetime import datetime, timezone

    return datetime.fromtimestamp(epoch, tz=timezone.utc)


@contextmanager
def daemon_over(shop_: Shop, quick: bool = False) -> Iterator[Daemon]:
    """``dagster-daemon run`` over the shop's code location, on a DAGSTER_HOME in its folder,
    stopped whatever happens; the sources written for day 0 first. ``quick``: the run queue hands
    out runs every second (Dagster's default: 5 s) and the automation daemon's loop turns every
    ``shop_.tick_seconds`` (Dagster's: 5 s, tests/quick_daemon.py; it evaluates the eager
    shop's sensor, while the content shop's, evaluated with the definitions, ticks in the
    sensor loop)."""
    home = shop_.folder / "dagster_home"
    home.mkdir(parents=True, exist_ok=True)
    config: dict = {"telemetry": {"enabled": False}, "nux": {"enabled": False}}
    if quick:
        config["run_coordinator"] = {
            "module": "dagster.core.run_coordinator",
            "class": "QueuedRunCoordinator",
            "config": {"dequeue_interval_seconds": 1},
        }
    (home / "dagster.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    workspace = write_workspace(
        shop_.folder, LOCATION, "content_shop", LOCATION.parent, Path(sys.executable)
    )
    env = {**os.environ, **shop_.environment(), "DAGSTER_HOME": str(home)}
    env["DAGSTER_DISABLE_TELEMETRY"] = "1"
    env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT), str(ROOT / "rows"), *filter(None, [os.environ.get("PYTHONPATH")])]
    )
    shop_.write_day(0, set())
    loops = {"automation": shop_.tick_seconds} if quick else None
    process = daemon_process(workspace, env, shop_.folder / "daemon.log", loops)
    with dg.DagsterInstance.from_config(str(home)) as instance:
        process.start()
        try:
            yield Daemon(shop_, instance, process)
        finally:
            process.stop()
