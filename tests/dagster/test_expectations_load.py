"""Malformed expectation rules fail when the definitions load, naming the asset and the rule;
a rule's column can only be checked when the rows are written, and then the error names it."""

from __future__ import annotations

import dagster as dg
import pandas as pd
import pytest

from ubunye_dagster import (
    ExpectationError,
    UbunyeIOManager,
    UbunyeResource,
    build_drift_sensor,
    build_reproducibility_checks,
    validate_declared_expectations,
)

COMPUTED = {"count": 0}


def asset_declaring(declared) -> dg.AssetsDefinition:
    @dg.asset(key=["shop", "orders"], metadata={"ubunye/expectations": declared})
    def orders() -> pd.DataFrame:
        COMPUTED["count"] += 1
        return pd.DataFrame({"order_id": [1, 2], "amount": [3.0, 4.0]})

    return orders


ONE_DICT = {"not_null": "order_id"}


def test_expectations_given_as_one_dict_instead_of_a_list_fail_when_the_definitions_load():
    orders = asset_declaring(ONE_DICT)
    with pytest.raises(ExpectationError) as caught:
        dg.Definitions(assets=[orders], asset_checks=build_reproducibility_checks([orders]))
    message = str(caught.value)
    assert "asset shop/orders" in message
    assert "is a list of rules, not dict ({'not_null': 'order_id'})" in message
    assert "write [{'not_null': 'order_id'}]" in message


@pytest.mark.parametrize(
    ("rule", "problem"),
    [
        ({"not_nul": "order_id"}, "unknown rule kind 'not_nul' (did you mean 'not_null'?)"),
        ({"between": {"column": "amount"}}, "needs 'min', 'max' or both"),
        ({"not_null": "order_id", "severity": "error"}, "severity"),
    ],
)
def test_a_malformed_rule_fails_when_the_definitions_load_naming_the_asset_and_the_rule(
    rule, problem
):
    orders = asset_declaring([{"unique": "order_id"}, rule])
    for load in (
        lambda: build_drift_sensor([orders]),
        lambda: build_reproducibility_checks([orders]),
        lambda: validate_declared_expectations(dg.Definitions(assets=[orders])),
    ):
        with pytest.raises(ExpectationError) as caught:
            load()
        message = str(caught.value)
        assert message.startswith("asset shop/orders: ubunye/expectations[1] ")
        assert repr(rule) in message and problem in message
    assert COMPUTED["count"] == 0


def test_well_formed_rules_load_quietly():
    orders = asset_declaring([{"not_null": "order_id"}, {"row_count": {"min": 1}}])
    validate_declared_expectations([orders, dg.AssetSpec("other")])
    build_reproducibility_checks([orders])


def test_a_rule_on_a_missing_column_fails_at_write_time_naming_it_and_the_columns_present(
    tmp_path,
):
    orders = asset_declaring([{"not_null": "customer"}])
    validate_declared_expectations([orders])  # columns are only known once rows exist
    io_manager = UbunyeIOManager(
        base_path=str(tmp_path / "data"), ubunye=UbunyeResource(usecase_dir=str(tmp_path))
    )
    result = dg.materialize([orders], resources={"io_manager": io_manager}, raise_on_error=False)
    assert not result.success
    failure = result.get_step_failure_events()[0].step_failure_data.error
    text = failure.message + "".join(cause.message for cause in [failure.cause] if cause)
    assert "column 'customer' of rule 'customer_not_null'" in text
    assert "its columns are order_id, amount" in text
