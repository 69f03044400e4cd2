"""A finished run record as OpenLineage run events (START, then COMPLETE or FAIL), and sending them.

Needs the ``openlineage-python`` client (extra ``openlineage``), imported only here. Sending follows
the client's own configuration (``OPENLINEAGE_URL``, ``openlineage.yml``, ``OPENLINEAGE__*``
variables, any of its transports) and is off when none is found or ``OPENLINEAGE_DISABLED=true``.
A backend that cannot be reached is a warning, never an error.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

import attr
from openlineage.client import OpenLineageClient
from openlineage.client.event_v2 import InputDataset, Job, OutputDataset, Run, RunEvent, RunState
from openlineage.client.facet_v2 import (
    RunFacet,
    data_quality_metrics_dataset,
    dataset_version_dataset,
    error_message_run,
    schema_dataset,
)
from openlineage.client.transport.noop import NoopConfig, NoopTransport
from openlineage.client.uuid import generate_static_uuid

from ubunye_core.openlineage.configuration import configuration_offered
from ubunye_core.records.model import RunRecord, StepRecord
from ubunye_core.records.times import required_instant

log = logging.getLogger(__name__)

#: Where the receipt facet's JSON schema is published (the file is docs/openlineage/ in this repo).
RECEIPT_FACET_SCHEMA_URL = (
    "https://github.com/ubunye-ai-ecosystems/ubunye-dagster/blob/main/docs/openlineage/"
    "UbunyeReceiptRunFacet.json#/$defs/UbunyeReceiptRunFacet"
)

#: The producer named on every event and on the receipt facet.
PRODUCER = "https://github.com/ubunye-ai-ecosystems/ubunye-dagster"

#: The run facet key of the receipt facet.
RECEIPT_FACET_KEY = "ubunye_receipt"

#: Columns of one input or output: (name, type name) pairs, keyed by (direction, step name).
StepSchemas = Mapping[tuple[str, str], Sequence[tuple[str, str]]]


@attr.define
class UbunyeReceiptRunFacet(RunFacet):
    """The receipt behind a run: what code, environment and config made it, and where it is kept."""

    codeHash: str | None = attr.field(default=None)
    environmentHash: str | None = attr.field(default=None)
    configHash: str | None = attr.field(default=None)
    recordPath: str | None = attr.field(default=None)
    taskPath: str | None = attr.field(default=None)
    recordRunId: str | None = attr.field(default=None)
    hashMethod: str | None = attr.field(default=None)

    @staticmethod
    def _get_schema() -> str:
        return RECEIPT_FACET_SCHEMA_URL


def dataset_identity(location: str) -> tuple[str, str]:
    """OpenLineage (namespace, name) of a storage location, by its naming rules: ``s3://bucket`` and
    the object key for a URL, ``file`` and the absolute path for a local path or ``file://`` URL."""
    if not location:
        raise ValueError("a dataset needs a location; this step has none")
    parts = urlsplit(location)
    if len(parts.scheme) <= 1 or parts.scheme == "file":  # no scheme, or a Windows drive letter
        path = parts.path if parts.scheme == "file" else location
        return "file", os.path.abspath(path)
    if not parts.netloc:
        return parts.scheme, parts.path
    return f"{parts.scheme}://{parts.netloc}", parts.path.lstrip("/")


def _dataset_facets(step: StepRecord, columns: Sequence[tuple[str, str]] | None) -> dict:
    facets: dict[str, Any] = {}
    if columns:
        fields = [schema_dataset.SchemaDatasetFacetFields(name=n, type=t) for n, t in columns]
        facets["schema"] = schema_dataset.SchemaDatasetFacet(fields=fields)
    if step.row_count is not None:
        facets["dataQualityMetrics"] = data_quality_metrics_dataset.DataQualityMetricsDatasetFacet(
            columnMetrics={}, rowCount=step.row_count
        )
    if step.data_hash:
        facets["version"] = dataset_version_dataset.DatasetVersionDatasetFacet(
            datasetVersion=step.data_hash
        )
    return facets


def _datasets(record: RunRecord, schemas: StepSchemas) -> tuple[list, list]:
    made: dict[str, list] = {"input": [], "output": []}
    for direction, steps in (("input", record.inputs), ("output", record.outputs)):
        kind = InputDataset if direction == "input" else OutputDataset
        for step in steps:
            if not step.location:
                continue
            namespace, name = dataset_identity(step.location)
            facets = _dataset_facets(step, schemas.get((direction, step.name)))
            made[direction].append(kind(namespace=namespace, name=name, facets=facets))
    return made["input"], made["output"]


def _instant(text: str | None) -> dt.datetime:
    return required_instant(text) if text else dt.datetime.now(dt.timezone.utc)


def _receipt_facet(record: RunRecord, record_path: str | None) -> UbunyeReceiptRunFacet:
    """The ``ubunye_receipt`` run facet: the record's evidence hashes and where it is."""
    return UbunyeReceiptRunFacet(
        producer=PRODUCER,
        codeHash=record.code_hash,
        environmentHash=record.environment_hash,
        configHash=record.config_hash or None,
        recordPath=record_path,
        taskPath=record.task_path,
        recordRunId=record.run_id,
        hashMethod=next((s.hash_method for s in record.outputs if s.hash_method), None),
    )


def run_events(
    record: RunRecord,
    *,
    record_path: str | None = None,
    schemas: StepSchemas | None = None,
    job_namespace: str | None = None,
) -> list[RunEvent]:
    """START and COMPLETE (status ``success``) or FAIL events of one finished run record.

    The OpenLineage run id is derived from the record's start and identity, so sending the same
    record twice gives the same ids. The job is ``<package>.<task>`` in ``job_namespace``
    (default: ``OPENLINEAGE_NAMESPACE``, else the record's usecase).
    """
    started = _instant(record.started_at)
    run_id = str(generate_static_uuid(started, f"{record.task_path}/{record.run_id}".encode()))
    receipt = _receipt_facet(record, record_path)
    namespace = job_namespace or os.environ.get("OPENLINEAGE_NAMESPACE") or record.usecase
    job = Job(namespace=namespace, name=f"{record.package}/{record.task_name}")
    inputs, outputs = _datasets(record, schemas or {})
    end_facets: dict[str, Any] = {RECEIPT_FACET_KEY: receipt}
    succeeded = record.status == "success"
    if not succeeded:
        message = record.error or f"run ended with status {record.status}"
        end_facets["errorMessage"] = error_message_run.ErrorMessageRunFacet(
            message=message, programmingLanguage="python"
        )

    def event(state: RunState, when: dt.datetime, facets: dict[str, Any]) -> RunEvent:
        return RunEvent(
            producer=PRODUCER,
            eventType=state,
            eventTime=when.isoformat(),
            run=Run(runId=run_id, facets=facets),
            job=job,
            inputs=inputs,
            outputs=outputs,
        )

    return [
        event(RunState.START, started, {RECEIPT_FACET_KEY: receipt}),
        event(
            RunState.COMPLETE if succeeded else RunState.FAIL, _instant(record.ended_at), end_facets
        ),
    ]


def configured_client() -> OpenLineageClient | None:
    """The OpenLineage client as its own configuration sets it up, or None when nothing configures
    a transport (the client would otherwise fall back to printing events) or it is disabled."""
    if os.environ.get("OPENLINEAGE_DISABLED", "").strip().lower() == "true":
        return None
    if not configuration_offered():
        return None
    # An explicit no-op transport lets us read the configuration without the client's fallback.
    probe = OpenLineageClient(transport=NoopTransport(NoopConfig()))
    transport = probe.config.transport or {}
    if not transport.get("type") and not os.environ.get("OPENLINEAGE_URL"):
        return None
    return OpenLineageClient()


def emit_run_events(
    record: RunRecord,
    *,
    record_path: str | None = None,
    schemas: StepSchemas | None = None,
    client: OpenLineageClient | None = None,
    warn: Callable[[str], None] | None = None,
) -> int:
    """Send the record's events when OpenLineage is configured; the number sent.

    Never raises for the backend or the configuration: the failure is passed to ``warn`` (default:
    this module's logger) and the remaining events are not tried.
    """
    warn = warn or log.warning
    try:
        client = client or configured_client()
        if client is None:
            return 0
        events = run_events(record, record_path=record_path, schemas=schemas)
    except Exception as exc:
        warn(f"OpenLineage events of {record.task_path} not built: {type(exc).__name__}: {exc}")
        return 0
    sent = 0
    for event in events:
        try:
            client.emit(event)
        except Exception as exc:
            warn(
                f"OpenLineage {event.eventType.value} event of {record.task_path} not sent "
                f"({sent} of {len(events)} sent): {type(exc).__name__}: {exc}"
            )
            return sent
        sent += 1
    return sent
