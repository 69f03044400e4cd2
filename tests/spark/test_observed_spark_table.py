"""A Spark table observed by its rows: the observation hashes the table on the cluster (the
Spark path the IO manager hashes a DataFrame with) and reports the rows-v1 digest, the one pandas
gives the same rows, as the data version; a table that is not there is observed with its hash
error and no data version."""

from __future__ import annotations

import dagster as dg
import pandas as pd
import pytest
from dagster_pyspark import PySparkResource

from ubunye_dagster import with_ubunye
from ubunye_dagster.automation import SparkTableSource
from ubunye_rows import fingerprint

pytestmark = pytest.mark.spark

ORDERS = pd.DataFrame({"order_id": [1, 2, 3], "region": ["north", "south", "north"]})
ORDERS_KEY = dg.AssetKey(["raw", "orders"])


def observed_once(
    tmp_path, source: SparkTableSource | dict, resources: dict
) -> dg.AssetObservation:
    """One observation of the orders source, as the UI's Observe; the observation."""
    defs = with_ubunye(
        dg.Definitions(assets=[dg.AssetSpec(ORDERS_KEY)], resources=resources),
        observe={"raw/orders": source},
        usecase_dir=str(tmp_path),
        base_path=str(tmp_path / "data"),
    )
    job = dg.define_asset_job("observe_orders", selection=[ORDERS_KEY])
    runnable = dg.Definitions.merge(defs, dg.Definitions(jobs=[job]))
    with dg.instance_for_test() as instance:
        result = runnable.resolve_job_def("observe_orders").execute_in_process(instance=instance)
        assert result.success
        [record] = instance.fetch_observations(ORDERS_KEY, limit=1).records
    return record.asset_observation


def test_a_spark_table_is_observed_on_the_cluster_with_the_digest_pandas_gives(
    tmp_path, spark, spark_config
):
    # A global view: every session of the application (a PySparkResource's too) sees it.
    spark.createDataFrame(ORDERS.iloc[::-1]).createOrReplaceGlobalTempView("observed_orders")
    resources = {"pyspark": PySparkResource(spark_config=spark_config)}
    source = {"spark_table": "global_temp.observed_orders", "spark_resource": "pyspark"}

    seen = observed_once(tmp_path, source, resources)

    assert seen.data_version == fingerprint(ORDERS).data_hash
    assert seen.metadata["dagster/row_count"].value == 3
    assert seen.metadata["dagster/uri"].value == "spark:global_temp.observed_orders"


def test_a_missing_spark_table_is_observed_with_its_hash_error_and_no_data_version(tmp_path, spark):
    seen = observed_once(tmp_path, SparkTableSource(spark_table="shop.no_such_orders"), {})

    assert seen.data_version is None
    assert "ubunye/data_hash" not in seen.metadata
    assert "no_such_orders" in seen.metadata["ubunye/hash_error"].value
