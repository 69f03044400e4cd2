"""A pandas frame with rows and no columns is stored, recorded and read back with all its rows:
the record always agrees with `fingerprint` of the same frame."""

from __future__ import annotations

import dagster as dg
import pandas as pd

from ubunye_core.store import LineageStore
from ubunye_dagster import UbunyeIOManager, UbunyeResource
from ubunye_rows import fingerprint

ROWLESS = pd.DataFrame(index=range(4))
SEEN: dict[str, pd.DataFrame] = {}


@dg.asset
def only_rows() -> pd.DataFrame:
    return ROWLESS


@dg.asset
def counted(only_rows: pd.DataFrame) -> pd.DataFrame:
    SEEN["only_rows"] = only_rows
    return pd.DataFrame({"n": [len(only_rows)]})


def test_a_frame_with_rows_and_no_columns_is_stored_recorded_and_read_back_whole(tmp_path):
    manager = UbunyeIOManager(
        base_path=str(tmp_path / "data"), ubunye=UbunyeResource(usecase_dir=str(tmp_path))
    )
    result = dg.materialize([only_rows, counted], resources={"io_manager": manager})
    assert result.success

    expected = fingerprint(ROWLESS)
    assert expected.row_count == 4
    store = LineageStore.for_usecase_dir(tmp_path)
    [written] = store.load("dagster/default/only_rows", result.run_id).outputs
    assert (written.row_count, written.data_hash) == (4, expected.data_hash)
    [read] = store.load("dagster/default/counted", result.run_id).inputs
    assert (read.row_count, read.data_hash) == (4, expected.data_hash)
    assert len(SEEN["only_rows"]) == 4 and SEEN["only_rows"].columns.empty
    metadata = result.asset_materializations_for_node("only_rows")[0].metadata
    assert metadata["dagster/row_count"].value == 4
