"""compare(a, b): the ADR's verdicts, and the reference's ``lineage compare`` as the oracle."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sample_records import sample_environment

from ubunye_core.records.compare import compare
from ubunye_core.records.model import RunRecord, StepRecord

# Runs no Dagster: CI runs it on the newest Dagster only (tests/unit/test_code_shape.py checks).
pytestmark = pytest.mark.dagster_free

ref_cli = pytest.importorskip("ubunye.cli.lineage")
ref_context = pytest.importorskip("ubunye.lineage.context")

H1, H2 = "sha256:" + "1" * 64, "sha256:" + "2" * 64
ENV = sample_environment(pandas="3.1.1", pyarrow="26.0.1")


def step(name="out", direction="output", **fields) -> StepRecord:
    values = {"row_count": 3, "schema_hash": H1, "data_hash": H1, "hash_method": "rows-v1"}
    values.update(fields)
    return StepRecord(name=name, direction=direction, **values)


def run(run_id="a", outputs=(), inputs=(), **fields) -> RunRecord:
    values = {
        "started_at": "2026-01-01T00:00:00+00:00",
        "status": "success",
        "duration_sec": 1.0,
        "config_hash": "sha256:cfg",
        "code_hash": "sha256:code",
        "environment": ENV,
        "environment_hash": "sha256:env",
    }
    values.update(fields)
    return RunRecord(
        run_id=run_id,
        usecase="u",
        package="p",
        task_name="t",
        inputs=list(inputs),
        outputs=list(outputs),
        **values,
    )


def verdict(a: StepRecord | None, b: StepRecord | None) -> str:
    result = compare(run("a", [a] if a else []), run("b", [b] if b else []))
    return result.outputs["out"].data_hash.state


def test_the_same_rows_are_unchanged():
    assert verdict(step(), step()) == "unchanged"


def test_different_rows_are_changed():
    assert verdict(step(), step(data_hash=H2)) == "changed"


def test_two_missing_hashes_are_unknown_not_unchanged():
    result = compare(run("a", [step(data_hash=None)]), run("b", [step(data_hash=None)]))
    assert result.outputs["out"].data_hash.state == "unknown"
    assert result.outputs["out"].data_hash.why


def test_a_missing_hash_is_unknown_and_says_why():
    failed = step(data_hash=None, row_count=None, hash_error="OSError: bucket gone")
    result = compare(run("a", [step()]), run("b", [failed]))
    assert result.outputs["out"].data_hash.state == "unknown"
    assert result.outputs["out"].data_hash.why == "OSError: bucket gone"


def test_a_source_that_moved_before_the_hash_makes_the_verdict_unknown():
    moved = step(source_changed=True)
    assert verdict(step(), moved) == "unknown"
    assert verdict(moved, step()) == "unknown"


def test_hashes_made_by_different_methods_are_not_comparable():
    assert verdict(step(hash_method=None), step()) == "not comparable"
    assert verdict(step(hash_method=None), step(hash_method=None)) == "unchanged"


def test_a_missing_hash_outranks_a_moved_source_which_outranks_the_method():
    assert verdict(step(data_hash=None, source_changed=True), step(hash_method="x")) == "unknown"
    result = compare(
        run("a", [step(source_changed=True, hash_method="old")]), run("b", [step(data_hash=H2)])
    )
    assert result.outputs["out"].data_hash.state == "unknown"
    assert "source" in result.outputs["out"].data_hash.why


def test_a_step_on_one_side_only_is_unknown():
    assert verdict(step(), None) == "unknown"
    assert verdict(None, step()) == "unknown"


def test_row_count_and_schema_hash_are_each_changed_or_not():
    result = compare(run("a", [step()]), run("b", [step(row_count=4, schema_hash=H2)]))
    out = result.outputs["out"]
    assert (out.row_count.a, out.row_count.b, out.row_count.changed) == (3, 4, True)
    assert out.schema_hash.changed
    same = compare(run("a", [step()]), run("b", [step()])).outputs["out"]
    assert not same.row_count.changed and not same.schema_hash.changed


def test_inputs_are_compared_like_outputs():
    a = run("a", inputs=[step("orders", "input")])
    b = run("b", inputs=[step("orders", "input", data_hash=H2)])
    assert compare(a, b).inputs["orders"].data_hash.state == "changed"


def test_status_duration_and_the_evidence_hashes_are_compared():
    a = run("a")
    b = run(
        "b",
        status="error",
        duration_sec=2.0,
        config_hash="sha256:cfg2",
        code_hash="sha256:code2",
        environment_hash="sha256:env2",
    )
    result = compare(a, b)
    for name in ("status", "duration_sec", "config_hash", "code_hash", "environment_hash"):
        assert getattr(result, name).changed, name
    assert not any(getattr(compare(a, a), n).changed for n in ("status", "code_hash"))


def test_packages_python_and_platform_that_moved_are_named():
    moved_env = {
        **ENV,
        "python": "3.12.1",
        "platform": "darwin",
        "machine": "arm64",
        "packages": {"pandas": "2.2.0", "pyarrow": "26.0.1", "polars": "2.1.0"},
    }
    result = compare(run("a"), run("b", environment=moved_env))
    moves = {name: (m.a, m.b) for name, m in result.environment_changes.items()}
    assert moves == {
        "pandas": ("3.1.1", "2.2.0"),
        "polars": (None, "2.1.0"),
        "python": ("3.11.7", "3.12.1"),
        "platform": ("linux", "darwin"),
    }


def test_the_helpers_name_changed_outputs_and_what_moved():
    a = run("a", [step()], inputs=[step("orders", "input")])
    b = run("b", [step(data_hash=H2)], inputs=[step("orders", "input")], code_hash="sha256:new")
    result = compare(a, b)
    assert result.changed_outputs() == ["out"]
    assert result.moved_causes() == ["code_hash"]


# --- the reference as oracle ------------------------------------------------------------------

hashes = st.sampled_from([None, H1, H2])
methods = st.sampled_from([None, "rows-v1", "rows-v0"])
steps = st.builds(
    StepRecord,
    name=st.sampled_from(["x", "y", "z"]),
    direction=st.just("output"),
    data_hash=hashes,
    hash_method=methods,
    source_changed=st.sampled_from([None, False, True]),
    row_count=st.sampled_from([None, 1, 2]),
    schema_hash=hashes,
    hash_error=st.sampled_from([None, "E: boom"]),
)
packages = st.dictionaries(
    st.sampled_from(["pandas", "pyarrow", "dagster"]), st.sampled_from(["1", "2"]), max_size=3
)
runs = st.builds(
    lambda run_id, outs, ins, status, code, pk, py: run(
        run_id,
        outs,
        [s.model_copy(update={"direction": "input"}) for s in ins],
        status=status,
        code_hash=code,
        environment={**ENV, "packages": pk, "python": py},
    ),
    st.sampled_from(["a", "b"]),
    st.lists(steps, max_size=3),
    st.lists(steps, max_size=2),
    st.sampled_from(["success", "error"]),
    st.sampled_from([None, "sha256:c1", "sha256:c2"]),
    packages,
    st.sampled_from(["3.11.7", "3.12.0"]),
)


def without_why(document: dict) -> dict:
    for side in ("inputs", "outputs"):
        for entry in document[side].values():
            entry["data_hash"] = {k: v for k, v in entry["data_hash"].items() if k != "why"}
    return document


@settings(max_examples=150, deadline=None)
@given(runs, runs)
def test_every_verdict_is_the_reference_verdict(a, b):
    theirs = ref_cli.compare_records(
        ref_context.RunContext.from_dict(a.to_dict()),
        ref_context.RunContext.from_dict(b.to_dict()),
    )
    ours = compare(a, b).to_dict()
    for side in ("inputs", "outputs"):
        for name, entry in theirs[side].items():
            assert ("why" in entry["data_hash"]) == ("why" in ours[side][name]["data_hash"])
    assert without_why(ours) == without_why(theirs)
