"""pyarrow and polars assets, loading as the annotated type, object storage, and the promise that
the digest of a written pandas frame is the digest of that frame."""

from __future__ import annotations

import datetime as dt
import sys
import threading
from pathlib import Path

import dagster as dg
import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

from ubunye_core.materialisations.stored import read_stored
from ubunye_core.store import LineageStore
from ubunye_dagster import UbunyeIOManager, UbunyeResource
from ubunye_dagster.io.handlers import arrow_files
from ubunye_rows import fingerprint


def io_manager(root: Path) -> UbunyeIOManager:
    return UbunyeIOManager(
        base_path=str(root / "data"), ubunye=UbunyeResource(usecase_dir=str(root))
    )


def run(assets, root: Path, **kwargs) -> dg.ExecuteInProcessResult:
    return dg.materialize(assets, resources={"io_manager": io_manager(root)}, **kwargs)


def record_of(root: Path, task: str, run_id: str):
    return LineageStore.for_usecase_dir(root).load(f"dagster/default/{task}", run_id)


TABLE = pa.table(
    {
        "id": pa.array([1, 2, 3], pa.int32()),
        "label": ["x", None, "z"],
        "at": pa.array(
            [dt.datetime(2024, 1, 1, 12), None, dt.datetime(2024, 6, 1)], pa.timestamp("us")
        ),
        "tags": pa.array([["a"], [], None], pa.list_(pa.string())),
    }
)


#: What each reading asset was given, by asset name.
SEEN: dict = {}


def source(name: str, frame) -> dg.AssetsDefinition:
    """An asset that returns ``frame``."""

    def produce():
        return frame

    return dg.asset(name=name)(produce)


def reader(name: str, upstream: str, as_type: type | None, transform=lambda frame: frame):
    """An asset that loads ``upstream`` annotated as ``as_type`` (unannotated when None), keeps
    what it was given in ``SEEN[name]`` and returns ``transform`` of it."""

    def consume(frame):
        SEEN[name] = frame
        return transform(frame)

    consume.__annotations__ = {"frame": as_type} if as_type is not None else {}
    return dg.asset(name=name, ins={"frame": dg.AssetIn(upstream)})(consume)


arrow_events = source("arrow_events", TABLE)
event_count = reader(
    "event_count", "arrow_events", pa.Table, lambda table: pa.table({"n": [table.num_rows]})
)


def test_a_pyarrow_table_is_stored_loaded_as_a_table_and_hashed_as_it_is(tmp_path):
    result = run([arrow_events, event_count], tmp_path)

    assert SEEN["event_count"].equals(
        TABLE.replace_schema_metadata(SEEN["event_count"].schema.metadata)
    )
    record = record_of(tmp_path, "arrow_events", result.run_id)
    assert record.backend == "pyarrow"
    assert record.outputs[0].data_hash == fingerprint(TABLE).data_hash
    [read] = record_of(tmp_path, "event_count", result.run_id).inputs
    assert read.data_hash == fingerprint(TABLE).data_hash


POLARS = pl.DataFrame(
    {
        "id": [1, 2, 3],
        "name": ["ä", "b", None],
        "score": [0.5, float("nan"), None],
        "day": [dt.date(2024, 1, 1), dt.date(2024, 1, 2), None],
    }
)


polars_scores = source("polars_scores", POLARS)
polars_top = reader(
    "polars_top", "polars_scores", pl.DataFrame, lambda frame: frame.lazy().filter(pl.col("id") > 1)
)


def test_a_polars_frame_is_stored_loaded_as_polars_and_hashed_as_polars_hashes(tmp_path):
    result = run([polars_scores, polars_top], tmp_path)

    assert SEEN["polars_top"].equals(POLARS)
    assert record_of(tmp_path, "polars_scores", result.run_id).backend == "polars"
    assert (
        record_of(tmp_path, "polars_scores", result.run_id).outputs[0].data_hash
        == fingerprint(POLARS).data_hash
    )
    top = record_of(tmp_path, "polars_top", result.run_id)
    assert top.outputs[0].row_count == 2
    assert top.inputs[0].data_hash == fingerprint(POLARS).data_hash


FRAME = pd.DataFrame({"k": [1, 2], "v": ["a", "b"]})


written_by_pandas = source("written_by_pandas", FRAME)
read_as_polars = reader("read_as_polars", "written_by_pandas", pl.DataFrame)
read_as_arrow = reader("read_as_arrow", "written_by_pandas", pa.Table)
read_unannotated = reader("read_unannotated", "written_by_pandas", None)


def test_an_input_loads_as_its_annotated_type_and_else_as_the_type_written(tmp_path):
    result = run([written_by_pandas, read_as_polars, read_as_arrow, read_unannotated], tmp_path)

    assert isinstance(SEEN["read_as_polars"], pl.DataFrame)
    assert isinstance(SEEN["read_as_arrow"], pa.Table)
    assert isinstance(SEEN["read_unannotated"], pd.DataFrame)
    assert SEEN["read_as_polars"].to_dicts() == FRAME.to_dict("records")
    written = record_of(tmp_path, "written_by_pandas", result.run_id).outputs[0].data_hash
    for task in ("read_as_polars", "read_as_arrow", "read_unannotated"):
        [read] = record_of(tmp_path, task, result.run_id).inputs
        assert read.data_hash == written, task  # hashed under the writer's rules
        assert read.source_note.startswith("verified")


def test_storage_and_records_work_on_an_fsspec_url(tmp_path):
    manager = UbunyeIOManager(
        base_path="memory://ubunye-test/data",
        ubunye=UbunyeResource(lineage_dir="memory://ubunye-test/lineage"),
    )
    result = dg.materialize([written_by_pandas, read_as_arrow], resources={"io_manager": manager})

    assert result.success
    import fsspec

    fs = fsspec.filesystem("memory")
    assert fs.isfile("/ubunye-test/data/written_by_pandas.parquet")
    store = LineageStore("memory://ubunye-test/lineage")
    [read] = store.load("dagster/default/read_as_arrow", result.run_id).inputs
    assert read.location == "memory://ubunye-test/data/written_by_pandas.parquet"
    assert read.data_hash == fingerprint(FRAME).data_hash
    # The bytes put on the store are the ones digested, so the read was proven by them.
    from ubunye_core.materialisations.byte_digest import bytes_digest

    stored = bytes_digest(fs.cat_file("/ubunye-test/data/written_by_pandas.parquet"))
    assert (read.hash_basis, read.stored_bytes_hash()) == ("stored-bytes", stored)


PANDAS_FRAMES = {
    "plain": FRAME,
    "named index": FRAME.set_index(pd.Index([10, 20], name="key")),
    "named range index": FRAME.set_axis(pd.RangeIndex(2, name="row")),
    "unnamed index": FRAME.set_axis(pd.Index([7, 9])),
    "category": pd.DataFrame({"c": pd.Categorical(["b", "a", "b"])}),
    "naive nanoseconds": pd.DataFrame(
        {"t": pd.to_datetime(["2024-03-31 02:30:00.123456789", "1969-12-31 23:59:59.5"])}
    ),
    "zoned": pd.DataFrame(
        {"t": pd.to_datetime(["2024-01-01 10:00"]).tz_localize("Africa/Johannesburg")}
    ),
    "nulls and NaN": pd.DataFrame(
        {"f": [1.5, np.nan, None], "s": ["x", None, "z"], "o": [None, None, None]}
    ),
    "python objects": pd.DataFrame(
        {"d": [dt.date(2024, 1, 1), None], "b": [b"\x00\x01", b""], "i": [1, None]}
    ),
    "no rows": pd.DataFrame({"a": pd.Series([], dtype="int64")}),
}


@pytest.mark.parametrize("name", list(PANDAS_FRAMES))
def test_the_written_table_of_a_pandas_frame_hashes_like_the_frame(name, tmp_path):
    frame = PANDAS_FRAMES[name]
    from upath import UPath

    from ubunye_dagster.io.handlers.base import TableSlice
    from ubunye_dagster.io.handlers.pandas import PandasHandler

    target = UPath(tmp_path / "frame.parquet")
    staged = PandasHandler().stage(frame, TableSlice(target), context=None)
    expected = fingerprint(frame)
    assert expected.is_complete
    assert staged.rows.fingerprint() == expected
    # And again from the Parquet file, as an input is hashed when read back.
    staged.commit({})
    stored = read_stored(target)
    assert arrow_files.fingerprint_stored(stored.table, "pandas") == expected


def test_importing_the_package_does_not_import_a_frame_library():
    import subprocess

    code = (
        "import sys, ubunye_dagster; "
        "print(sorted(m for m in ('pandas', 'polars', 'pyspark') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_hash_beside_the_parquet_encoder_leaves_it_a_core(tmp_path, monkeypatch):
    from ubunye_rows.hashing import lanes, table_lanes

    monkeypatch.setenv(lanes.HASH_THREADS_ENV, "2")
    asked = threading.Event()
    seen: list[int] = []
    real_write, real_threads = arrow_files._write_parquet, table_lanes.hash_threads

    def encoder_still_busy(table, sink):
        asked.wait(10)  # the rows are encoded only once the hash has asked for its threads
        return real_write(table, sink)

    def threads_asked() -> int:
        seen.append(real_threads())
        asked.set()
        return seen[-1]

    monkeypatch.setattr(arrow_files, "_write_parquet", encoder_still_busy)
    monkeypatch.setattr(table_lanes, "hash_threads", threads_asked)
    assert run([source("encoded", TABLE)], tmp_path).success
    assert seen == [1]
    assert lanes.hash_threads() == 2  # outside the write, every core again


def test_an_encoder_that_fails_fails_its_step_leaves_nothing_staged_and_later_writes_go_on(
    tmp_path, monkeypatch
):
    real_write = arrow_files._write_parquet
    failures = iter([OSError("disk full")])

    def failing_once(table, sink):
        failure = next(failures, None)
        if failure is not None:
            raise failure
        return real_write(table, sink)

    monkeypatch.setattr(arrow_files, "_write_parquet", failing_once)
    failed = run([source("encoded", TABLE)], tmp_path, raise_on_error=False)
    assert not failed.success
    assert "disk full" in str(failed.failure_data_for_node("encoded").error)
    data = tmp_path / "data"
    assert [p.name for p in data.rglob("*") if p.is_file()] == []  # nothing staged or stored
    record = record_of(tmp_path, "encoded", failed.run_id)
    assert record.status == "error"

    for _ in range(6):  # more writes than the process keeps helper threads
        assert run([source("encoded", TABLE)], tmp_path).success
    assert read_stored(data / "encoded.parquet").table.equals(TABLE)
