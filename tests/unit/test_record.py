"""The run record v2 (ADR 006 addendum): the reference's fields, version 1 loading, nothing lost."""

from __future__ import annotations

import dataclasses
import json

import pytest
from pydantic import ValidationError
from sample_records import sample_record

from ubunye_core.records.model import RECORD_VERSION, RunRecord, StepRecord
from ubunye_rows.hashing.digest import Fingerprint

# Runs no Dagster: CI runs it on the newest Dagster only (tests/unit/test_code_shape.py checks).
pytestmark = pytest.mark.dagster_free

ref_context = pytest.importorskip("ubunye.lineage.context")

HASH_A = "sha256:" + "a" * 64
HASH_B = "sha256:" + "b" * 64


def full_record() -> RunRecord:
    """A record with every field set to a value of its JSON type."""
    step = StepRecord(
        name="orders",
        direction="input",
        format="parquet",
        location="/data/orders.parquet",
        row_count=12,
        schema_hash=HASH_A,
        data_hash=HASH_B,
        hash_method="rows-v1",
        hash_error=None,
        hash_seconds=0.25,
        hash_reused_from="output:copy",
        hash_basis="recomputed",
        source_version={"kind": "files", "files": 1, "bytes": 10},
        source_version_at_hash={"kind": "files", "files": 1, "bytes": 10},
        source_changed=False,
        source_note="the digest is of what was read",
    )
    out = step.model_copy(update={"name": "daily", "direction": "output", "hash_basis": None})
    return sample_record(
        "0f1e2d3c-run",
        "shop/sales/daily",
        profile="dev",
        model="etl",
        version="1.2",
        config_hash="sha256:" + "c" * 64,
        started_at="2026-01-02T03:04:05.000006+00:00",
        ended_at="2026-01-02T03:04:07.000006+00:00",
        duration_sec=2.0,
        status="success",
        inputs=[step],
        outputs=[out],
        error=None,
        engine_version="0.1.0",
        backend="pandas",
        variables={"dt": "2026-01-02", "mode": "full"},
        code_hash="sha256:" + "d" * 64,
        environment={"python": "3.11.7", "implementation": "CPython", "platform": "linux",
                     "machine": "x86_64", "packages": {"pandas": "3.1.1"}},
        environment_hash="sha256:" + "e" * 64,
        timings=[{"step": "read", "input": "orders", "seconds": 0.5}],
        expectations=[{"output": "daily", "rule": "not_null(id)", "kind": "not_null",
                       "severity": "error", "column": "id", "failed": 0, "total": 12,
                       "passed": True}],
        llm_calls=[{"backend": "x", "model": "y", "status": "ok"}],
        llm_budget={"max_usd": 1.0},
        time_zone="America/Sao_Paulo",
    )  # fmt: skip


def test_record_has_every_field_of_the_reference_v2_record():
    ours = set(RunRecord.model_fields)
    theirs = {f.name for f in dataclasses.fields(ref_context.RunContext)}
    assert ours == theirs
    assert set(StepRecord.model_fields) == {
        f.name for f in dataclasses.fields(ref_context.StepRecord)
    }


def test_fields_are_in_the_reference_order_so_files_look_alike():
    assert list(RunRecord.model_fields) == [
        f.name for f in dataclasses.fields(ref_context.RunContext)
    ]
    assert list(StepRecord.model_fields) == [
        f.name for f in dataclasses.fields(ref_context.StepRecord)
    ]


def test_json_types_are_the_reference_types():
    ours = full_record().to_dict()
    assert ref_context.RunContext.from_dict(ours).to_dict() == ours


def test_a_new_record_is_version_2():
    record = RunRecord(run_id="r", usecase="u", package="p", task_name="t", started_at="now")
    assert record.record_version == RECORD_VERSION == 2
    assert record.task_path == "u/p/t"


def test_a_record_without_record_version_loads_as_version_1_with_v2_fields_empty():
    v1 = {
        "run_id": "old",
        "task_path": "u/p/t",
        "usecase": "u",
        "package": "p",
        "task_name": "t",
        "profile": "dev",
        "model": "etl",
        "version": "1",
        "config_hash": "sha256:x",
        "started_at": "2025-01-01T00:00:00+00:00",
        "status": "success",
        "outputs": [{"name": "o", "direction": "output", "format": "csv", "location": "x",
                     "row_count": 3, "schema_hash": HASH_A, "data_hash": HASH_B}],
    }  # fmt: skip
    for load in (RunRecord.model_validate, lambda d: RunRecord.from_json(json.dumps(d))):
        record = load(v1)
        assert record.record_version == 1
        assert record.code_hash is None and record.environment_hash is None
        assert record.environment == {} and record.timings == [] and record.expectations == []
        assert record.inputs == []
        assert record.outputs[0].hash_method is None


def test_unknown_fields_survive_a_load_and_a_save():
    data = full_record().to_dict()
    data["written_by_a_newer_version"] = {"nested": [1, 2, {"x": None}]}
    data["outputs"][0]["step_field_from_the_future"] = "kept"
    again = RunRecord.from_json(RunRecord.from_json(json.dumps(data)).to_json())
    assert again.to_dict() == data


def test_to_json_is_indented_and_keeps_non_ascii_text():
    record = full_record().model_copy(update={"profile": "São Paulo ✓"})
    text = record.to_json()
    assert "São Paulo ✓" in text
    assert text == json.dumps(record.to_dict(), indent=2, ensure_ascii=False)
    assert RunRecord.from_json(text) == record


def test_model_validate_json_follows_the_version_1_rule():
    text = json.dumps({"run_id": "r", "usecase": "u", "package": "p", "task_name": "t",
                       "task_path": "u/p/t", "started_at": "x"})  # fmt: skip
    assert RunRecord.model_validate_json(text).record_version == 1


def test_null_collections_load_as_empty():
    data = full_record().to_dict()
    data.update(inputs=None, variables=None, environment=None, timings=None, llm_budget=None)
    record = RunRecord.model_validate(data)
    assert record.inputs == [] and record.variables == {} and record.environment == {}


def test_step_from_fingerprint_carries_hashes_count_and_method():
    fp = Fingerprint(schema_hash=HASH_A, data_hash=HASH_B, row_count=7)
    step = StepRecord.from_fingerprint(
        fp,
        name="daily",
        direction="output",
        format="parquet",
        location="s3://b/daily",
        hash_seconds=0.5,
        hash_basis="materialised",
    )
    assert (step.schema_hash, step.data_hash, step.row_count) == (HASH_A, HASH_B, 7)
    assert step.hash_method == "rows-v1" and step.hash_error is None
    assert (step.format, step.location, step.hash_seconds, step.hash_basis) == (
        "parquet",
        "s3://b/daily",
        0.5,
        "materialised",
    )


def test_a_failed_hash_stays_failed_and_never_borrows_the_schema_hash():
    fp = Fingerprint(schema_hash=HASH_A, data_hash=None, row_count=None, error="OSError: gone")
    step = StepRecord.from_fingerprint(fp, name="orders", direction="input")
    assert step.data_hash is None and step.row_count is None
    assert step.hash_error == "OSError: gone"
    assert step.schema_hash == HASH_A


def test_an_unknown_hash_basis_is_refused():
    fp = Fingerprint(schema_hash=HASH_A, data_hash=HASH_B, row_count=1)
    with pytest.raises(ValueError, match="hash_basis"):
        StepRecord.from_fingerprint(fp, name="o", direction="output", hash_basis="guessed")


def test_a_step_direction_is_input_or_output():
    with pytest.raises(ValidationError):
        StepRecord(name="o", direction="sideways")


def test_text_that_is_not_a_record_object_is_a_clear_error():
    with pytest.raises(ValueError, match="not a JSON document"):
        RunRecord.from_json('{"run_id": ')
    with pytest.raises(ValueError, match="JSON object"):
        RunRecord.from_json("[1, 2]")
    with pytest.raises(ValidationError, match="run_id"):
        RunRecord.from_json('{"task_path": "u/p/t"}')


def test_a_step_is_found_by_name_and_direction():
    record = full_record()
    assert record.step("daily").direction == "output"
    assert record.step("orders", "input").row_count == 12
    with pytest.raises(KeyError, match="has: daily"):
        record.step("missing")
