"""Sketches: kept in the same pass, they add up to the digest, combine like concatenation, and
ride in the run record without troubling the reference CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sketch_tables import as_engine, rows, table_of

from ubunye_core.records.model import RunRecord, StepRecord
from ubunye_core.records.sketches import recorded_sketch, remember_saved, step_sketch
from ubunye_core.store import LineageStore
from ubunye_rows import fingerprint
from ubunye_rows.hashing.digest import data_hash
from ubunye_rows.hashing.fingerprint import fingerprint_rows
from ubunye_rows.hashing.sketch import BUCKETS, Sketch, combine

# Runs no Dagster: CI runs it on the newest Dagster only (tests/unit/test_code_shape.py checks).
pytestmark = pytest.mark.dagster_free

ENGINES = ["arrow", "pandas", "polars"]
tables = st.lists(rows, max_size=40)


@pytest.mark.parametrize("engine", ENGINES)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values=tables)
def test_the_sketch_sums_to_the_digest_lanes_on_every_engine(engine, values):
    fp = fingerprint(as_engine(table_of(values), engine))
    assert fp.is_complete and fp.sketch is not None
    assert fp.sketch.rows == fp.row_count == len(values)
    assert data_hash(fp.sketch.schema, fp.row_count, fp.sketch.lane_sums()) == fp.data_hash
    assert fp.sketch.data_hash() == fp.data_hash


@pytest.mark.parametrize("engine", ENGINES)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(first=tables, second=tables)
def test_combine_of_two_fingerprints_is_the_fingerprint_of_the_concatenation(engine, first, second):
    a, b = table_of(first), table_of(second)
    combined = combine([fingerprint(as_engine(a, engine)), fingerprint(as_engine(b, engine))])
    whole = fingerprint(as_engine(pa.concat_tables([a, b]), engine))
    assert (combined.schema_hash, combined.data_hash, combined.row_count) == (
        whole.schema_hash,
        whole.data_hash,
        whole.row_count,
    )
    assert combined.sketch == whole.sketch


def test_the_spec_path_keeps_the_same_sketch_as_the_arrow_path():
    table = table_of([(1, 2.5, "a", True), (None, float("nan"), None, None), (1, 2.5, "a", True)])
    pairs = [
        (f.name, kind)
        for f, kind in zip(table.schema, ["int64", "float64", "string", "bool"], strict=True)
    ]
    assert fingerprint_rows(table.to_pylist(), pairs).sketch == fingerprint(table).sketch


def test_combine_refuses_fingerprints_of_different_schemas():
    a = fingerprint(pa.table({"x": [1]}))
    b = fingerprint(pa.table({"y": [1]}))
    with pytest.raises(ValueError, match="another schema"):
        combine([a, b])


def test_a_sketch_survives_its_compact_record_form_and_stays_small():
    table = pa.table({"id": list(range(100_000)), "name": [f"n{i}" for i in range(100_000)]})
    sketch = fingerprint(table).sketch
    document = sketch.to_record()
    assert Sketch.from_record(json.loads(json.dumps(document))) == sketch
    assert len(json.dumps(document)) < 8_000
    assert sum(1 for count in sketch.counts if count) == BUCKETS


def test_a_damaged_sketch_is_refused_with_a_reason():
    document = fingerprint(pa.table({"x": [1, 2]})).sketch.to_record()
    with pytest.raises(ValueError, match="damaged"):
        Sketch.from_record({**document, "buckets": document["buckets"][:-8]})


def test_a_step_sketch_that_does_not_add_up_to_its_data_hash_is_not_trusted():
    step = StepRecord.from_fingerprint(
        fingerprint(pa.table({"x": [1]})), name="o", direction="output"
    )
    assert step_sketch(step) is not None
    other = StepRecord.from_fingerprint(
        fingerprint(pa.table({"x": [2]})), name="o", direction="output"
    )
    assert step_sketch(step.model_copy(update={"data_hash": other.data_hash})) is None


def test_packed_text_read_again_gives_the_same_sketch_and_its_own_schema():
    sketch = fingerprint(pa.table({"x": [1, 2, 3]})).sketch
    document = sketch.to_record()
    assert Sketch.from_record(json.loads(json.dumps(document))) == sketch
    # The same buckets stored with another schema are that schema's sketch, not the one known.
    renamed = {**document, "schema": [["y", "int64"]]}
    assert Sketch.from_record(renamed).schema == (("y", "int64"),)
    assert Sketch.from_record(renamed).counts == sketch.counts
    with pytest.raises(ValueError, match="rows do not add up"):
        Sketch.from_record({**document, "rows": sketch.rows + 1})


def saved_record(store: LineageStore, values: list[int]) -> tuple[str, str, RunRecord]:
    """A record of one output of ``values`` saved as this process's steps save theirs: its
    path, its output's digest and the record."""
    fp = fingerprint(pa.table({"x": values}))
    step = StepRecord.from_fingerprint(fp, name="o", direction="output", format="parquet")
    record = RunRecord(
        run_id="run-1", usecase="u", package="p", task_name="t",
        started_at="2026-01-01T00:00:00+00:00", status="success", outputs=[step],
    )  # fmt: skip
    path = store.save(record, index=False)
    remember_saved(str(path), path.path, record)
    return str(path), fp.data_hash, record


def test_a_saved_records_sketch_is_read_again_once_its_file_is_replaced(tmp_path):
    store = LineageStore.for_usecase_dir(tmp_path)
    path, digest, record = saved_record(store, [1, 2, 3])
    assert recorded_sketch(path, digest) == record.outputs[0].sketch
    # Another writer replaces the file: its sketch is the one read, not the one kept.
    other = fingerprint(pa.table({"x": [4, 5]}))
    replaced = record.model_copy(deep=True)
    replaced.outputs = [StepRecord.from_fingerprint(other, name="o", direction="output")]
    store.save(replaced, index=False)
    assert recorded_sketch(path, digest) is None
    assert recorded_sketch(path, other.data_hash) == other.sketch.to_record()


def test_a_saved_records_sketch_is_gone_once_its_file_is_removed(tmp_path):
    store = LineageStore.for_usecase_dir(tmp_path)
    path, digest, _ = saved_record(store, [1, 2, 3])
    os.remove(path)
    assert recorded_sketch(path, digest) is None


def test_a_sketch_handed_out_is_the_callers_to_change(tmp_path):
    path, digest, record = saved_record(LineageStore.for_usecase_dir(tmp_path), [1, 2, 3])
    handed = recorded_sketch(path, digest)
    handed["schema"][0][0] = "changed"
    handed["rows"] = 0
    assert recorded_sketch(path, digest) == record.outputs[0].sketch


REFERENCE = [sys.executable, "-c", "import sys; from ubunye.cli.main import main; sys.exit(main())"]


def test_the_reference_cli_reads_records_carrying_sketches(tmp_path):
    pytest.importorskip("ubunye.lineage.recorder")
    store = LineageStore.for_usecase_dir(tmp_path)
    for number, values in enumerate(([1, 2, 3], [1, 2, 4]), start=1):
        fp = fingerprint(pa.table({"x": values}))
        step = StepRecord.from_fingerprint(fp, name="result", direction="output", format="parquet")
        assert "sketch" in step.model_dump()
        record = RunRecord(
            run_id=f"run-{number}", usecase="u", package="p", task_name="t",
            started_at=f"2026-01-0{number}T00:00:00+00:00", status="success", outputs=[step],
        )  # fmt: skip
        store.save(record)
    args = ["-d", str(tmp_path), "-u", "u", "-p", "p", "-t", "t"]
    for command in (
        ["list"],
        ["show", "--run-id", "run-1"],
        ["trace"],
        ["compare", "--run-id1", "run-1", "--run-id2", "run-2"],
    ):
        done = subprocess.run(
            [*REFERENCE, "lineage", *command, *args, "--json"],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        json.loads(done.stdout)
    # The reference drops the field it does not know; the file keeps it for us.
    assert step_sketch(store.load("u/p/t", "run-2").outputs[0]) is not None
