"""The deployment test's code location: about ten assets of every kind, data and records on the
store ``$UBUNYE_DEPLOY_ROOT`` names (``s3://bucket/shop``) with the fsspec options of
``$UBUNYE_STORAGE_OPTIONS``, the drift sensor running by default.

``planted`` is non-deterministic on purpose (new noise each run): the one asset the drift sensor
must flag; each flag is appended to ``$UBUNYE_DEPLOY_FLAGS`` (one JSON line per verdict).
``big_orders`` (3M rows, its own job) is the write a test kills mid-way; ``big_total`` reads it.
``spark_orders`` (its own job) runs on the Spark cluster whose session settings
``$UBUNYE_DEPLOY_SPARK_CONFIG`` holds (JSON); Spark writes its data to the folder
``$UBUNYE_DEPLOY_SPARK_DATA`` (the executors and Dagster both reach it; this pyspark has no S3
connector), and its record goes to the store with the others'.
"""

import json
import os
import sys
from pathlib import Path

import dagster as dg
import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
from dagster_pyspark import PySparkResource

from ubunye_core.locations import storage_options_from_env
from ubunye_dagster import DriftVerdict, ReceiptSettings, UbunyeResource, with_ubunye

ROOT_ENV = "UBUNYE_DEPLOY_ROOT"
FLAGS_ENV = "UBUNYE_DEPLOY_FLAGS"
PIPES_SCRIPT = Path(__file__).resolve().parents[1] / "pipes_jobs" / "scores_job.py"
DAYS = dg.DailyPartitionsDefinition(start_date="2026-01-01", end_date="2026-01-06")
BIG_ROWS = 3_000_000
SENSOR = "ubunye_drift_sensor"
SPARK_CONFIG_ENV = "UBUNYE_DEPLOY_SPARK_CONFIG"
SPARK_DATA_ENV = "UBUNYE_DEPLOY_SPARK_DATA"
SPARK_ROWS = 200_000
#: Spread over both workers' executors.
SPARK_PARTITIONS = 4
SENSOR_INTERVAL_SECONDS = 5
#: Fewer than a run's materialisations, so a run's judging spans ticks a restart can fall between.
SENSOR_EVENTS_PER_TICK = 4


def note_flag(verdict: DriftVerdict) -> None:
    """``on_drift``: append the flagged verdict to ``$UBUNYE_DEPLOY_FLAGS`` (when it is set)."""
    path = os.environ.get(FLAGS_ENV)
    if path:
        with open(path, "a", encoding="utf-8") as flags:
            flags.write(verdict.model_dump_json() + "\n")


def settings() -> ReceiptSettings:
    """The one place the store is set: data, records, the sensor and the checks all read it."""
    root = os.environ.get(ROOT_ENV, "deployed")
    return ReceiptSettings(
        base_path=f"{root}/data",
        usecase_dir=root,
        storage_options=storage_options_from_env(),
        drift_sensor={
            "default_status": "RUNNING",
            "minimum_interval_seconds": SENSOR_INTERVAL_SECONDS,
            "max_events_per_tick": SENSOR_EVENTS_PER_TICK,
        },
        on_drift=note_flag,
    )


@dg.asset
def raw_orders() -> pd.DataFrame:
    rng = np.random.default_rng(7)
    return pd.DataFrame(
        {
            "order_id": np.arange(2_000),
            "region": rng.choice(["north", "south", "east", "west"], 2_000),
            "qty": rng.integers(-2, 20, 2_000),
            "price": rng.random(2_000).round(2),
        }
    )


@dg.asset
def cleaned_orders(raw_orders: pd.DataFrame) -> pd.DataFrame:
    return raw_orders[raw_orders["qty"] > 0].reset_index(drop=True)


@dg.asset
def order_totals(cleaned_orders: pd.DataFrame) -> pd.DataFrame:
    revenue = cleaned_orders.assign(revenue=cleaned_orders["qty"] * cleaned_orders["price"])
    return revenue.groupby("region", as_index=False)["revenue"].sum()


@dg.asset
def region_counts(cleaned_orders: pl.DataFrame) -> pl.DataFrame:
    return cleaned_orders.group_by("region").agg(pl.len().alias("orders")).sort("region")


@dg.multi_asset(outs={"regions": dg.AssetOut(), "products": dg.AssetOut()})
def catalogue():
    yield dg.Output(pd.DataFrame({"region": ["east", "north", "south", "west"]}), "regions")
    yield dg.Output(pd.DataFrame({"sku": [f"sku-{i:03d}" for i in range(100)]}), "products")


@dg.asset(partitions_def=DAYS)
def daily_sales(context: dg.AssetExecutionContext) -> pd.DataFrame:
    day = int(context.partition_key[-2:])
    return pd.DataFrame({"day": [context.partition_key] * 24, "sales": range(day, day + 24)})


@dg.asset
def planted(cleaned_orders: pd.DataFrame) -> pd.DataFrame:
    """Non-deterministic on purpose: new noise every run from the same code and inputs."""
    return cleaned_orders.assign(noise=np.random.default_rng().random(len(cleaned_orders)))


@dg.asset
def pipes_scores(
    context: dg.AssetExecutionContext, ubunye: UbunyeResource, pipes: dg.PipesSubprocessClient
) -> dg.MaterializeResult:
    command = [sys.executable, str(PIPES_SCRIPT)]
    return ubunye.run_pipes(pipes, context=context, command=command).get_materialize_result()


@dg.asset
def big_orders(regions: pd.DataFrame) -> pd.DataFrame:
    """3M rows: long enough to write that a test can kill its step mid-way. It reads an asset, so
    its step saves a ``running`` record before it writes."""
    ids = np.arange(BIG_ROWS)
    names = regions["region"].to_numpy()
    return pd.DataFrame({"id": ids, "region": names[ids % len(names)], "value": ids % 97})


@dg.asset
def big_total(big_orders: pd.DataFrame) -> pd.DataFrame:
    """Reads ``big_orders`` back (verified against its record) and sums it."""
    return pd.DataFrame({"rows": [len(big_orders)], "value": [int(big_orders["value"].sum())]})


def spark_orders_table(rows: int = SPARK_ROWS) -> pa.Table:
    """The Spark asset's rows (the test hashes the same table in one process): integers, text,
    floats with nulls, and UTC instants the session's non-UTC zone must not move."""
    ids = np.arange(rows)
    regions = np.array(["north", "south", "east", "west"])[ids % 4]
    return pa.table(
        {
            "id": ids,
            "region": regions,
            "amount": pa.array((ids % 1000) / 8, mask=ids % 7 == 0),
            "at": pa.array(ids * 60_000_000, pa.timestamp("us", tz="UTC")),
        }
    )


@dg.asset(io_manager_key="spark_io_manager")
def spark_orders(pyspark: PySparkResource):
    """Built on the driver, hashed and written by the cluster's executors."""
    from pyspark.sql.pandas.types import from_arrow_schema

    table = spark_orders_table()
    frame = pyspark.spark_session.createDataFrame(table, schema=from_arrow_schema(table.schema))
    return frame.repartition(SPARK_PARTITIONS)


def spark_resources() -> dict:
    """The cluster's session and an IO manager whose data is where Spark writes, records in the
    one store (a local master when the location is loaded without a cluster)."""
    config = json.loads(os.environ.get(SPARK_CONFIG_ENV, '{"spark.master": "local[1]"}'))
    data = os.environ.get(SPARK_DATA_ENV, "deployed-spark")
    manager = settings().model_copy(update={"base_path": data}).io_manager()
    return {"pyspark": PySparkResource(spark_config=config), "spark_io_manager": manager}


#: What every step imports, loaded once per run in the forkserver each step process is forked
#: from, so a step process does not import them anew.
PRELOAD = ["dagster", "numpy", "pandas", "polars", "pyarrow", "ubunye_dagster"]

#: The executor of the jobs whose one step runs in the run's process.
IN_RUN = dg.in_process_executor

SHOP_ASSETS = [
    raw_orders, cleaned_orders, order_totals, region_counts, catalogue, planted, pipes_scores,
]  # fmt: skip


def plain_definitions() -> dg.Definitions:
    """The location before receipts: assets, jobs, resources, the multiprocess executor (the
    big read's and the Spark asset's jobs: in the run's process)."""
    return dg.Definitions(
        assets=[*SHOP_ASSETS, daily_sales, big_orders, big_total, spark_orders],
        jobs=[
            dg.define_asset_job("shop", selection=dg.AssetSelection.assets(*SHOP_ASSETS)),
            # `big_read` and `spark` run their one step in the run's process (a forkserver would
            # import the step's modules a second time for it); `big` keeps a step process, which
            # the test kills mid-write.
            dg.define_asset_job("daily", selection=[daily_sales]),
            dg.define_asset_job("big", selection=[big_orders]),
            dg.define_asset_job("big_read", selection=[big_total], executor_def=IN_RUN),
            dg.define_asset_job("spark", selection=[spark_orders], executor_def=IN_RUN),
        ],
        resources={
            "ubunye": settings().resource(),
            "pipes": dg.PipesSubprocessClient(),
            **spark_resources(),
        },
        executor=dg.multiprocess_executor.configured(
            {"max_concurrent": 2, "start_method": {"forkserver": {"preload_modules": PRELOAD}}}
        ),
    )


defs = with_ubunye(plain_definitions(), **dict(settings()))
