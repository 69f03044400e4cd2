"""`lineage compare` gives the drift sensor's verdict, judged from two run records."""

from __future__ import annotations

import json
import os
from typing import Any

import dagster as dg
import pytest

from ubunye_core.cli import main
from ubunye_core.records.drift import INPUTS_CHANGED, INPUTS_UNKNOWN, SAME_INPUTS
from ubunye_core.records.model import RunRecord, StepRecord
from ubunye_core.store import LineageStore, task_name_for_key
from ubunye_dagster.drift.sensor import DriftCursor, judge_pending_materialisations
from ubunye_dagster.drift.settings import DriftSettings
from ubunye_dagster.receipts.metadata import output_metadata

ASSET = ["shop", "totals"]
CODE_V1, CODE_V2 = "sha256:" + "c" * 64, "sha256:" + "d" * 64
ENV_V1, ENV_V2 = "sha256:" + "e" * 64, "sha256:" + "f" * 64
DATA_1, DATA_2 = "sha256:" + "1" * 64, "sha256:" + "2" * 64
ORDERS_1, ORDERS_2 = "sha256:" + "a" * 64, "sha256:" + "b" * 64
#: Where each input of the records came from, as the IO manager writes it into `ubunye/inputs`.
INPUT_ASSET_KEYS = {"orders": "shop/orders"}


def run(
    day: int,
    *,
    data_hash: str | None = DATA_1,
    hash_error: str | None = None,
    code_hash: str = CODE_V1,
    environment_hash: str = ENV_V1,
    orders: str | None = ORDERS_1,
    partition: str | None = None,
    config_hash: str | None = None,
    reads: bool = True,
) -> RunRecord:
    """A record of one materialisation of shop/totals, which read shop/orders, on March ``day``
    (its run id ``run-<day>``, ``.<partition>`` after it when it has one)."""
    return RunRecord(
        run_id=f"run-{day}" + (f".{partition}" if partition is not None else ""),
        usecase="dagster",
        package="default",
        task_name=task_name_for_key(ASSET),
        started_at=f"2026-03-0{day}T09:00:00+00:00",
        ended_at=f"2026-03-0{day}T09:00:01+00:00",
        duration_sec=1.0,
        status="success",
        inputs=[
            StepRecord(
                name="orders",
                direction="input",
                format="parquet",
                row_count=3 if orders else None,
                data_hash=orders,
                hash_method="rows-v1" if orders else None,
                hash_error=None if orders else "not hashed: hash_inputs is off",
            )
        ]
        if reads
        else [],
        config_hash=config_hash,
        outputs=[
            StepRecord(
                name="result",
                direction="output",
                format="parquet",
                row_count=None if hash_error else 3,
                data_hash=data_hash,
                hash_method="rows-v1" if data_hash else None,
                hash_error=hash_error,
            )
        ],
        code_hash=code_hash,
        environment_hash=environment_hash,
        variables={
            "input_asset_keys": INPUT_ASSET_KEYS if reads else {},
            **({"partition_key": partition} if partition is not None else {}),
        },
    )


def save_runs(usecase_dir: Any, *records: RunRecord) -> LineageStore:
    """Save records oldest first, each file a second newer than the last (as runs land)."""
    store = LineageStore.for_usecase_dir(usecase_dir)
    for second, record in enumerate(records, start=1):
        path = store.save(record)
        os.utime(path.path, (1_800_000_000 + second, 1_800_000_000 + second))
    return store


def compare_json(capsys, usecase_dir: Any, *extra: str) -> dict[str, Any]:
    code = main(["lineage", "compare", "-d", str(usecase_dir), "--asset", "shop/totals", *extra])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def drift_of(capsys, usecase_dir: Any, *extra: str) -> dict[str, Any]:
    """The verdict on output `result` from `compare --asset shop/totals --json --drift`."""
    return compare_json(capsys, usecase_dir, "--json", "--drift", *extra)["drift"]["result"]


def compare_text(capsys, usecase_dir: Any, *extra: str) -> str:
    code = main(["lineage", "compare", "-d", str(usecase_dir), "--asset", "shop/totals", *extra])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


# --- the verdicts -----------------------------------------------------------------------------


def test_moved_data_under_same_code_environment_and_inputs_is_flagged_same_inputs(capsys, tmp_path):
    save_runs(tmp_path, run(1), run(2, data_hash=DATA_2))
    drift = drift_of(capsys, tmp_path)
    assert drift["verdict"] == "drift" and drift["reason"] == SAME_INPUTS and drift["flagged"]
    assert (drift["previous_run_id"], drift["current_run_id"]) == ("run-1", "run-2")
    assert "drift  result: drift (same inputs)" in compare_text(capsys, tmp_path)


def test_a_moved_input_digest_passes_as_inputs_changed_naming_the_upstream(capsys, tmp_path):
    save_runs(tmp_path, run(1), run(2, data_hash=DATA_2, orders=ORDERS_2))
    drift = drift_of(capsys, tmp_path)
    assert (drift["verdict"], drift["reason"], drift["flagged"]) == (
        "explained",
        INPUTS_CHANGED,
        False,
    )
    assert drift["inputs_moved"] == ["shop/orders"] and "shop/orders" in drift["why"]
    text = compare_text(capsys, tmp_path)
    assert "drift  result: explained (inputs changed: shop/orders)" in text


def test_inputs_changed_flags_when_asked_with_flag(capsys, tmp_path):
    save_runs(tmp_path, run(1), run(2, data_hash=DATA_2, orders=ORDERS_2))
    drift = drift_of(capsys, tmp_path, "--flag", "inputs changed")
    assert drift["flagged"] and drift["outcome"] == "drift (inputs changed: shop/orders)"


def test_a_config_change_explains_the_moved_data(capsys, tmp_path):
    before = run(1, config_hash="sha256:" + "7" * 64)
    save_runs(tmp_path, before, run(2, data_hash=DATA_2, config_hash="sha256:" + "8" * 64))
    drift = drift_of(capsys, tmp_path)
    assert drift["outcome"] == "explained (config changed)" and not drift["flagged"]


def test_an_asset_reading_no_asset_is_a_source_unless_strict(capsys, tmp_path):
    save_runs(tmp_path, run(1, reads=False), run(2, data_hash=DATA_2, reads=False))
    assert drift_of(capsys, tmp_path)["outcome"] == "explained (source: reads no asset)"
    strict = drift_of(capsys, tmp_path, "--strict-sources")
    assert strict["outcome"] == "drift (same inputs)" and strict["flagged"]


def test_unrecorded_input_digests_are_flagged_inputs_unknown(capsys, tmp_path):
    save_runs(tmp_path, run(1, orders=None), run(2, data_hash=DATA_2, orders=None))
    drift = drift_of(capsys, tmp_path)
    assert (drift["verdict"], drift["reason"]) == ("drift", INPUTS_UNKNOWN)
    assert drift["inputs_unknown"] == ["shop/orders"] and drift["flagged"]


def test_a_code_change_explains_the_moved_data_and_is_not_flagged(capsys, tmp_path):
    save_runs(tmp_path, run(1), run(2, data_hash=DATA_2, code_hash=CODE_V2))
    drift = drift_of(capsys, tmp_path)
    assert drift["verdict"] == "explained" and not drift["flagged"] and drift["reason"] is None
    assert drift["why"] == "data changed, explained: code changed"
    assert drift["outcome"] == "explained (code changed)"
    assert "drift  result: explained (code changed)" in compare_text(capsys, tmp_path)


def test_an_environment_change_explains_the_moved_data_and_is_not_flagged(capsys, tmp_path):
    changed = run(2, data_hash=DATA_2, environment_hash=ENV_V2)
    save_runs(tmp_path, run(1), changed)
    drift = drift_of(capsys, tmp_path)
    assert drift["verdict"] == "explained" and not drift["flagged"]
    assert "environment changed" in drift["why"]


def test_identical_data_is_unchanged(capsys, tmp_path):
    save_runs(tmp_path, run(1), run(2))
    drift = drift_of(capsys, tmp_path)
    assert drift["verdict"] == "unchanged" and not drift["flagged"]
    assert "drift  result: unchanged" in compare_text(capsys, tmp_path)


def test_a_missing_data_hash_is_not_judged_and_says_why(capsys, tmp_path):
    failed = run(2, data_hash=None, hash_error="TypeError: unhashable type: 'dict'")
    save_runs(tmp_path, run(1), failed)
    drift = drift_of(capsys, tmp_path)
    assert drift["verdict"] == "not judged" and not drift["flagged"]
    assert (
        drift["why"] == "this materialisation has no data hash: TypeError: unhashable type: 'dict'"
    )
    assert "drift  result: not judged (this materialisation has no data hash" in compare_text(
        capsys, tmp_path
    )


# --- which runs, which outputs ------------------------------------------------------------------


def test_the_earlier_started_run_is_the_previous_one_whatever_the_run_id_order(capsys, tmp_path):
    save_runs(tmp_path, run(1), run(2, data_hash=DATA_2, orders=ORDERS_2))
    document = compare_json(
        capsys, tmp_path, "--json", "--drift", "--run-id1", "run-2", "--run-id2", "run-1"
    )
    assert (document["a"]["run_id"], document["b"]["run_id"]) == ("run-2", "run-1")
    drift = document["drift"]["result"]
    assert (drift["previous_run_id"], drift["current_run_id"]) == ("run-1", "run-2")
    assert drift["reason"] == INPUTS_CHANGED


def test_runs_of_different_partitions_are_never_judged_against_each_other(capsys, tmp_path):
    north = run(1, partition="north")
    south = run(2, data_hash=DATA_2, partition="south")
    save_runs(tmp_path, north, south)
    drift = drift_of(capsys, tmp_path, "--run-id1", "run-1.north", "--run-id2", "run-2.south")
    assert drift["verdict"] == "not judged" and not drift["flagged"]
    assert "different partitions (north before, south now)" in drift["why"]


def test_by_default_the_newest_run_is_compared_with_the_previous_run_of_its_partition(
    capsys, tmp_path
):
    save_runs(
        tmp_path,
        run(1, partition="south"),
        run(2, partition="north"),
        run(3, data_hash=DATA_2, partition="south"),
        run(4, partition="north"),
        run(5, data_hash=DATA_2, partition="south"),
    )
    document = compare_json(capsys, tmp_path, "--json", "--drift")
    assert (document["a"]["run_id"], document["b"]["run_id"]) == ("run-3.south", "run-5.south")
    assert document["drift"]["result"]["verdict"] == "unchanged"


def test_default_compare_of_a_partition_with_one_run_names_the_problem(capsys, tmp_path):
    save_runs(
        tmp_path,
        run(1, partition="north"),
        run(2, partition="south"),
    )
    code = main(["lineage", "compare", "-d", str(tmp_path), "--asset", "shop/totals"])
    err = capsys.readouterr().err
    assert code == 1
    assert err.startswith("error: compare needs two runs of the same partition")
    assert "run-2.south" in err and "'south'" in err


def test_only_outputs_in_both_runs_are_judged(capsys, tmp_path):
    renamed = run(2, data_hash=DATA_2)
    renamed.outputs[0].name = "summary"
    save_runs(tmp_path, run(1), renamed)
    assert compare_json(capsys, tmp_path, "--json", "--drift")["drift"] == {}
    assert "no output is in both runs" in compare_text(capsys, tmp_path)


def test_json_without_drift_is_the_reference_compare_document(capsys, tmp_path):
    save_runs(tmp_path, run(1), run(2, data_hash=DATA_2))
    plain = compare_json(capsys, tmp_path, "--json")
    with_drift = compare_json(capsys, tmp_path, "--json", "--drift")
    assert "drift" not in plain
    assert {key: with_drift[key] for key in plain} == plain


# --- the same verdict as the sensor -------------------------------------------------------------

SCENARIOS = {
    "same inputs": {"data_hash": DATA_2},
    "inputs changed": {"data_hash": DATA_2, "orders": ORDERS_2},
    "inputs unknown": {"data_hash": DATA_2, "orders": None},
    "code changed": {"data_hash": DATA_2, "code_hash": CODE_V2},
    "config changed": {"data_hash": DATA_2, "config_hash": "sha256:" + "9" * 64},
    "source": {"data_hash": DATA_2, "reads": False},
    "environment changed": {"data_hash": DATA_2, "environment_hash": ENV_V2},
    "unchanged": {},
    "missing hash": {"data_hash": None, "hash_error": "ValueError: no rows"},
}


def sensor_judgement(store: LineageStore, records: list[RunRecord]):
    """What the drift sensor decides on the last record, each record reported to a Dagster
    instance as the IO manager's materialisation metadata."""
    key = dg.AssetKey(ASSET)
    with dg.DagsterInstance.ephemeral() as instance:
        for record in records:
            metadata = output_metadata(
                record,
                record.outputs[0],
                record_path=str(store.path_for(record.task_path, record.run_id)),
                input_asset_keys=INPUT_ASSET_KEYS,
            )
            instance.report_runless_asset_event(dg.AssetMaterialization(key, metadata=metadata))
        findings, _ = judge_pending_materialisations(
            instance, DriftCursor(), DriftSettings(), [key]
        )
    assert len(findings) == len(records)
    return findings[-1].judgement


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_the_cli_verdict_equals_the_sensor_verdict_on_the_same_records(capsys, tmp_path, scenario):
    first_inputs = {"orders": None} if scenario == "inputs unknown" else {}
    first_inputs.update(
        {"reads": False} if scenario == "source" else {},
        **({"config_hash": "sha256:" + "6" * 64} if scenario == "config changed" else {}),
    )
    records = [run(1, **first_inputs), run(2, **SCENARIOS[scenario])]
    store = save_runs(tmp_path, *records)
    judgement = sensor_judgement(store, records)
    drift = drift_of(capsys, tmp_path)
    assert drift["verdict"] == judgement.verdict.value
    assert drift["reason"] == judgement.drift_reason
    assert drift["flagged"] == judgement.is_flagged()
    assert drift["outcome"] == judgement.outcome()
    assert drift["inputs_moved"] == list(judgement.moved_inputs)
    assert drift["inputs_unknown"] == list(judgement.unknown_inputs)


# --- records the IO manager writes: the same evidence as the sensor's tags -------------------


def test_compare_on_io_manager_records_gives_the_sensors_verdict_for_dagster_upstreams(
    capsys, tmp_path
):
    import random

    import pandas as pd

    from ubunye_dagster import UbunyeIOManager, UbunyeResource
    from ubunye_dagster.drift.sensor import DriftCursor, judge_pending_materialisations
    from ubunye_dagster.drift.settings import DriftSettings

    published = {"version": "v1"}

    @dg.observable_source_asset(name="feed")
    def feed() -> dg.DataVersion:
        return dg.DataVersion(published["version"])

    # No return annotations: this module's annotations are strings Dagster cannot resolve here.
    @dg.asset(key=["shop", "totals"], deps=[feed])
    def totals():
        return pd.DataFrame({"total": [random.random()]})

    @dg.asset(key=["shop", "ingested"], metadata={"ubunye/deterministic": True})
    def ingested():
        return pd.DataFrame({"x": [random.random()]})

    manager = UbunyeIOManager(
        base_path=str(tmp_path / "data"), ubunye=UbunyeResource(usecase_dir=str(tmp_path))
    )
    defs = dg.Definitions(
        assets=[feed, totals, ingested],
        jobs=[dg.define_asset_job("observe_feed", selection=[feed])],
        resources={"io_manager": manager},
    )
    with dg.instance_for_test() as instance:
        for version in ("v1", "v2"):
            published["version"] = version
            assert defs.resolve_job_def("observe_feed").execute_in_process(instance=instance)
            for asset in (totals, ingested):
                result = dg.materialize(
                    [feed, totals, ingested],
                    instance=instance,
                    selection=[asset],
                    resources={"io_manager": manager},
                )
                assert result.success
        findings, _ = judge_pending_materialisations(
            instance, DriftCursor(), DriftSettings(), [totals.key, ingested.key]
        )
    by_asset = {f.asset_key.to_user_string(): f.judgement for f in findings}
    sensor_totals, sensor_ingested = by_asset["shop/totals"], by_asset["shop/ingested"]
    assert sensor_totals.outcome() == "explained (inputs changed: feed)"
    assert sensor_ingested.outcome() == "drift (same inputs)"
    for key, judgement in (("shop/totals", sensor_totals), ("shop/ingested", sensor_ingested)):
        code = main(
            ["lineage", "compare", "-d", str(tmp_path), "--asset", key, "--json", "--drift"]
        )
        assert code == 0
        assert json.loads(capsys.readouterr().out)["drift"][key]["outcome"] == judgement.outcome()
