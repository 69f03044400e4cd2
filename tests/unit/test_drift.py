"""The drift judgement on plain receipts: what is flagged, explained, or cannot be judged."""

from __future__ import annotations

import json
from typing import get_args

import pytest

from ubunye_core.records.drift import (
    SOURCE_EXPLANATION,
    DriftEvidence,
    FlagReason,
    InputDigest,
    JudgementVerdict,
    carries_ubunye_metadata,
    inputs_from_document,
    judge,
    strongest_reason,
    validate_flag_reasons,
)
from ubunye_core.records.model import RunRecord
from ubunye_core.records.vocabulary import (
    DEFAULT_FLAG_REASONS,
    DRIFT_REASONS,
    INPUTS_CHANGED,
    INPUTS_UNKNOWN,
    SAME_INPUTS,
)

# Runs no Dagster: CI runs it on the newest Dagster only (tests/unit/test_code_shape.py checks).
pytestmark = pytest.mark.dagster_free

CODE = "sha256:" + "c" * 64
ENV = "sha256:" + "e" * 64


def receipt(data_hash: str | None = "sha256:d1", **changes) -> DriftEvidence:
    fields = {
        "data_hash": data_hash,
        "hash_method": "rows-v1",
        "code_hash": CODE,
        "environment_hash": ENV,
        "inputs": {"orders": InputDigest(asset_key="raw/orders", data_hash="sha256:i1")},
    }
    fields.update(changes)
    return DriftEvidence(**fields)


def run_record(**fields) -> RunRecord:
    """A run of one task with ``fields``; each step given its direction."""
    for key, direction in (("inputs", "input"), ("outputs", "output")):
        fields[key] = [{"direction": direction, **step} for step in fields.get(key, [])]
    identity = {"run_id": "r1", "task_path": "u/p/t", "usecase": "u", "package": "p"}
    return RunRecord(**identity, task_name="t", started_at="2026-01-01T00:00:00+00:00", **fields)


def test_without_a_previous_materialisation_nothing_is_judged():
    judgement = judge(receipt(), None)
    assert judgement.verdict is JudgementVerdict.NOT_JUDGED
    assert "no previous materialisation" in judgement.reason
    assert not judgement.is_flagged()


def test_same_data_is_reproduced_even_when_code_changed():
    judgement = judge(receipt(code_hash="sha256:other"), receipt())
    assert judgement.verdict is JudgementVerdict.UNCHANGED
    assert not judgement.is_flagged()


def test_changed_data_under_the_same_code_environment_and_inputs_is_flagged_same_inputs():
    judgement = judge(receipt("sha256:d2"), receipt("sha256:d1"))
    assert judgement.verdict is JudgementVerdict.DRIFT
    assert judgement.reason == SAME_INPUTS
    assert judgement.is_flagged()


def test_an_asset_that_reads_no_asset_is_a_source_and_its_change_is_explained():
    judgement = judge(
        receipt("sha256:d2", inputs={}, upstream_versions={}),
        receipt("sha256:d1", inputs={}, upstream_versions={}),
    )
    assert judgement.verdict is JudgementVerdict.EXPLAINED
    assert judgement.reason == SOURCE_EXPLANATION
    assert not judgement.is_flagged(DRIFT_REASONS)
    assert judgement.outcome() == "explained (source: reads no asset)"


def test_a_source_that_declares_itself_deterministic_is_judged_strictly():
    before = receipt("sha256:d1", inputs={}, deterministic=True)
    judgement = judge(receipt("sha256:d2", inputs={}, deterministic=True), before)
    assert judgement.reason == SAME_INPUTS
    assert judgement.is_flagged()


def test_strict_sources_judges_every_source_strictly():
    judgement = judge(
        receipt("sha256:d2", inputs={}), receipt("sha256:d1", inputs={}), strict_sources=True
    )
    assert judgement.outcome() == "drift (same inputs)"


def test_a_moved_input_passes_as_inputs_changed_naming_the_upstream_by_default():
    before = receipt("sha256:d1")
    now = receipt(
        "sha256:d2",
        inputs={"orders": InputDigest(asset_key="raw/orders", data_hash="sha256:i2")},
    )
    judgement = judge(now, before)
    assert judgement.reason == INPUTS_CHANGED
    assert judgement.moved_inputs == ("raw/orders",)
    assert not judgement.is_flagged()
    assert judgement.outcome() == "explained (inputs changed: raw/orders)"


def test_inputs_changed_flags_when_put_in_flag_reasons():
    now = receipt(
        "sha256:d2", inputs={"orders": InputDigest(asset_key="raw/orders", data_hash="x")}
    )
    judgement = judge(now, receipt("sha256:d1"))
    assert judgement.is_flagged(DRIFT_REASONS)
    assert judgement.outcome(DRIFT_REASONS) == "drift (inputs changed: raw/orders)"


def test_the_defaults_flag_same_inputs_and_inputs_unknown_only():
    assert DEFAULT_FLAG_REASONS == (SAME_INPUTS, INPUTS_UNKNOWN)


def test_the_flag_reason_type_offers_exactly_the_drift_reasons():
    assert get_args(FlagReason) == DRIFT_REASONS


def test_a_changed_config_explains_the_change():
    judgement = judge(
        receipt("sha256:d2", config_hash="sha256:k2"), receipt(config_hash="sha256:k1")
    )
    assert judgement.verdict is JudgementVerdict.EXPLAINED
    assert judgement.outcome() == "explained (config changed)"


def test_an_upstream_data_version_that_moved_explains_the_change_without_any_digest():
    # raw/orders stored by another IO manager: Dagster's data version is all there is.
    before = receipt("sha256:d1", inputs={}, upstream_versions={"raw/orders": "v1"})
    now = receipt("sha256:d2", inputs={}, upstream_versions={"raw/orders": "v2"})
    judgement = judge(now, before)
    assert judgement.outcome() == "explained (inputs changed: raw/orders)"


def test_an_upstream_with_the_same_data_version_is_same_inputs():
    before = receipt("sha256:d1", inputs={}, upstream_versions={"raw/orders": "v1"})
    judgement = judge(
        receipt("sha256:d2", inputs={}, upstream_versions={"raw/orders": "v1"}), before
    )
    assert judgement.reason == SAME_INPUTS


def test_an_upstream_with_no_digest_and_no_data_version_makes_the_inputs_unknown():
    # Dagster writes INITIAL for a source it never observed: no data version at all.
    before = receipt("sha256:d1", inputs={}, upstream_versions={"raw/orders": "INITIAL"})
    now = receipt("sha256:d2", inputs={}, upstream_versions={"raw/orders": "INITIAL"})
    judgement = judge(now, before)
    assert judgement.outcome() == "drift (inputs unknown: raw/orders)"
    assert judgement.is_flagged()


def test_an_input_that_appeared_counts_as_moved():
    now = receipt(
        "sha256:d2",
        inputs={
            "orders": InputDigest(asset_key="raw/orders", data_hash="sha256:i1"),
            "prices": InputDigest(asset_key="raw/prices", data_hash="sha256:p1"),
        },
    )
    judgement = judge(now, receipt("sha256:d1"))
    assert judgement.reason == INPUTS_CHANGED
    assert judgement.moved_inputs == ("raw/prices",)


def test_an_input_read_from_another_asset_counts_as_moved():
    now = receipt(
        "sha256:d2",
        inputs={"orders": InputDigest(asset_key="raw/orders_v2", data_hash="sha256:i1")},
    )
    assert judge(now, receipt("sha256:d1")).moved_inputs == ("raw/orders", "raw/orders_v2")


def test_an_input_without_a_digest_makes_the_inputs_unknown():
    now = receipt(
        "sha256:d2",
        inputs={"orders": InputDigest(asset_key="raw/orders", hash_error="OSError: gone")},
    )
    judgement = judge(now, receipt("sha256:d1"))
    assert judgement.reason == INPUTS_UNKNOWN
    assert judgement.unknown_inputs == ("raw/orders",)


def test_a_receipt_without_inputs_makes_the_inputs_unknown():
    judgement = judge(receipt("sha256:d2", inputs=None), receipt("sha256:d1"))
    assert judgement.reason == INPUTS_UNKNOWN


def test_a_changed_code_hash_explains_the_change():
    judgement = judge(receipt("sha256:d2", code_hash="sha256:new"), receipt("sha256:d1"))
    assert judgement.verdict is JudgementVerdict.EXPLAINED
    assert judgement.reason == "code changed"
    assert not judgement.is_flagged()


def test_a_changed_environment_hash_explains_the_change():
    judgement = judge(receipt("sha256:d2", environment_hash="sha256:new"), receipt("sha256:d1"))
    assert judgement.verdict is JudgementVerdict.EXPLAINED
    assert judgement.reason == "environment changed"


def test_a_missing_code_hash_leaves_a_change_unattributed():
    judgement = judge(receipt("sha256:d2", code_hash=None), receipt("sha256:d1"))
    assert judgement.verdict is JudgementVerdict.NOT_JUDGED
    assert "code hash is missing" in judgement.reason


def test_a_missing_data_hash_is_not_judged_and_says_why():
    failed = receipt(None, hash_error="ArrowInvalid: bad column")
    judgement = judge(failed, receipt())
    assert judgement.verdict is JudgementVerdict.NOT_JUDGED
    assert "ArrowInvalid: bad column" in judgement.reason
    assert judge(receipt(), failed).verdict is JudgementVerdict.NOT_JUDGED


def test_different_hash_methods_are_not_comparable():
    judgement = judge(receipt("sha256:d2"), receipt("sha256:d1", hash_method=None))
    assert judgement.verdict is JudgementVerdict.NOT_JUDGED
    assert judgement.reason.startswith("not comparable")


def test_which_reasons_flag_is_configurable():
    judgement = judge(receipt("sha256:d2", inputs=None), receipt("sha256:d1"))
    assert judgement.is_flagged(DRIFT_REASONS)
    assert not judgement.is_flagged([SAME_INPUTS])


def test_unknown_flag_reasons_are_refused():
    with pytest.raises(ValueError, match="unknown drift reason"):
        validate_flag_reasons(["same input"])


def test_the_strongest_reason_is_same_inputs_then_unknown_then_changed():
    assert strongest_reason([INPUTS_CHANGED, SAME_INPUTS]) == SAME_INPUTS
    assert strongest_reason([INPUTS_CHANGED, INPUTS_UNKNOWN]) == INPUTS_UNKNOWN


def test_evidence_is_read_from_a_run_record_for_one_output():
    record = run_record(
        code_hash=CODE,
        environment_hash=ENV,
        inputs=[{"name": "orders", "data_hash": "sha256:i1", "row_count": 3}],
        outputs=[
            {"name": "totals", "data_hash": "sha256:d1", "hash_method": "rows-v1"},
            {"name": "rejects", "data_hash": None, "hash_error": "OSError: gone"},
        ],
    )
    totals = DriftEvidence.from_record(record, "totals")
    assert totals == receipt(inputs={"orders": InputDigest(data_hash="sha256:i1", row_count=3)})
    assert DriftEvidence.from_record(record, "rejects").hash_error == "OSError: gone"
    with pytest.raises(ValueError, match="name the one to judge"):
        DriftEvidence.from_record(record)
    with pytest.raises(ValueError, match="no output 'scores'"):
        DriftEvidence.from_record(record, "scores")


def test_an_inputs_document_is_read_from_a_mapping_or_its_json_text():
    document = {"orders": {"asset_key": "raw/orders", "data_hash": "sha256:i1", "row_count": 3}}
    expected = {"orders": InputDigest(asset_key="raw/orders", data_hash="sha256:i1", row_count=3)}
    assert inputs_from_document(document) == expected
    assert inputs_from_document(json.dumps(document)) == expected
    assert inputs_from_document(None) is None
    assert inputs_from_document("not json") is None


def test_ubunye_metadata_is_recognised_by_its_key_prefix():
    assert carries_ubunye_metadata({"ubunye/data_hash": "sha256:d1"})
    assert not carries_ubunye_metadata({"dagster/row_count": 3})


def test_a_run_record_fills_only_what_the_metadata_lacks():
    sparse = DriftEvidence(data_hash="sha256:d1", hash_method="rows-v1", code_hash="sha256:mine")
    record = run_record(
        code_hash="sha256:from-record",
        environment_hash=ENV,
        inputs=[{"name": "orders", "data_hash": "sha256:i1", "row_count": 3}],
        outputs=[{"name": "result", "data_hash": "sha256:other-digest", "hash_method": "x"}],
    )
    filled = sparse.filled_from_record(record)
    assert filled.code_hash == "sha256:mine"
    assert filled.environment_hash == ENV
    assert filled.inputs == {"orders": InputDigest(data_hash="sha256:i1", row_count=3)}
    assert filled.data_hash == "sha256:d1"
    assert filled.hash_method == "rows-v1"
