"""Content-based data versions: a materialisation's Dagster data version is its rows-v1 digest.

Also guards the Dagster internals the IO manager relies on, so a Dagster upgrade that moves them
fails here, loudly, rather than silently dropping data versions or failure records.
"""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pandas as pd
import pytest
from dagster._core.definitions.data_version import CachingStaleStatusResolver, StaleStatus
from dagster._utils.test.data_versions import get_stale_status_resolver

from ubunye_dagster import UbunyeIOManager, UbunyeResource

#: The oldest supported Dagster runs this whole module (the smoke set, .ci/run).
pytestmark = pytest.mark.smoke

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


def test_the_staleness_api_these_tests_use_is_still_there():
    assert callable(CachingStaleStatusResolver.get_status)
    assert callable(CachingStaleStatusResolver.get_stale_causes)
