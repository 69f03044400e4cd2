"""The drift sensor and the reproducibility check judge dbt models like any other asset: real
dbt builds on DuckDB, run twice, judged from their receipts."""

from __future__ import annotations

import dagster as dg
import pytest
from dbt_shop import copy_shop

from ubunye_core.records.drift import INPUTS_CHANGED, SAME_INPUTS
from ubunye_dagster.drift.check_spec import CHECK_NAME
from ubunye_dagster.drift.sensor import build_drift_sensor

#: A model whose rows differ on every build from the same code, inputs and environment.
LUCKY_DRAW = "select order_id, random() as draw from {{ ref('raw_orders') }}\n"


def judged(instance: dg.DagsterInstance) -> dict[str, dg.AssetCheckEvaluation]:
    """The drift sensor's latest verdict on each asset, after one tick over every receipt."""
    data = build_drift_sensor(None).evaluate_tick(dg.build_sensor_context(instance=instance))
    return {event.asset_key.to_user_string(): event for event in data.asset_events}


def reason(evaluation: dg.AssetCheckEvaluation) -> str:
    return evaluation.metadata["ubunye/reason"].value


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
    verdicts = judged(instance)

    assert not verdicts["lucky_draw"].passed
    assert reason(verdicts["lucky_draw"]) == SAME_INPUTS
    for steady in ("stg_orders", "customer_revenue"):
        assert verdicts[steady].passed, steady
        assert verdicts[steady].metadata["ubunye/verdict"].value == "unchanged"


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


def test_a_changed_seed_is_explained_by_its_input(tmp_path, monkeypatch):
    shop = copy_shop(tmp_path, monkeypatch)
    seed = shop.project_dir / "seeds" / "raw_orders.csv"
    with dg.instance_for_test() as instance:
        shop.materialise(instance)
        seed.write_text(seed.read_text().replace("7.25", "8.25"), encoding="utf-8")
        shop.materialise(instance)
        verdicts = judged(instance)

    assert all(verdict.passed for verdict in verdicts.values()), verdicts
    for downstream in ("stg_orders", "customer_revenue"):
        assert reason(verdicts[downstream]) == INPUTS_CHANGED, downstream
    # The seed itself: its file is its code, so the changed file explains its changed rows.
    assert verdicts["raw_orders"].metadata["ubunye/verdict"].value == "explained"
