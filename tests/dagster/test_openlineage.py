"""A finished run record reaches an OpenLineage backend as START and COMPLETE/FAIL run events.

The backend is a small HTTP collector on 127.0.0.1; the client is openlineage-python with its own
HTTP transport, configured only through its own settings. Every event received is rebuilt with the
client's models, which must give back exactly the JSON that was sent.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import dagster as dg
import jsonschema
import pandas as pd
import pyarrow as pa
import pytest
from openlineage.client.event_v2 import InputDataset, Job, OutputDataset, Run, RunEvent, RunState
from openlineage.client.facet_v2 import (
    data_quality_metrics_dataset,
    dataset_version_dataset,
    error_message_run,
    schema_dataset,
    tags_run,
)
from openlineage.client.serde import Serde
from sample_records import sample_record

from ubunye_core.openlineage.events import (
    RECEIPT_FACET_KEY,
    RECEIPT_FACET_SCHEMA_URL,
    UbunyeReceiptRunFacet,
    configured_client,
    dataset_identity,
    emit_run_events,
)
from ubunye_core.records.model import RunRecord, StepRecord
from ubunye_dagster import UbunyeIOManager, UbunyeResource
from ubunye_rows import fingerprint

FACET_SCHEMA = Path(__file__).parents[2] / "docs" / "openlineage" / "UbunyeReceiptRunFacet.json"
ORDERS = pa.table({"id": [1, 2, 3], "amount": [9.5, 3.25, None]})
TOTALS = pa.table({"id": [1, 2], "total": [9.5, 3.25]})
SCHEMAS = {
    ("input", "orders"): [("id", "bigint"), ("amount", "double")],
    ("output", "result"): [("id", "bigint"), ("total", "double")],
}


class Collector(ThreadingHTTPServer):
    """An OpenLineage backend on 127.0.0.1 that keeps every JSON body posted to it."""

    def __init__(self) -> None:
        self.received: list[tuple[str, dict[str, Any]]] = []

        class Handler(BaseHTTPRequestHandler):
            def do_POST(handler) -> None:
                body = handler.rfile.read(int(handler.headers["Content-Length"]))
                self.received.append((handler.path, json.loads(body)))
                handler.send_response(201)
                handler.end_headers()

            def log_message(handler, *args: Any) -> None:
                pass

        super().__init__(("127.0.0.1", 0), Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


@pytest.fixture
def collector() -> Iterator[Collector]:
    server = Collector()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture(autouse=True)
def no_openlineage_settings(tmp_path, monkeypatch) -> None:
    """No OpenLineage setting of this machine leaks in: no variables, no openlineage.yml found."""
    for name in ("OPENLINEAGE_URL", "OPENLINEAGE_CONFIG", "OPENLINEAGE_DISABLED"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)


def step_of(table: pa.Table, name: str, direction: str, location: str) -> StepRecord:
    """A Parquet step holding ``table``'s fingerprint."""
    fp = fingerprint(table)
    return StepRecord.from_fingerprint(
        fp, name=name, direction=direction, format="parquet", location=location
    )


def finished_record(tmp_path: Path, status: str = "success") -> RunRecord:
    """A record of a run that read ``orders`` from disk and wrote ``result`` to S3."""
    orders = str(tmp_path / "data" / "orders.parquet")
    inputs = [step_of(ORDERS, "orders", "input", orders)]
    outputs = [step_of(TOTALS, "result", "output", "s3://shop-bucket/sales/totals.parquet")]
    return sample_record(
        "4c6cbd7e-1f0a-4d5b-9d0e-3b1f2a9c8e71",
        "dagster/sales/sales.totals",
        started_at="2026-11-30T10:00:00.000000+00:00",
        ended_at="2026-11-30T10:00:02.500000+00:00",
        status=status,
        error=None if status == "success" else "ValueError: amount must not be negative",
        inputs=inputs,
        outputs=[] if status != "success" else outputs,
        config_hash="sha256:" + "c" * 64,
        code_hash="sha256:" + "a" * 64,
        environment_hash="sha256:" + "e" * 64,
    )


def rebuilt_dataset(kind: type, payload: dict[str, Any]) -> Any:
    """The client's model of one dataset, facets included."""
    facets: dict[str, Any] = {}
    for key, facet in payload.get("facets", {}).items():
        fields = {k: v for k, v in facet.items() if not k.startswith("_")}
        if key == "schema":
            columns = [schema_dataset.SchemaDatasetFacetFields(**f) for f in fields["fields"]]
            facets[key] = schema_dataset.SchemaDatasetFacet(fields=columns)
        elif key == "dataQualityMetrics":
            metric = data_quality_metrics_dataset.DataQualityMetricsDatasetFacet
            facets[key] = metric(**fields)
        elif key == "version":
            facets[key] = dataset_version_dataset.DatasetVersionDatasetFacet(**fields)
        else:
            raise AssertionError(f"unexpected dataset facet {key!r}")
        facets[key]._producer = facet["_producer"]
    return kind(namespace=payload["namespace"], name=payload["name"], facets=facets)


def rebuilt_event(payload: dict[str, Any]) -> RunEvent:
    """The client's model of a received event; its validators run on every field."""
    run_facets: dict[str, Any] = {}
    for key, facet in payload["run"].get("facets", {}).items():
        fields = {k: v for k, v in facet.items() if not k.startswith("_")}
        if key == "tags":  # the client's own: its version
            fields["tags"] = [tags_run.TagsRunFacetFields(**tag) for tag in fields["tags"]]
        model = {
            RECEIPT_FACET_KEY: UbunyeReceiptRunFacet,
            "errorMessage": error_message_run.ErrorMessageRunFacet,
            "tags": tags_run.TagsRunFacet,
        }[key]
        run_facets[key] = model(producer=facet["_producer"], **fields)
    return RunEvent(
        eventType=RunState(payload["eventType"]),
        eventTime=payload["eventTime"],
        run=Run(runId=payload["run"]["runId"], facets=run_facets),
        job=Job(namespace=payload["job"]["namespace"], name=payload["job"]["name"]),
        producer=payload["producer"],
        inputs=[rebuilt_dataset(InputDataset, d) for d in payload["inputs"]],
        outputs=[rebuilt_dataset(OutputDataset, d) for d in payload["outputs"]],
    )


def assert_valid_events(collector: Collector) -> list[dict[str, Any]]:
    """Every event posted to the lineage endpoint is exactly what the client's models make."""
    events = []
    for path, payload in collector.received:
        assert path == "/api/v1/lineage"
        assert Serde.to_dict(rebuilt_event(payload)) == payload
        events.append(payload)
    return events


def test_a_finished_record_reaches_an_http_backend_as_start_and_complete(
    tmp_path, collector, monkeypatch
):
    monkeypatch.setenv("OPENLINEAGE_URL", collector.url)
    record = finished_record(tmp_path)

    sent = emit_run_events(record, record_path="/lineage/r.json", schemas=SCHEMAS)

    start, complete = assert_valid_events(collector)
    assert sent == 2
    assert [start["eventType"], complete["eventType"]] == ["START", "COMPLETE"]
    assert start["run"]["runId"] == complete["run"]["runId"]
    assert (complete["job"]["namespace"], complete["job"]["name"]) == (
        "dagster",
        "sales/sales.totals",
    )
    assert complete["eventTime"].startswith("2026-11-30T10:00:02.5")
    (source,), (target,) = complete["inputs"], complete["outputs"]
    assert (source["namespace"], source["name"]) == ("file", str(tmp_path / "data/orders.parquet"))
    assert (target["namespace"], target["name"]) == ("s3://shop-bucket", "sales/totals.parquet")
    assert target["facets"]["version"]["datasetVersion"] == fingerprint(TOTALS).data_hash
    assert source["facets"]["version"]["datasetVersion"] == fingerprint(ORDERS).data_hash
    assert target["facets"]["dataQualityMetrics"]["rowCount"] == 2
    assert source["facets"]["dataQualityMetrics"]["rowCount"] == 3
    columns = [(f["name"], f["type"]) for f in target["facets"]["schema"]["fields"]]
    assert columns == SCHEMAS[("output", "result")]
    receipt = complete["run"]["facets"][RECEIPT_FACET_KEY]
    assert receipt["codeHash"] == record.code_hash
    assert receipt["environmentHash"] == record.environment_hash
    assert receipt["configHash"] == record.config_hash
    assert receipt["recordPath"] == "/lineage/r.json"
    assert receipt["hashMethod"] == "rows-v1"


def test_a_failed_record_ends_with_a_fail_event_that_carries_the_error(
    tmp_path, collector, monkeypatch
):
    config = tmp_path / "lineage.yml"
    config.write_text(f"transport:\n  type: http\n  url: {collector.url}\n", encoding="utf-8")
    monkeypatch.setenv("OPENLINEAGE_CONFIG", str(config))

    emit_run_events(finished_record(tmp_path, status="error"))

    start, fail = assert_valid_events(collector)
    assert [start["eventType"], fail["eventType"]] == ["START", "FAIL"]
    assert fail["run"]["facets"]["errorMessage"]["message"] == (
        "ValueError: amount must not be negative"
    )
    assert fail["outputs"] == []


def test_the_same_record_sent_twice_keeps_its_run_id(tmp_path, collector, monkeypatch):
    monkeypatch.setenv("OPENLINEAGE_URL", collector.url)
    emit_run_events(finished_record(tmp_path))
    emit_run_events(finished_record(tmp_path))

    run_ids = {event["run"]["runId"] for event in assert_valid_events(collector)}
    assert len(run_ids) == 1


def test_nothing_is_sent_unless_openlineage_is_configured(tmp_path, collector, monkeypatch):
    assert configured_client() is None
    assert emit_run_events(finished_record(tmp_path)) == 0

    monkeypatch.setenv("OPENLINEAGE_URL", collector.url)
    monkeypatch.setenv("OPENLINEAGE_DISABLED", "true")
    assert emit_run_events(finished_record(tmp_path)) == 0
    assert collector.received == []


def test_a_dagster_process_without_openlineage_configured_never_imports_its_client(tmp_path):
    probe = (
        "import sys, dagster as dg, pandas as pd\n"
        "from ubunye_dagster import UbunyeIOManager, UbunyeResource\n"
        "@dg.asset\n"
        "def table() -> pd.DataFrame:\n"
        "    return pd.DataFrame({'a': [1]})\n"
        f"io = UbunyeIOManager(base_path={str(tmp_path / 'data')!r}, "
        f"ubunye=UbunyeResource(usecase_dir={str(tmp_path)!r}))\n"
        "assert dg.materialize([table], resources={'io_manager': io}).success\n"
        "print(sorted(m for m in sys.modules if m.startswith('openlineage')))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENLINEAGE")}
    env["HOME"] = str(tmp_path)
    found = subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert found.returncode == 0, found.stderr[-3000:]
    assert found.stdout.splitlines()[-1] == "[]"
    assert list((tmp_path / ".ubunye").rglob("*.json"))  # the record was written all the same


def test_an_openlineage_yml_in_the_working_directory_configures_a_file_transport(tmp_path):
    events_file = tmp_path / "events.jsonl"
    (tmp_path / "openlineage.yml").write_text(
        f"transport:\n  type: file\n  log_file_path: {events_file}\n  append: true\n",
        encoding="utf-8",
    )

    assert emit_run_events(finished_record(tmp_path)) == 2

    lines = events_file.read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["eventType"] for line in lines] == ["START", "COMPLETE"]


def test_an_openlineage_yml_in_the_home_folder_configures_a_file_transport(tmp_path):
    events_file = tmp_path / "events.jsonl"
    (tmp_path / "home" / ".openlineage").mkdir(parents=True)
    (tmp_path / "home" / ".openlineage" / "openlineage.yml").write_text(
        f"transport:\n  type: file\n  log_file_path: {events_file}\n  append: true\n",
        encoding="utf-8",
    )

    assert emit_run_events(finished_record(tmp_path)) == 2
    assert len(events_file.read_text(encoding="utf-8").splitlines()) == 2


def test_a_transport_set_by_openlineage_variables_alone_configures_the_client(
    tmp_path, monkeypatch
):
    events_file = tmp_path / "events.jsonl"
    monkeypatch.setenv("OPENLINEAGE__TRANSPORT__TYPE", "file")
    monkeypatch.setenv("OPENLINEAGE__TRANSPORT__LOG_FILE_PATH", str(events_file))
    monkeypatch.setenv("OPENLINEAGE__TRANSPORT__APPEND", "true")

    assert emit_run_events(finished_record(tmp_path)) == 2
    assert len(events_file.read_text(encoding="utf-8").splitlines()) == 2


def test_an_unreachable_backend_is_a_warning_and_never_an_error(tmp_path, monkeypatch):
    with Collector() as closed:
        url = closed.url  # a loopback port that nothing listens on once closed
    config = tmp_path / "lineage.yml"
    config.write_text(
        f"transport:\n  type: http\n  url: {url}\n  timeout: 2\n  retry:\n    total: 0\n",
        encoding="utf-8",
    )
    monkeypatch.setenv("OPENLINEAGE_CONFIG", str(config))
    warnings: list[str] = []

    sent = emit_run_events(finished_record(tmp_path), warn=warnings.append)

    assert sent == 0
    (warning,) = warnings
    assert "START event of dagster/sales/sales.totals not sent" in warning


def test_dataset_names_follow_the_openlineage_naming_of_the_storage_url(tmp_path):
    assert dataset_identity("s3://bucket/a/b.parquet") == ("s3://bucket", "a/b.parquet")
    assert dataset_identity("gs://bucket/x") == ("gs://bucket", "x")
    assert dataset_identity("file:///data/x.parquet") == ("file", "/data/x.parquet")
    assert dataset_identity(str(tmp_path / "x")) == ("file", str(tmp_path / "x"))
    with pytest.raises(ValueError, match="needs a location"):
        dataset_identity("")


def test_the_receipt_facet_matches_its_published_schema(tmp_path):
    schema = json.loads(FACET_SCHEMA.read_text(encoding="utf-8"))
    base_ref, own_part = schema["$defs"]["UbunyeReceiptRunFacet"]["allOf"]
    facet = Serde.to_dict(UbunyeReceiptRunFacet(codeHash="sha256:" + "a" * 64))

    jsonschema.validate(facet, own_part)
    assert set(facet) - {"_producer", "_schemaURL"} <= set(own_part["properties"])
    assert set(own_part["properties"]) == {
        f.name for f in UbunyeReceiptRunFacet.__attrs_attrs__ if not f.name.startswith("_")
    }
    assert facet["_schemaURL"] == RECEIPT_FACET_SCHEMA_URL
    assert RECEIPT_FACET_SCHEMA_URL.split("#")[0] == schema["$id"]
    assert base_ref["$ref"].endswith("#/$defs/RunFacet")


def test_each_materialisation_emits_its_run_events_through_dagster(
    tmp_path, collector, monkeypatch
):
    monkeypatch.setenv("OPENLINEAGE_URL", collector.url)
    frame = pd.DataFrame({"id": [1, 2, 3], "amount": [9.5, 3.25, 1.0]})

    @dg.asset(group_name="sales")
    def orders() -> pd.DataFrame:
        return frame

    @dg.asset(group_name="sales", metadata={"ubunye/expectations": [{"row_count": {"min": 9}}]})
    def big_orders(orders: pd.DataFrame) -> pd.DataFrame:
        return orders

    manager = UbunyeIOManager(
        base_path=str(tmp_path / "data"), ubunye=UbunyeResource(usecase_dir=str(tmp_path))
    )
    result = dg.materialize(
        [orders, big_orders], resources={"io_manager": manager}, raise_on_error=False
    )

    events = assert_valid_events(collector)
    by_job = {(e["job"]["name"], e["eventType"]): e for e in events}
    assert set(by_job) == {
        ("sales/orders", "START"),
        ("sales/orders", "COMPLETE"),
        ("sales/big_orders", "START"),
        ("sales/big_orders", "FAIL"),
    }
    complete = by_job[("sales/orders", "COMPLETE")]
    (written,) = complete["outputs"]
    assert written["namespace"] == "file"
    assert written["name"] == str(tmp_path / "data" / "orders.parquet")
    assert written["facets"]["version"]["datasetVersion"] == fingerprint(frame).data_hash
    assert [f["name"] for f in written["facets"]["schema"]["fields"]] == ["id", "amount"]
    receipt = complete["run"]["facets"][RECEIPT_FACET_KEY]
    assert receipt["recordRunId"] == result.run_id
    assert Path(receipt["recordPath"]).is_file()
    failed = by_job[("sales/big_orders", "FAIL")]
    assert [d["name"] for d in failed["inputs"]] == [written["name"]]
    assert "expectations failed" in failed["run"]["facets"]["errorMessage"]["message"]
