"""Receipts for assets computed outside Dagster's process, launched through Dagster Pipes.

The external process calls ``ubunye_rows.pipes.report_receipt`` for each asset it writes; here,
around the Pipes client's ``run``, each reported receipt becomes the asset's run record v2 (the
same record, metadata, data version and OpenLineage events as an IO-managed asset). When the
external process fails, each asset of the step gets an ``error`` record holding whatever was
reported before the failure, and the code hash and environment the process last reported (its
``report_evidence`` as it started, or an earlier receipt); never the orchestrator's::

    @dg.asset
    def orders(context, ubunye: UbunyeResource, pipes: dg.PipesSubprocessClient):
        return ubunye.run_pipes(pipes, context=context, command=[...]).get_materialize_result()
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import dagster as dg

from ubunye_core.records.model import StepRecord
from ubunye_core.records.sketches import step_sketch
from ubunye_dagster import dagster_internals as internals
from ubunye_dagster.own_rows.asset_receipt import ProcessEvidence, SavedOutput, save_asset_output
from ubunye_dagster.receipts.masking import mask_error, mask_text
from ubunye_dagster.receipts.metadata import STORED_AT, plain
from ubunye_dagster.receipts.records import RecordPlace
from ubunye_dagster.receipts.session import LoadedInput, StepSession, open_session
from ubunye_rows.receipt import EVIDENCE_KEY, RECEIPT_KEY, check_evidence, check_receipt

#: The hash error of an asset the external process reported without a receipt.
NO_RECEIPT = (
    "not hashed: the external process reported this asset without a receipt "
    "(call ubunye_rows.pipes.report_receipt for it)"
)
#: The evidence of a record whose external process reported none: no code hash, no environment.
NO_EVIDENCE = ProcessEvidence(code_hash=None, environment={}, environment_hash=None)
#: What the error of such a record adds.
NONE_REPORTED = (
    "; the external process reported no code hash or environment before it failed, so none "
    "is recorded (ubunye_rows.pipes.report_evidence reports them as the job starts)"
)


def reported_evidence(document: Mapping[str, Any]) -> ProcessEvidence:
    """The code hash and environment a checked receipt or evidence document carries."""
    return ProcessEvidence(
        code_hash=document.get("code_hash"),
        environment=dict(document.get("environment") or {}),
        environment_hash=document.get("environment_hash"),
    )


def raised_text(raised: Mapping[str, Any]) -> str:
    """``<Type>: <message>`` of the exception a closing Pipes message carries, the type named
    once: dagster-pipes sends Python's one-line form, which starts with the type already."""
    name = str(raised.get("name") or "")
    message = str(raised.get("message") or "").strip()
    first = message.split(":", 1)[0]
    if name and first != name and not first.endswith(f".{name}"):
        return f"{name}: {message}" if message else name
    return message or name or "an exception without a name or message"


@dataclass
class Witness:
    """What the external process reported, noted as its messages arrive (kept if it fails)."""

    receipts: dict[dg.AssetKey, Any] = field(default_factory=dict)
    #: The code hash and environment the process reported last (evidence alone, or a receipt's).
    evidence: ProcessEvidence | None = None
    #: ``"<Type>: <message>"`` of the exception the external process closed Pipes with.
    error: str | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def note(self, message: Mapping[str, Any]) -> None:
        """Keep a reported receipt, the evidence reported, or the exception a closing message
        carries (a document that is not one is left out, never raised in the reader)."""
        params = message.get("params") or {}
        method = message.get("method")
        with self.lock:
            if method == "report_asset_materialization":
                entry = (params.get("metadata") or {}).get(RECEIPT_KEY)
                document = entry.get("raw_value") if isinstance(entry, Mapping) else None
                key = dg.AssetKey.from_escaped_user_string(str(params.get("asset_key")))
                self.receipts[key] = document
                self._keep_evidence(check_receipt, document)
            elif method == "report_custom_message" and isinstance(params.get("payload"), Mapping):
                if EVIDENCE_KEY in params["payload"]:
                    self._keep_evidence(check_evidence, params["payload"][EVIDENCE_KEY])
            elif method == "closed" and params.get("exception"):
                self.error = raised_text(params["exception"])

    def _keep_evidence(self, check: Callable[[Any], Mapping[str, Any]], document: Any) -> None:
        if document is not None:
            with contextlib.suppress(ValueError):
                self.evidence = reported_evidence(check(document))


class _WitnessedHandler:
    """The session's message handler, with each message shown to the witness first."""

    def __init__(self, handler: Any, witness: Witness):
        self._handler = handler
        self._witness = witness

    def handle_message(self, message: Any) -> None:
        """Note the message, then handle it as the session would."""
        if isinstance(message, Mapping):
            self._witness.note(message)
        self._handler.handle_message(message)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._handler, name)


def watched_client(client: Any, witness: Witness) -> Any:
    """A copy of the Pipes ``client`` whose message reader shows every message to ``witness``;
    the client itself when it keeps no message reader that can be watched. The reader keeps
    its class, so a client that checks its reader's type behaves as before."""
    reader = getattr(client, "message_reader", None)
    read = getattr(type(reader), "read_messages", None)
    if reader is None or read is None:
        return client
    watched_reader = copy.copy(reader)

    @contextlib.contextmanager
    def read_messages(handler: Any) -> Iterator[Any]:
        with read(watched_reader, _WitnessedHandler(handler, witness)) as params:
            yield params

    watched = copy.copy(client)
    try:
        watched_reader.read_messages = read_messages
        watched.message_reader = watched_reader
    except (AttributeError, TypeError, ValueError):  # a frozen client: run it as it is
        return client
    return watched


def _metadata_value(metadata: Mapping[str, Any] | None, key: str) -> Any:
    entry = (metadata or {}).get(key)
    return plain(entry)


def receipt_steps(
    document: Any, asset_key: dg.AssetKey, parents: set[str] | None
) -> tuple[StepRecord, ProcessEvidence]:
    """The output step and the process evidence of a reported receipt (ValueError when it is
    not one); an input named by one of the asset's upstream keys is linked to that asset."""
    receipt = check_receipt(document)
    name = asset_key.to_user_string()
    output = StepRecord.model_validate({**receipt["output"], "name": name, "direction": "output"})
    inputs = []
    for entry in receipt.get("inputs") or []:
        step = StepRecord.model_validate({**entry, "direction": "input"})
        linked = step.name if parents is not None and step.name in parents else None
        inputs.append(LoadedInput(step=step, asset_key=linked, input_name=step.name))
    return output, dataclasses.replace(reported_evidence(receipt), inputs=tuple(inputs))


def _schema_pairs(output: StepRecord) -> list[tuple[str, str]] | None:
    sketch = step_sketch(output)
    return [tuple(pair) for pair in sketch.schema] if sketch is not None else None


@dataclass
class PipesReceipts:
    """The Pipes client's results with each materialisation's receipt, and their records."""

    invocation: Any
    results: tuple[Any, ...]
    records: dict[dg.AssetKey, SavedOutput]

    def get_results(self) -> Sequence[Any]:
        """Every result (one ``MaterializeResult`` per asset, and check results) to return."""
        return self.results

    def get_materialize_result(self) -> dg.MaterializeResult:
        """The one asset's ``MaterializeResult``, with the check results reported beside it."""
        materialised = [r for r in self.results if isinstance(r, dg.MaterializeResult)]
        if len(materialised) != 1:
            raise ValueError(
                f"get_materialize_result is for one asset; this step reported "
                f"{len(materialised)} materialisations, so return get_results() instead"
            )
        [only] = materialised
        checks = [r for r in self.results if isinstance(r, dg.AssetCheckResult)]
        return dg.MaterializeResult(
            asset_key=only.asset_key,
            metadata=only.metadata,
            data_version=only.data_version,
            check_results=[*(only.check_results or []), *checks],
            tags=only.tags,
        )


@dataclass
class _Step:
    """The Pipes step being recorded: its context, session and where records go."""

    context: dg.AssetExecutionContext
    session: StepSession
    place: RecordPlace

    def parents(self, asset_key: dg.AssetKey) -> set[str] | None:
        return internals.parent_keys(self.session.step_context, asset_key)

    def receipted(
        self, result: dg.MaterializeResult, witness: Witness
    ) -> tuple[dg.MaterializeResult, SavedOutput]:
        """A reported materialisation with its receipt saved as the asset's record (one without
        a receipt: the evidence the process reported otherwise, or none)."""
        key = result.asset_key or self.context.asset_key
        document = _metadata_value(result.metadata, RECEIPT_KEY)
        if document is None:
            output = StepRecord(
                name=key.to_user_string(), direction="output", hash_error=NO_RECEIPT
            )
            evidence = witness.evidence or NO_EVIDENCE
        else:
            output, evidence = receipt_steps(document, key, self.parents(key))
        saved = self.save(key, output, evidence, document, schema_pairs=_schema_pairs(output))
        kept = {k: v for k, v in (result.metadata or {}).items() if k != RECEIPT_KEY}
        metadata = {**kept, **saved.metadata}
        if output.location:
            metadata[STORED_AT] = output.location
        receipted = dg.MaterializeResult(
            asset_key=key,
            metadata=metadata,
            data_version=saved.data_version or result.data_version,
            check_results=result.check_results,
            tags=result.tags,
        )
        return receipted, saved

    def record_failure(self, witness: Witness, failure: BaseException) -> None:
        """An ``error`` record for each asset of the step, with what was reported before: its
        receipt, else the evidence the process reported last, else none (the error says so)."""
        error = mask_error(failure)
        if witness.error:
            error += f" (the external process raised {mask_text(witness.error)})"
        for key in self.context.selected_asset_keys:
            output, evidence = None, None
            document = witness.receipts.get(key)
            if document is not None:
                with contextlib.suppress(ValueError):  # an unreadable receipt: the error says
                    output, evidence = receipt_steps(document, key, self.parents(key))
            evidence = evidence or witness.evidence
            if evidence is None:
                self.save(key, output, NO_EVIDENCE, document, error=error + NONE_REPORTED)
            else:
                self.save(key, output, evidence, document, error=error)

    def save(
        self,
        key: dg.AssetKey,
        output: StepRecord | None,
        evidence: ProcessEvidence | None,
        document: Any,
        **closing: Any,
    ) -> SavedOutput:
        """Save the record of ``key`` with what the receipt ``document`` gave (its backend)."""
        backend = document.get("backend") if isinstance(document, Mapping) else None
        return save_asset_output(
            self.session, self.place, self.context, key, output,
            backend=str(backend or ""), evidence=evidence, **closing,
        )  # fmt: skip


def run_pipes_with_receipts(
    place: RecordPlace, client: Any, *, context: dg.AssetExecutionContext, **run_kwargs: Any
) -> PipesReceipts:
    """Run ``client.run(context=context, **run_kwargs)`` and save each asset's record from the
    receipt its external process reported; on failure save ``error`` records and re-raise."""
    step = _Step(context, open_session(internals.step_context_of(context)), place)
    witness = Witness()
    try:
        invocation = watched_client(client, witness).run(context=context, **run_kwargs)
        results: list[Any] = []
        records: dict[dg.AssetKey, SavedOutput] = {}
        for result in invocation.get_results():
            if isinstance(result, dg.MaterializeResult):
                result, records[result.asset_key or context.asset_key] = step.receipted(
                    result, witness
                )
            results.append(result)
    except BaseException as failure:
        step.record_failure(witness, failure)
        raise
    return PipesReceipts(invocation=invocation, results=tuple(results), records=records)
