"""The drift sensor and the reproducibility check judge dbt models like any other asset: real
dbt builds on DuckDB, run twice, judged from their receipts, then a third time after a seed
changes."""

from __future__ import annotations

import dagster as dg
import pytest
from dbt_shop import (
    LUCKY_DRAW,
    assert_only_the_random_model_flagged,
    assert_the_seed_change_explained,
    copy_shop,
    judged,
    judged_after_a_seed_change,
)

from ubunye_dagster.drift.check_spec import CHECK_NAME


@pytest.fixture(scope="module")
def drawn_twice(tmp_path_factory):
    """The shop with a non-deterministic model, built twice with nothing changed."""
    with pytest.MonkeyPatch.context() as monkeypatch, dg.instance_for_test() as instance:
        shop = copy_shop(tmp_path_factory.mktemp("dbt"), monkeypatch)
        shop.write("models/lucky_draw.sql", LUCKY_DRAW)
        runs = [shop.materialise(instance), shop.materialise(instance)]
        yield shop, instance, runs


def test_a_non_deterministic_model_is_flagged_by_the_drift_sensor(drawn_twice):
    _, instance, _ = drawn_twice
    assert_only_the_random_model_flagged(judged(instance))


def test_the_reproducibility_check_flags_the_non_deterministic_model(drawn_twice):
    shop, instance, _ = drawn_twice
    defs = shop.definitions()
    checks = [
        check
        for check in defs.asset_checks or []
        if dg.AssetCheckKey(dg.AssetKey("lucky_draw"), CHECK_NAME) in check.check_keys
    ]
    assets = [a for a in defs.assets if isinstance(a, dg.AssetsDefinition)]
    result = dg.materialize(
        [*assets, *checks],
        instance=instance,
        resources=defs.resources,
        selection=dg.AssetSelection.checks(*checks),
    )
    verdicts = {
        e.asset_key.to_user_string(): e.passed
        for e in result.get_asset_check_evaluations()
        if e.check_name == CHECK_NAME
    }
    assert verdicts["lucky_draw"] is False
    assert verdicts["stg_orders"] is True


@pytest.fixture(scope="module")
def seed_changed(drawn_twice):
    """The verdicts after a third build, a seed changed (after the tests of the first two)."""
    shop, instance, _ = drawn_twice
    return judged_after_a_seed_change(shop, instance)


def test_a_changed_seed_is_explained_by_its_input(seed_changed):
    # Every model passes: the seed's file explains its rows, the seed the rows downstream of it.
    assert all(verdict.passed for verdict in seed_changed.values()), seed_changed
    assert_the_seed_change_explained(seed_changed)
