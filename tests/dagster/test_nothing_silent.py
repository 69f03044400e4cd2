"""Gaps are loud: a misspelled or misplaced setting is refused, and an asset whose output is None
fails its step with what to do, leaving an `error` record instead of a stale file."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from ubunye_core.store import LineageStore
from ubunye_dagster import UbunyeIOManager, UbunyeResource
from ubunye_dagster.components import UbunyeReceipts
from ubunye_dagster.strict_fields import UnknownSettingError


def test_a_misspelled_resource_field_is_refused_naming_it_the_class_and_the_closest_names():
    with pytest.raises(UnknownSettingError) as caught:
        UbunyeResource(usecase_dirr=".")
    message = str(caught.value)
    assert "UbunyeResource has no field 'usecase_dirr' (did you mean 'usecase_dir' or" in message
    assert "Its fields are usecase_dir, lineage_dir, usecase," in message


def test_a_resource_field_given_to_the_io_manager_is_refused_saying_where_it_goes():
    with pytest.raises(UnknownSettingError) as caught:
        UbunyeIOManager(usecase_dir=".")
    message = str(caught.value)
    assert message.startswith("UbunyeIOManager has no field 'usecase_dir': it is a UbunyeResource")
    assert "UbunyeIOManager(ubunye=UbunyeResource(usecase_dir=...))" in message


def test_a_misspelled_io_manager_field_is_refused_with_the_closest_names():
    with pytest.raises(
        UnknownSettingError, match=r"no field 'base_pth' \(did you mean 'base_path'\?\)"
    ):
        UbunyeIOManager(base_pth="data")


def test_a_misspelled_component_attribute_is_refused_naming_the_component_and_the_closest():
    with pytest.raises(UnknownSettingError) as caught:
        UbunyeReceipts.model().model_validate({"base_pth": "data"})
    assert str(caught.value).startswith(
        "UbunyeReceipts has no field 'base_pth' (did you mean 'base_path'?)"
    )


def test_settings_given_at_launch_through_run_config_still_load(tmp_path):
    @dg.asset
    def one() -> pd.DataFrame:
        return pd.DataFrame({"x": [1]})

    result = dg.materialize(
        [one],
        resources={"io_manager": UbunyeIOManager.configure_at_launch()},
        run_config={"resources": {"io_manager": {"config": {"base_path": str(tmp_path / "d")}}}},
    )
    assert result.success
    assert (tmp_path / "d" / "one.parquet").exists()


def io_manager(root: Path) -> UbunyeIOManager:
    return UbunyeIOManager(
        base_path=str(root / "data"), ubunye=UbunyeResource(usecase_dir=str(root))
    )


STORES = {"nothing": False}


@dg.asset
def exported():  # no annotation: Dagster hands its None to the IO manager
    if STORES["nothing"]:
        return None
    return pd.DataFrame({"x": [1, 2]})


def test_an_output_of_none_fails_the_step_saying_what_to_do_and_leaves_an_error_record(tmp_path):
    STORES["nothing"] = False
    assert dg.materialize([exported], resources={"io_manager": io_manager(tmp_path)}).success
    STORES["nothing"] = True
    result = dg.materialize(
        [exported], resources={"io_manager": io_manager(tmp_path)}, raise_on_error=False
    )

    assert not result.success
    [failure] = result.get_step_failure_events()
    text = failure.step_failure_data.error.to_string()
    assert "exported returned None" in text
    assert "-> None" in text and "MaterializeResult" in text
    assert result.asset_materializations_for_node("exported") == []
    latest = LineageStore.for_usecase_dir(tmp_path).list_runs("dagster/default/exported")[0]
    assert latest.status == "error" and "returned None" in latest.error
    assert latest.outputs == []


def test_an_asset_annotated_none_stores_nothing_and_succeeds(tmp_path):
    @dg.asset
    def side_effect() -> None:
        return None

    result = dg.materialize([side_effect], resources={"io_manager": io_manager(tmp_path)})
    assert result.success
    assert not (tmp_path / "data" / "side_effect.parquet").exists()
