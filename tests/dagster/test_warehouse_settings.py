"""``with_receipts(..., warehouse=...)`` refuses a bad setting when it is called, naming the
problem, and never shows the connection's credentials."""

from __future__ import annotations

import dagster as dg
import pydantic
import pytest

from ubunye_dagster import Warehouse, with_receipts
from ubunye_dagster.strict_fields import UnknownSettingError
from ubunye_dagster.warehouse.settings import WarehouseConnectionError

#: Nothing listens on port 1: connecting fails at once, without a server.
UNREACHABLE = "postgresql://shop:hunter2@127.0.0.1:1/shop"


def test_an_unknown_warehouse_kind_is_refused_naming_the_known_kinds():
    with pytest.raises(pydantic.ValidationError, match="'duckdb' or 'postgres'"):
        with_receipts(dg.FilesystemIOManager(), warehouse={"kind": "snowflake", "connection": "x"})


def test_a_misspelled_warehouse_setting_is_refused_by_name():
    with pytest.raises(UnknownSettingError, match="Warehouse has no field 'dsn'"):
        with_receipts(dg.FilesystemIOManager(), warehouse={"kind": "postgres", "dsn": "x"})


def test_the_connection_string_is_kept_out_of_the_settings_repr():
    warehouse = Warehouse(kind="postgres", connection=UNREACHABLE)

    assert "hunter2" not in repr(warehouse) and "hunter2" not in str(warehouse.model_dump())


def test_a_connection_that_fails_names_the_warehouse_and_masks_the_password():
    pytest.importorskip("psycopg2")
    warehouse = Warehouse(kind="postgres", connection=UNREACHABLE)

    refused = pytest.raises(WarehouseConnectionError, match="cannot connect to the postgres")
    with refused as error, warehouse.connect():
        pass

    assert "hunter2" not in str(error.value)
