"""Content-based data versions: a materialisation's Dagster data version is its rows-v1 digest.

Also guards the Dagster internals the IO manager relies on, so a Dagster upgrade that moves them
fails here, loudly, rather than silently dropping data versions or failure records.
"""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pandas as pd
from dagster._core.definitions.data_version import CachingStaleStatusResolver, StaleStatus
from dagster._core.execution.context.system import StepExecutionContext
from dagster._utils.test.data_versions import get_stale_status_resolver

from ubunye_dagster import UbunyeIOManager, UbunyeResource

ROWS = {"values": [1, 2, 3]}


@dg.asset
def prices() -> pd.DataFrame:
    return pd.DataFrame({"price": ROWS["values"]})


@dg.asset
def price_stats(prices: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame({"mean": [prices["price"].mean()]})


def materialise(root: Path, instance: dg.DagsterInstance, selection) -> dg.ExecuteInProcessResult:
    manager = UbunyeIOManager(
        base_path=str(root / "data"), ubunye=UbunyeResource(usecase_dir=str(root))
    )
    return dg.materialize(
        [prices, price_stats],
        resources={"io_manager": manager},
        instance=instance,
        selection=selection,
    )


def status_of(instance: dg.DagsterInstance, key: str) -> StaleStatus:
    resolver = get_stale_status_resolver(instance, [prices, price_stats])
    return resolver.get_status(dg.AssetKey(key))


def test_the_data_version_of_a_materialisation_is_its_rows_v1_digest(tmp_path):
    instance = dg.DagsterInstance.ephemeral()
    ROWS["values"] = [1, 2, 3]
    result = materialise(tmp_path, instance, [prices])

    [event] = result.asset_materializations_for_node("prices")
    assert event.tags["dagster/data_version"] == event.metadata["ubunye/data_hash"].value
    assert event.tags["dagster/data_version_is_user_provided"] == "true"


def test_rebuilding_upstream_with_identical_rows_leaves_downstream_fresh(tmp_path):
    instance = dg.DagsterInstance.ephemeral()
    ROWS["values"] = [1, 2, 3]
    materialise(tmp_path, instance, [prices, price_stats])
    assert status_of(instance, "price_stats") == StaleStatus.FRESH

    ROWS["values"] = [3, 1, 2]  # the same rows in another order: the same digest
    materialise(tmp_path, instance, [prices])

    assert status_of(instance, "price_stats") == StaleStatus.FRESH


def test_changed_upstream_rows_make_downstream_stale(tmp_path):
    instance = dg.DagsterInstance.ephemeral()
    ROWS["values"] = [1, 2, 3]
    materialise(tmp_path, instance, [prices, price_stats])

    ROWS["values"] = [1, 2, 4]
    materialise(tmp_path, instance, [prices])

    assert status_of(instance, "price_stats") == StaleStatus.STALE
    resolver = get_stale_status_resolver(instance, [prices, price_stats])
    [cause] = resolver.get_stale_causes(dg.AssetKey("price_stats"))
    assert cause.reason == "has a new dependency data version"


def test_the_dagster_internals_the_io_manager_relies_on_are_still_there():
    # handle_output sets the data version through the step context before Dagster builds the
    # materialisation event, which reads it back (execute_step._get_output_asset_events).
    for name in ("set_data_version", "has_data_version", "get_data_version"):
        assert callable(getattr(StepExecutionContext, name)), name
    # A failed step's exception, read when the run's resources are torn down.
    assert isinstance(StepExecutionContext.step_exception, property)
    assert callable(StepExecutionContext.has_seen_output)
    # The step's outputs, inputs and partitions, read through the step context.
    for name in (
        "get_output_asset_keys",
        "asset_partition_key_range_for_output",
        "has_asset_partitions_for_output",
        "asset_partitions_time_window_for_output",
        "op_config",
        "node_handle",
        "job_def",
        "resources",
    ):
        assert hasattr(StepExecutionContext, name), name
    assert hasattr(dg.OutputContext, "step_context")
    assert hasattr(dg.InputContext, "step_context")
    from dagster._core.definitions.assets.job.asset_layer import AssetLayer

    for name in (
        "get",
        "has",
        "get_asset_key_for_node_output",
        "get_asset_key_for_node_input",
    ):
        assert callable(getattr(AssetLayer, name)), name
    # The staleness API the tests above use.
    assert callable(CachingStaleStatusResolver.get_status)
    assert callable(CachingStaleStatusResolver.get_stale_causes)


def test_a_failing_step_still_hands_its_exception_to_the_step_context(tmp_path):
    captured = {}

    class Spy(dg.ConfigurableIOManager):
        def handle_output(self, context, obj):
            pass

        def load_input(self, context):
            captured["step_context"] = context.step_context
            return pd.DataFrame({"price": [1]})

    @dg.asset
    def broken(prices: pd.DataFrame) -> pd.DataFrame:
        raise ValueError("boom")

    dg.materialize(
        [prices, broken], resources={"io_manager": Spy()}, selection=[broken], raise_on_error=False
    )

    assert isinstance(captured["step_context"].step_exception, ValueError)
