"""Materialise the whole example in this process, then print the trace of one asset."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

import dagster as dg

from example_project.dbt_models import dbt_working_copy, reset_seeds
from example_project.definitions import (
    DAILY_JOB,
    DBT_JOB,
    MAIN_JOB,
    PRICE_JOB,
    USECASE,
    build_definitions,
)

#: The days the quick start materialises: the first with the main job, the others alone.
DAYS = ("2024-01-01", "2024-01-02", "2024-01-03")
#: The asset whose trace the quick start prints.
TRACED_ASSET = "sales/order_lines"
#: The Delta-stored asset whose row diff the quick start prints, and the price rise it makes.
DIFFED_ASSET = "sales/price_list"
PRICE_RISE = {"rise_category": "books", "rise_percent": 10.0}
#: The dbt model whose trace the quick start prints, and the one whose rows a seed change moves.
TRACED_DBT_MODEL = "dbt_shop/customer_revenue"
DIFFED_DBT_MODEL = "dbt_shop/stg_orders"
#: The seed change: one order's amount corrected in `raw_orders.csv`.
SEED_FILE = "seeds/raw_orders.csv"
SEED_CHANGE = ("102,2,2024-01-01,7.25", "102,2,2024-01-01,72.50")
#: Dagster's console logger at WARNING: the quick start prints one line per run instead.
QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


def materialise_all(
    home: Path,
    instance: dg.DagsterInstance,
    days: Sequence[str] = DAYS,
    report: Callable[[str], None] = lambda line: None,
) -> list[dg.ExecuteInProcessResult]:
    """Run the main job for the first day and the daily job for the others; raise on failure."""
    defs = build_definitions(home)
    plan = [(MAIN_JOB, days[0])] + [(DAILY_JOB, day) for day in days[1:]]
    results = []
    for job_name, day in plan:
        job = defs.resolve_job_def(job_name)
        result = job.execute_in_process(instance=instance, partition_key=day, run_config=QUIET)
        keys = sorted(
            event.asset_key.to_user_string() for event in result.get_asset_materialization_events()
        )
        report(f"run {result.run_id[:8]} {job_name} [{day}]: {', '.join(keys)}")
        results.append(result)
    return results


def open_instance() -> dg.DagsterInstance:
    """The instance under $DAGSTER_HOME when it is set (so `dagster dev` shows the runs), else a
    throw-away one."""
    if os.environ.get("DAGSTER_HOME"):
        return dg.DagsterInstance.get()
    return dg.DagsterInstance.ephemeral()


def trace_command(home: Path, asset: str = TRACED_ASSET) -> list[str]:
    """The `ubunye-dagster` arguments that print the latest trace of `asset`."""
    return ["lineage", "trace", "-d", str(home), "-u", USECASE, "--asset", asset]


def raise_prices(
    home: Path, instance: dg.DagsterInstance, report: Callable[[str], None] = lambda line: None
) -> dg.ExecuteInProcessResult:
    """Materialise the price list again with a price rise: a new version of its Delta table."""
    job = build_definitions(home).resolve_job_def(PRICE_JOB)
    config = {**QUIET, "ops": {"sales__price_list": {"config": PRICE_RISE}}}
    result = job.execute_in_process(instance=instance, run_config=config)
    report(f"run {result.run_id[:8]} {PRICE_JOB}: {DIFFED_ASSET} with {PRICE_RISE}")
    return result


def diff_command(home: Path, asset: str = DIFFED_ASSET, key: str = "product_id") -> list[str]:
    """The `ubunye-dagster` arguments that print which rows the latest run of `asset` changed,
    rows matched by ``key``."""
    return [
        "lineage", "diff", "-d", str(home), "-u", USECASE, "--asset", asset,
        "--key", key, "--limit", "3",
    ]  # fmt: skip


def build_dbt_models(
    home: Path, instance: dg.DagsterInstance, report: Callable[[str], None] = lambda line: None
) -> dg.ExecuteInProcessResult:
    """Run `dbt build` on the example's dbt project (its own job); raise on failure."""
    job = build_definitions(home).resolve_job_def(DBT_JOB)
    result = job.execute_in_process(instance=instance, run_config=QUIET)
    keys = sorted(
        event.asset_key.to_user_string() for event in result.get_asset_materialization_events()
    )
    report(f"run {result.run_id[:8]} {DBT_JOB}: {', '.join(keys)}")
    return result


def change_seed(home: Path, report: Callable[[str], None] = lambda line: None) -> None:
    """Correct one order's amount in the home's copy of the dbt project's `raw_orders` seed."""
    seed = dbt_working_copy(home) / SEED_FILE
    before, after = SEED_CHANGE
    text = seed.read_text(encoding="utf-8")
    if before not in text:
        raise ValueError(f"{seed} has no line {before!r} to change (reset_seeds restores it)")
    seed.write_text(text.replace(before, after), encoding="utf-8")
    report(f"changed {SEED_FILE}: {before} -> {after}")


def restore_seeds(home: Path) -> None:
    """The shipped seeds back in the home's copy of the dbt project (the quick start's start)."""
    reset_seeds(dbt_working_copy(home))


def build_dbt_before_and_after_a_seed_change(
    home: Path, instance: dg.DagsterInstance, report: Callable[[str], None] = lambda line: None
) -> list[dg.ExecuteInProcessResult]:
    """The quick start's dbt half: the shipped seeds back, `dbt build`, one seed changed, `dbt
    build` again; both runs."""
    restore_seeds(home)
    runs = [build_dbt_models(home, instance, report)]
    change_seed(home, report)
    runs.append(build_dbt_models(home, instance, report))
    return runs


def dbt_diff_command(home: Path, asset: str = DIFFED_DBT_MODEL) -> list[str]:
    """The `ubunye-dagster` arguments that print which rows of a dbt model the seed change moved."""
    return diff_command(home, asset, key="order_id")
