"""Interop with the real client, ``ubunye-engine==0.8.0``: each tool reads the other's records.

The reference CLI runs as a subprocess (``ubunye lineage ... --json``) on records our store wrote;
records the reference's own recorder wrote are read by our store and our CLI. Verdicts of both
``compare``s must be equal.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from typing import Any

import pytest

from ubunye_core.cli import main
from ubunye_core.records.compare import compare
from ubunye_core.records.model import RunRecord, StepRecord
from ubunye_core.store import LineageStore, encode_name, task_name_for_key
from ubunye_rows import fingerprint
from ubunye_rows.evidence import code_hash, environment, environment_hash

# Runs no Dagster: CI runs it on the newest Dagster only (tests/unit/test_code_shape.py checks).
pytestmark = pytest.mark.dagster_free

pd = pytest.importorskip("pandas")
pytest.importorskip("ubunye.lineage.recorder")

REFERENCE = [
    sys.executable,
    "-c",
    "import sys; from ubunye.cli.main import main; sys.argv[0] = 'ubunye'; sys.exit(main())",
]
H1, H2, H3 = ("sha256:" + c * 64 for c in "123")
RUN_1 = "5e0c1b7a-0000-4000-8000-000000000001"
RUN_2 = "9a7d2c44-0000-4000-8000-000000000002"


def reference(*args: str) -> Any:
    """Run ``ubunye lineage <args> --json`` and return its JSON document."""
    done = subprocess.run(
        [*REFERENCE, "lineage", *args, "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)


def ours(capsys, *args: str) -> Any:
    """Run ``ubunye-dagster lineage <args> --json`` in process and return its JSON document."""
    code = main(["lineage", *args, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def known_fields(document: dict) -> dict:
    """A record document without the fields our model does not know (the reference drops them)."""
    known = {k: v for k, v in document.items() if k in RunRecord.model_fields}
    for side in ("inputs", "outputs"):
        known[side] = [
            {k: v for k, v in step.items() if k in StepRecord.model_fields} for step in known[side]
        ]
    return known


def without_why(document: dict) -> dict:
    for side in ("inputs", "outputs"):
        for entry in document[side].values():
            entry["data_hash"].pop("why", None)
    return document


def our_step(name: str, direction: str = "output", **fields: Any) -> StepRecord:
    values = dict(format="parquet", location=f"/data/{name}.parquet", row_count=10,
                  schema_hash=H1, data_hash=H1, hash_method="rows-v1", hash_seconds=0.01,
                  hash_basis="materialised")  # fmt: skip
    values.update(fields)
    return StepRecord(name=name, direction=direction, **values)


def our_run(run_id: str, day: int, steps: list[StepRecord], **fields: Any) -> RunRecord:
    env = environment()
    values = dict(
        run_id=run_id, usecase="shop", package="sales", task_name="daily",
        profile="dagster", model="", version="", config_hash="sha256:cfg",
        started_at=f"2026-01-0{day}T08:00:00.000001+00:00",
        ended_at=f"2026-01-0{day}T08:00:03.500001+00:00", duration_sec=3.5, status="success",
        inputs=[s for s in steps if s.direction == "input"],
        outputs=[s for s in steps if s.direction == "output"],
        engine_version="0.1.0", backend="pandas", variables={"partition": None},
        code_hash="sha256:" + "c" * 64, environment=env, environment_hash=environment_hash(env),
        timings=[{"step": "write", "output": "same", "seconds": 0.25}],
        expectations=[{"output": "same", "rule": "row_count > 0", "kind": "row_count",
                       "severity": "error", "column": None, "failed": 0, "total": 10,
                       "passed": True}],
        time_zone="UTC",
    )  # fmt: skip
    values.update(fields)
    return RunRecord(**values)


@pytest.fixture(scope="module")
def our_records(tmp_path_factory):
    """Two runs of one task written by our store, between them every verdict, plus a partition."""
    usecase_dir = tmp_path_factory.mktemp("ours")
    store = LineageStore.for_usecase_dir(usecase_dir)
    first = our_run(
        RUN_1,
        1,
        [
            our_step("orders", "input", hash_basis="recomputed"),
            our_step("same"),
            our_step("moved"),
            our_step("failed"),
            our_step("legacy", hash_method=None),
            our_step("gone"),
        ],
    )
    moved_env = {**first.environment, "python": "3.12.0"}
    moved_env["packages"] = {**moved_env["packages"], "pandas": "2.2.0"}
    second = our_run(
        RUN_2,
        2,
        [
            our_step("orders", "input", hash_basis="recomputed", source_changed=True,
                     source_note="the source moved after the read"),
            our_step("same"),
            our_step("moved", data_hash=H2, row_count=11, schema_hash=H3),
            our_step("failed", data_hash=None, row_count=None, hash_error="OSError: gone"),
            our_step("legacy"),
            our_step("new"),
        ],
        status="error",
        error="ValueError: boom",
        code_hash="sha256:" + "d" * 64,
        environment=moved_env,
        environment_hash=environment_hash(moved_env),
    )  # fmt: skip
    partition = our_run(
        f"{RUN_1}.{encode_name('us|2026-01-01')}",
        3,
        [our_step("result")],
        usecase="dagster",
        package="default",
        task_name=task_name_for_key(["raw", "orders"]),
        task_path=None,
    )
    for i, record in enumerate((first, second, partition)):
        path = store.save(record)
        os.utime(path.path, (1_700_000_000 + i, 1_700_000_000 + i))
    return usecase_dir, store, first, second, partition


def task_args(usecase_dir) -> list[str]:
    return ["-d", str(usecase_dir), "-u", "shop", "-p", "sales", "-t", "daily"]


def test_the_reference_lists_our_runs_newest_first_with_every_field_intact(our_records):
    usecase_dir, _, first, second, _ = our_records
    listed = reference("list", *task_args(usecase_dir))
    assert listed == [known_fields(second.to_dict()), known_fields(first.to_dict())]


def test_the_reference_shows_our_record_by_a_run_id_prefix(our_records):
    usecase_dir, _, first, _, _ = our_records
    shown = reference("show", *task_args(usecase_dir), "--run-id", RUN_1[:8])
    assert shown == first.to_dict()


def test_the_reference_finds_a_dagster_asset_partition_by_its_encoded_names(our_records):
    usecase_dir, _, _, _, partition = our_records
    args = ["-d", str(usecase_dir), "-u", "dagster", "-p", "default", "-t", "raw.orders"]
    trace = reference("trace", *args, "--run-id", partition.run_id)
    assert trace["run_id"] == f"{RUN_1}.us%7C2026-01-01"
    assert trace["outputs"] == partition.to_dict()["outputs"]


def test_the_reference_trace_of_our_record_is_our_trace(our_records, capsys):
    usecase_dir, _, _, second, _ = our_records
    theirs = reference("trace", *task_args(usecase_dir))
    mine = ours(capsys, "trace", *task_args(usecase_dir))
    assert theirs["run_id"] == second.run_id
    assert {k: v for k, v in theirs.items() if k != "transform"} == {
        k: mine[k] for k in theirs if k != "transform"
    }


def test_the_reference_compare_verdicts_equal_ours(our_records, capsys):
    usecase_dir, _, first, second, _ = our_records
    ids = ["--run-id1", RUN_1[:8], "--run-id2", RUN_2[:8]]
    theirs = reference("compare", *task_args(usecase_dir), *ids)
    mine = ours(capsys, "compare", *task_args(usecase_dir), *ids)
    assert without_why(theirs) == without_why(mine)
    states = {name: out["data_hash"]["state"] for name, out in mine["outputs"].items()}
    assert states == {
        "same": "unchanged",
        "moved": "changed",
        "failed": "unknown",
        "legacy": "not comparable",
        "gone": "unknown",
        "new": "unknown",
    }
    assert mine["inputs"]["orders"]["data_hash"]["state"] == "unknown"
    assert set(mine["environment_changes"]) == {"pandas", "python"}
    assert without_why(compare(first, second).to_dict()) == without_why(theirs)


def test_the_reference_search_finds_our_runs(our_records):
    usecase_dir, store, _, _, _ = our_records
    found = reference("search", "-d", str(usecase_dir), "--status", "success")
    assert {r["run_id"] for r in found} == {r.run_id for r in store.search(status="success")}
    assert len(found) == 2


# --- records the reference wrote ---------------------------------------------------------------


@pytest.fixture(scope="module")
def reference_records(tmp_path_factory):
    """Two runs recorded by the reference's own recorder, on pandas frames and a task folder."""
    from ubunye.lineage.recorder import LineageRecorder

    usecase_dir = tmp_path_factory.mktemp("theirs")
    task_dir = usecase_dir / "shop" / "ref" / "daily"
    task_dir.mkdir(parents=True)
    (task_dir / "transformations.py").write_text("def transform(df):\n    return df\n")
    recorder = LineageRecorder(base_dir=str(usecase_dir / ".ubunye" / "lineage"))
    config = {
        "MODEL": "etl",
        "VERSION": "1.0",
        "CONFIG": {
            "inputs": {"orders": {"format": "parquet", "path": "/data/orders"}},
            "outputs": {"daily": {"format": "parquet", "path": "/data/daily"}},
        },
    }
    frames = {}
    for i, run_id in enumerate(("ref-run-0001", "ref-run-0002")):
        context = types.SimpleNamespace(
            run_id=run_id,
            task_name="shop/ref/daily",
            profile="dev",
            config_hash="sha256:cfg",
            backend="pandas",
            task_dir=str(task_dir),
            time_zone="UTC",
            variables={"dt": f"2026-01-0{i + 1}"},
        )
        orders = pd.DataFrame({"id": [1, 2, 3], "name": ["a", "b", None]})
        daily = pd.DataFrame({"id": [1, 2, 3 + i], "total": [1.5, float("nan"), -0.0]})
        frames[run_id] = (orders, daily)
        recorder.task_start(context=context, config=config)
        recorder.task_end(
            context=context,
            config=config,
            outputs={"daily": daily},
            inputs={"orders": orders},
            status="success",
            duration_sec=0.5 + i,
            timings=[{"step": "read", "input": "orders", "seconds": 0.1}],
            expectations=[{"output": "daily", "rule": "not_null(id)", "kind": "not_null",
                           "severity": "error", "column": "id", "failed": 0, "total": 3,
                           "passed": True}],
        )  # fmt: skip
        path = usecase_dir / ".ubunye/lineage/shop/ref/daily" / f"{run_id}.json"
        os.utime(path, (1_700_000_000 + i, 1_700_000_000 + i))
    return usecase_dir, task_dir, frames


def test_our_store_reads_reference_records_field_for_field(reference_records):
    usecase_dir, _, _ = reference_records
    store = LineageStore.for_usecase_dir(usecase_dir)
    runs = store.list_runs("shop/ref/daily")
    assert [r.run_id for r in runs] == ["ref-run-0002", "ref-run-0001"]
    for record in runs:
        path = store.path_for("shop/ref/daily", record.run_id)
        assert record.to_dict() == json.loads(path.read_text(encoding="utf-8"))
        assert record.record_version == 2


def test_reference_evidence_and_hashes_agree_with_ours(reference_records):
    usecase_dir, task_dir, frames = reference_records
    record = LineageStore.for_usecase_dir(usecase_dir).load("shop/ref/daily", "ref-run-0001")
    orders, daily = frames["ref-run-0001"]
    assert record.code_hash == code_hash(task_dir)
    assert record.step("daily").data_hash == fingerprint(daily).data_hash
    assert record.step("orders", "input").data_hash == fingerprint(orders).data_hash
    assert record.environment["packages"].items() <= environment()["packages"].items()


def test_our_cli_traces_and_compares_reference_records(reference_records, capsys):
    usecase_dir, _, _ = reference_records
    args = ["-d", str(usecase_dir), "-u", "shop", "-p", "ref", "-t", "daily"]
    trace = ours(capsys, "trace", *args)
    assert trace["run_id"] == "ref-run-0002" and trace["outputs"][0]["row_count"] == 3
    assert trace["expectations"][0]["rule"] == "not_null(id)"
    mine = ours(capsys, "compare", *args)
    theirs = reference("compare", *args, "--run-id1", "ref-run-0001", "--run-id2", "ref-run-0002")
    assert without_why(mine) == without_why(theirs)
    assert mine["outputs"]["daily"]["data_hash"]["state"] == "changed"
    assert mine["inputs"]["orders"]["data_hash"]["state"] == "unchanged"
    code = main(["lineage", "trace", *args, "--run-id", "ref-run-0001"])
    out = capsys.readouterr().out
    assert code == 0 and "[parquet] daily" in out and "EXPECTATIONS" in out
