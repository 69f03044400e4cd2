"""Data and records on S3 (moto's server), the store's options given once to ``with_ubunye``:
every reader of the store gets them, the in-step check, the check's own step, the drift sensor,
the CLI (by flag or environment), and a listing sees records another client wrote since."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import dagster as dg
import numpy as np
import pandas as pd
import pytest
from object_store import moto_s3

from ubunye_core.cli import main
from ubunye_core.locations import STORAGE_OPTIONS_ENV, StoreAccess
from ubunye_core.store import LineageStore
from ubunye_dagster import with_ubunye

pytest.importorskip("s3fs")

ROWS_CHANGED = "ubunye/rows_changed"


@dg.asset
def steady() -> pd.DataFrame:
    return pd.DataFrame({"n": range(20)})


@dg.asset
def planted(steady: pd.DataFrame) -> pd.DataFrame:
    """Non-deterministic on purpose: new noise on every run, same code and inputs."""
    return steady.assign(noise=np.random.default_rng().random(len(steady)))


@dataclass
class S3Project:
    defs: dg.Definitions
    instance: dg.DagsterInstance
    usecase_dir: str
    options: dict[str, Any]
    runs: list[dg.ExecuteInProcessResult]


def adopted(root: str, options: dict[str, Any]) -> dg.Definitions:
    plain = dg.Definitions(
        assets=[steady, planted],
        jobs=[
            dg.define_asset_job("everything", selection=dg.AssetSelection.all()),
            dg.define_asset_job("checks_only", selection=dg.AssetSelection.all_asset_checks()),
        ],
    )
    return with_ubunye(
        plain, base_path=f"{root}/data", usecase_dir=f"{root}/usecase", storage_options=options
    )


@pytest.fixture(scope="module")
def project() -> Iterator[S3Project]:
    with moto_s3() as s3, dg.DagsterInstance.ephemeral() as instance:
        root = f"s3://{s3['bucket']}"
        options = s3["storage_options"]
        defs = adopted(root, options)
        job = defs.resolve_job_def("everything")
        runs = [job.execute_in_process(instance=instance) for _ in range(2)]
        yield S3Project(defs, instance, f"{root}/usecase", options, runs)


def planted_evaluation(events: list[Any]) -> dg.AssetCheckEvaluation:
    [found] = [e for e in events if e.asset_key == dg.AssetKey("planted")]
    return found


def test_the_in_step_check_reads_both_records_and_versions_on_s3(project):
    evaluation = planted_evaluation(project.runs[1].get_asset_check_evaluations())
    assert not evaluation.passed
    assert ROWS_CHANGED in evaluation.metadata, evaluation.metadata


def test_the_checks_own_step_reads_the_records_on_s3(project):
    result = project.defs.resolve_job_def("checks_only").execute_in_process(
        instance=project.instance
    )
    evaluation = planted_evaluation(result.get_asset_check_evaluations())
    assert not evaluation.passed
    assert ROWS_CHANGED in evaluation.metadata, evaluation.metadata


def test_the_drift_sensor_reads_the_records_on_s3(project):
    sensor = project.defs.get_sensor_def("ubunye_drift_sensor")
    context = dg.build_sensor_context(instance=project.instance, definitions=project.defs)
    tick = sensor.evaluate_tick(context)
    evaluations = [e for e in tick.asset_events if isinstance(e, dg.AssetCheckEvaluation)]
    flagged = [e for e in evaluations if not e.passed]
    assert [e.asset_key for e in flagged] == [dg.AssetKey("planted")]
    assert ROWS_CHANGED in flagged[0].metadata, flagged[0].metadata


def cli_json(capsys, *args: str) -> Any:
    capsys.readouterr()
    code = main(list(args))
    out = capsys.readouterr().out
    assert code == 0, out
    return json.loads(out)


def test_the_cli_reads_the_records_on_s3_with_storage_options_from_the_environment(
    project, capsys, monkeypatch
):
    monkeypatch.setenv(STORAGE_OPTIONS_ENV, json.dumps(project.options))
    runs = cli_json(
        capsys, "lineage", "list", "-d", project.usecase_dir, "--asset", "planted", "--json"
    )
    assert {r["run_id"] for r in runs} == {r.run_id for r in project.runs}


def test_the_cli_reads_the_records_on_s3_with_the_storage_options_flag(project, capsys):
    options = json.dumps(project.options)
    runs = cli_json(
        capsys, "lineage", "list", "-d", project.usecase_dir, "--asset", "steady",
        "--storage-options", options, "--json",
    )  # fmt: skip
    assert {r["run_id"] for r in runs} == {r.run_id for r in project.runs}


def test_the_cli_without_the_stores_options_says_it_cannot_read_it(project, capsys, monkeypatch):
    monkeypatch.delenv(STORAGE_OPTIONS_ENV, raising=False)
    code = main(["lineage", "list", "-d", project.usecase_dir, "--asset", "steady"])
    assert code == 1
    assert "cannot read the use case folder" in capsys.readouterr().err


def test_a_store_listing_sees_a_record_another_client_wrote_since(project):
    store = LineageStore.for_usecase_dir(
        StoreAccess(storage_options=project.options).path(project.usecase_dir)
    )
    [task] = [t for t in store.task_paths() if t.endswith("/steady")]
    before = store.list_runs(task)
    bucket, key = str(store.path_for(task, before[0].run_id))[len("s3://") :].split("/", 1)
    copy = key.replace(before[0].run_id, "written-elsewhere")
    client = boto3.client(
        "s3",
        endpoint_url=project.options["client_kwargs"]["endpoint_url"],
        region_name="us-east-1",
        aws_access_key_id=project.options["key"],
        aws_secret_access_key=project.options["secret"],
    )
    document = json.loads(client.get_object(Bucket=bucket, Key=key)["Body"].read())
    document["run_id"] = "written-elsewhere"
    client.put_object(Bucket=bucket, Key=copy, Body=json.dumps(document).encode())
    after = store.list_runs(task)
    assert len(after) == len(before) + 1
    assert "written-elsewhere" in {r.run_id for r in after}
