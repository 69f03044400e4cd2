"""Materialise the whole example in this process, then print the trace of one asset."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import dagster as dg

from example_project.definitions import DAILY_JOB, MAIN_JOB, USECASE, build_definitions

#: The days the quick start materialises: the first with the main job, the others alone.
DAYS = ("2024-01-01", "2024-01-02", "2024-01-03")
#: The asset whose trace the quick start prints.
TRACED_ASSET = "sales/order_lines"


def materialise_all(
    home: Path, instance: dg.DagsterInstance, days: Sequence[str] = DAYS
) -> list[dg.ExecuteInProcessResult]:
    """Run the main job for the first day and the daily job for the others; raise on failure."""
    defs = build_definitions(home)
    results = [
        defs.resolve_job_def(MAIN_JOB).execute_in_process(instance=instance, partition_key=days[0])
    ]
    daily = defs.resolve_job_def(DAILY_JOB)
    results += [daily.execute_in_process(instance=instance, partition_key=day) for day in days[1:]]
    return results


def open_instance() -> dg.DagsterInstance:
    """The instance under $DAGSTER_HOME when it is set (so `dagster dev` shows the runs), else a
    throw-away one."""
    return (
        dg.DagsterInstance.get()
        if os.environ.get("DAGSTER_HOME")
        else dg.DagsterInstance.ephemeral()
    )


def trace_command(home: Path, asset: str = TRACED_ASSET) -> list[str]:
    """The `ubunye-dagster` arguments that print the latest trace of `asset`."""
    return ["lineage", "trace", "-d", str(home), "-u", USECASE, "--asset", asset]
