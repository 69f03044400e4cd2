"""The example's Definitions: every asset stored and receipted by UbunyeIOManager."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
from dagster_pyspark import PySparkResource

from example_project.assets import customers, raw, sales, spark
from example_project.dbt_models import (
    DBT_GROUP,
    build_dbt_assets,
    dbt_resource,
    dbt_working_copy,
)
from example_project.paths import data_dir, example_home
from ubunye_dagster import (
    UbunyeIOManager,
    UbunyeResource,
    build_drift_sensor,
    build_expectation_checks,
    build_reproducibility_checks,
    with_error_records,
)

#: The usecase part of every task path ("example_shop/<group>/<asset key>").
USECASE = "example_shop"
#: The main job's name; it needs a partition key because `sales/daily_orders` is daily.
MAIN_JOB = "all_assets"
#: The partitioned asset alone, for the other days.
DAILY_JOB = "daily_orders"
#: The Delta-stored price list alone, to materialise a price rise.
PRICE_JOB = "price_list"
#: The dbt project's models and seeds (`dbt build`), on DuckDB.
DBT_JOB = "dbt_build"

#: The drift sensor's name and how often the daemon runs it.
DRIFT_SENSOR = "ubunye_drift_sensor"
DRIFT_SENSOR_INTERVAL_SECONDS = 30

#: A small local Spark: two cores, no UI, so it starts fast and opens no port.
SPARK_CONFIG = {
    "spark.master": "local[2]",
    "spark.app.name": "ubunye-example-shop",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "4",
}

#: Every asset, each with the hook that records a step failing before it loads or returns anything.
ASSETS = with_error_records(dg.load_assets_from_modules([raw, sales, customers, spark]))


def build_definitions(home: Path) -> dg.Definitions:
    """Definitions whose data lives in `<home>/data` and records in `<home>/.ubunye/lineage`."""
    ubunye = UbunyeResource(usecase_dir=str(home), usecase=USECASE)
    dbt_project = dbt_working_copy(home)
    dbt_shop = with_error_records([build_dbt_assets(dbt_project)])
    io_manager = UbunyeIOManager(base_path=str(data_dir(home)), ubunye=ubunye)
    # `sales/price_list` keeps every materialisation as a Delta table version.
    delta_io_manager = UbunyeIOManager(base_path=str(data_dir(home)), ubunye=ubunye, format="delta")
    # Each `ubunye/expectations` rule is an asset check, evaluated in the run that writes the
    # asset. The jobs leave the reproducibility checks out: the drift sensor reports those.
    expectation_checks = build_expectation_checks(ASSETS)
    reproducibility_checks = build_reproducibility_checks([*ASSETS, *dbt_shop])
    # The dbt models build in their own job (their own warehouse, their own command).
    everything = (
        dg.AssetSelection.all()
        - dg.AssetSelection.checks(*reproducibility_checks)
        - dg.AssetSelection.groups(DBT_GROUP)
    )
    main_job = dg.define_asset_job(MAIN_JOB, selection=everything)
    daily_job = dg.define_asset_job(
        DAILY_JOB, selection=dg.AssetSelection.assets(sales.daily_orders).without_checks()
    )
    price_job = dg.define_asset_job(
        PRICE_JOB, selection=dg.AssetSelection.assets(sales.price_list).without_checks()
    )
    dbt_job = dg.define_asset_job(
        DBT_JOB,
        selection=dg.AssetSelection.groups(DBT_GROUP)
        - dg.AssetSelection.checks(*reproducibility_checks),
    )
    drift_sensor = build_drift_sensor(
        [*ASSETS, *dbt_shop],
        name=DRIFT_SENSOR,
        minimum_interval_seconds=DRIFT_SENSOR_INTERVAL_SECONDS,
        default_status=dg.DefaultSensorStatus.RUNNING,
    )
    return dg.Definitions(
        assets=[*ASSETS, *dbt_shop],
        asset_checks=[*expectation_checks, *reproducibility_checks],
        sensors=[drift_sensor],
        jobs=[main_job, daily_job, price_job, dbt_job],
        resources={
            "io_manager": io_manager,
            "ubunye": ubunye,
            "dbt": dbt_resource(dbt_project),
            "delta_io_manager": delta_io_manager,
            "pyspark": PySparkResource(spark_config=SPARK_CONFIG),
        },
        # One process per run: the Spark steps share one JVM instead of starting one each.
        executor=dg.in_process_executor,
    )


defs = build_definitions(example_home())
