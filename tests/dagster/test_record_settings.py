"""Where records go is one set of settings: ``UbunyeResource``, ``ReceiptSettings`` (``with_ubunye``
and the ``UbunyeReceipts`` component) and the dbt component take the same fields, with the same
defaults, and refuse a bad value with the same error naming the field."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest
from sample_records import sample_record

from ubunye_dagster import ReceiptSettings, UbunyeResource
from ubunye_dagster.components import UbunyeReceipts
from ubunye_dagster.dbt import UbunyeDbtProjectComponent
from ubunye_dagster.receipts.settings import RecordLocation, RecordSettings


def dbt_component(**place: Any) -> UbunyeDbtProjectComponent:
    """The dbt component of a project it never opens, its records placed by ``place``."""
    return UbunyeDbtProjectComponent(project="dbt_shop", **place)


#: Each class that says where records go, built from keyword arguments.
TAKING_A_PLACE: dict[str, Callable[..., Any]] = {
    "UbunyeResource": UbunyeResource,
    "ReceiptSettings": ReceiptSettings,
    "UbunyeReceipts": UbunyeReceipts,
    "UbunyeDbtProjectComponent": dbt_component,
}


@pytest.mark.parametrize("build", TAKING_A_PLACE.values(), ids=TAKING_A_PLACE.keys())
def test_each_place_for_records_has_the_same_fields_and_defaults(build):
    built = build()
    expected = RecordLocation()
    assert {name: getattr(built, name) for name in RecordLocation.model_fields} == dict(expected)


def declared(fields: dict[str, Any]) -> dict[str, tuple[Any, Any, str | None]]:
    """Each record setting among ``fields``: its type, default and description."""
    return {
        name: (fields[name].annotation, fields[name].default, fields[name].description)
        for name in RecordSettings.model_fields
    }


def test_the_resource_and_the_adoption_settings_share_every_record_setting():
    owned = declared(RecordSettings.model_fields)
    assert declared(UbunyeResource.model_fields) == owned
    assert declared(ReceiptSettings.model_fields) == owned
    assert dict(UbunyeResource()) == dict(ReceiptSettings().resource()) == dict(RecordSettings())


def test_the_dbt_components_yaml_attributes_are_where_records_go_with_their_defaults():
    attributes = UbunyeDbtProjectComponent.model().model_fields
    for name, field in RecordLocation.model_fields.items():
        assert attributes[name].default == field.default
        assert attributes[name].description == field.description
    by_name = {f.name: f for f in dataclasses.fields(UbunyeDbtProjectComponent)}
    assert all(by_name[name].kw_only for name in RecordLocation.model_fields)


@pytest.mark.parametrize("build", TAKING_A_PLACE.values(), ids=TAKING_A_PLACE.keys())
def test_an_unsafe_usecase_is_refused_by_each_with_the_same_error_naming_the_field(build):
    with pytest.raises(ValueError) as caught:
        build(usecase="../elsewhere")
    message = str(caught.value)
    assert "\nusecase\n" in message
    assert "usecase must be a non-empty name of letters, digits, '_' and '-'" in message


@pytest.mark.parametrize("settings", [UbunyeResource, ReceiptSettings, UbunyeReceipts])
def test_a_verify_reads_value_that_is_not_a_choice_is_refused_by_each_naming_the_choices(
    settings,
):
    with pytest.raises(ValueError, match=r"(?s)verify_reads.*'fail', 'warn', 'off' or 'rows'"):
        settings(verify_reads="warning")


def test_the_adoption_settings_give_their_resource_every_record_setting(tmp_path):
    chosen = {
        "usecase_dir": str(tmp_path),
        "lineage_dir": str(tmp_path / "lineage"),
        "usecase": "shop",
        "hash_inputs": False,
        "verify_reads": "rows",
        "code_folder": str(tmp_path / "code"),
        "storage_options": {"auto_mkdir": True},
        "durable_records": True,
    }
    assert set(chosen) == set(RecordSettings.model_fields)
    assert dict(ReceiptSettings(**chosen).resource()) == chosen
    assert dict(ReceiptSettings(**chosen).io_manager().resource) == chosen


def test_the_dbt_component_saves_its_records_where_its_attributes_say(tmp_path):
    component = dbt_component(lineage_dir=str(tmp_path / "lineage"), usecase="shop")
    record = sample_record("r1", "shop/sales/daily")
    component.ubunye().store().save(record)
    assert (tmp_path / "lineage" / "shop" / "sales" / "daily" / "r1.json").exists()


def test_a_relative_usecase_folder_is_taken_from_the_working_directory_of_each_save(
    tmp_path, monkeypatch
):
    resource = UbunyeResource(usecase_dir="records")
    for folder in ("first", "second"):
        (tmp_path / folder).mkdir()
        monkeypatch.chdir(tmp_path / folder)
        resource.store().save(sample_record("r1", "dagster/default/t"))
        lineage = tmp_path / folder / "records" / ".ubunye" / "lineage"
        assert (lineage / "dagster" / "default" / "t" / "r1.json").exists()


def test_settings_that_differ_in_any_storage_field_get_a_store_of_their_own(tmp_path):
    base = {"usecase_dir": str(tmp_path)}
    assert UbunyeResource(**base).store() is UbunyeResource(**base).store()
    stores = [
        UbunyeResource(**base).store(),
        UbunyeResource(**base, durable_records=True).store(),
        UbunyeResource(**base, lineage_dir=str(tmp_path / "elsewhere")).store(),
        UbunyeResource(**base, storage_options={"auto_mkdir": True}).store(),
    ]
    assert [store.durable for store in stores] == [False, True, False, False]
    assert stores[2].root.path == str(tmp_path / "elsewhere")
    assert len({id(store) for store in stores}) == len(stores)
