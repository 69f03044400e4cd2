"""An input with no type annotation loads on every store: local disk, fsspec memory, and S3 (a
moto server on 127.0.0.1), whatever error the store raises for a sidecar that is not there."""

from __future__ import annotations

import uuid

import dagster as dg
import pandas as pd
import pytest
from object_store import moto_s3

from ubunye_dagster import UbunyeIOManager, UbunyeResource
from ubunye_rows import fingerprint

FRAME = pd.DataFrame({"sku": ["a", "b", "c"], "price": [1.5, 2.0, 3.25]})
SEEN: dict[str, object] = {}


@dg.asset
def prices() -> pd.DataFrame:
    return FRAME


@dg.asset
def doubled(prices):  # no annotation: loads as the type that was written
    SEEN["prices"] = prices
    return prices.assign(price=prices["price"] * 2)


def materialise_through(manager: UbunyeIOManager) -> dg.ExecuteInProcessResult:
    SEEN.clear()
    result = dg.materialize([prices, doubled], resources={"io_manager": manager})
    assert result.success
    assert isinstance(SEEN["prices"], pd.DataFrame)
    pd.testing.assert_frame_equal(SEEN["prices"], FRAME)
    [read] = (
        result.asset_materializations_for_node("doubled")[0]
        .metadata["ubunye/inputs"]
        .value.values()
    )
    assert read["data_hash"] == fingerprint(FRAME).data_hash
    return result


def test_an_unannotated_input_loads_from_local_disk(tmp_path):
    materialise_through(
        UbunyeIOManager(
            base_path=str(tmp_path / "data"), ubunye=UbunyeResource(usecase_dir=str(tmp_path))
        )
    )


def test_an_unannotated_input_loads_from_fsspec_memory():
    root = f"memory://unannotated-{uuid.uuid4().hex}"
    materialise_through(
        UbunyeIOManager(
            base_path=f"{root}/data", ubunye=UbunyeResource(lineage_dir=f"{root}/lineage")
        )
    )


def test_an_unannotated_input_loads_from_s3():
    pytest.importorskip("s3fs")
    with moto_s3() as s3:
        options = s3["storage_options"]
        root = f"s3://{s3['bucket']}"
        materialise_through(
            UbunyeIOManager(
                base_path=f"{root}/data",
                storage_options=options,
                ubunye=UbunyeResource(lineage_dir=f"{root}/lineage", storage_options=options),
            )
        )
