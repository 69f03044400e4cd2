"""The one receipt pipeline every Ubunye IO manager runs, whatever storage keeps the rows.

A write: stage with the storage's handler, hash where the rows are staged, pass the gate given
to the pipeline, commit (or discard), close the record, give the receipt as metadata with the
judge's verdict. A read: each
part the storage loads, proven by its stored bytes or hashed, and verified against the digest
recorded when it was written.
"""

from __future__ import annotations

import contextlib
from typing import Any

import dagster as dg

from ubunye_core.locations import StoreAccess
from ubunye_core.materialisations.removals import settle_removals
from ubunye_core.store.later import settle_index_updates
from ubunye_dagster.io.pipeline.observers import WriteObservers
from ubunye_dagster.io.pipeline.reads import InputRead, UnverifiedReadError
from ubunye_dagster.io.pipeline.writes import NoOutputError, write_output
from ubunye_dagster.io.storage.base import Storage
from ubunye_dagster.receipts.early_failures import record_early_failures
from ubunye_dagster.receipts.records import PipelineSettings
from ubunye_dagster.receipts.session import (
    StepSession,
    close_run,
    open_session,
    save_running_records,
)
from ubunye_dagster.receipts.step_starts import listen_to_step_starts

__all__ = ["NoOutputError", "ReceiptPipeline", "UnverifiedReadError", "WriteObservers"]


class ReceiptPipeline:
    """Receipts for every write to and read from ``storage``, recorded as ``resource`` says,
    each write seen by ``observers``; records are read back through ``access`` (the store's
    options; the resource's by default)."""

    def __init__(
        self,
        resource: PipelineSettings,
        storage: Storage,
        observers: WriteObservers,
        access: StoreAccess | None = None,
    ):
        self.resource = resource
        self.storage = storage
        self.observers = observers
        self.access = access or StoreAccess(storage_options=resource.storage_options)

    def handle_output(self, context: dg.OutputContext, obj: Any) -> None:
        """Write ``obj`` with its receipt (see ``pipeline.writes.write_output``)."""
        self._prepare_judge(open_session(context.step_context))
        write_output(self.resource, self.storage, context, obj, self.access, self.observers)

    def load_input(self, context: dg.InputContext) -> Any:
        """Load the stored frame(s) as the annotated type (else the written type), hashing and
        verifying each as configured; several partitions load as ``{partition key: frame}``."""
        session = open_session(context.step_context)
        self._prepare_judge(session)
        try:
            return InputRead(self.resource, self.storage, context, session, self.access).load()
        finally:
            # Even when this load failed, the step's record shows what it had loaded.
            save_running_records(session, self.resource)

    def _prepare_judge(self, session: StepSession) -> None:
        """Tell the judge of the session's step once, before its first read or write."""
        judge = self.observers.judge
        with session.lock:
            if judge is None or session.judge_told:
                return
            session.judge_told = True
        with contextlib.suppress(Exception):  # asking ahead only saves time; judging asks anyway
            judge.prepare(session.step_context)

    def setup(self, context: dg.InitResourceContext) -> None:
        """Listen to the run's step starts as the process stores them, so a step asks the event
        log for its start only when another process stored it."""
        if context.run is not None:
            listen_to_step_starts(context.instance, context.run.run_id)

    def teardown(self, context: dg.InitResourceContext) -> None:
        """Close the records of this run's steps still open in this process: a step that failed
        after loading its inputs gets its ``error`` record.

        Dagster tears resources down whether or not a step failed (once per run in-process, once
        per step in a step's own process), and never calls ``handle_output`` after a failure. A
        step that fails before touching the IO manager is recorded by ``with_error_records``, or
        here when its asset definition is watched (``watch_early_failures``: the component).
        """
        if context.run is not None:
            close_run(context.run.run_id)
            record_early_failures(
                context.instance, context.run, self.resource, self.resource.model_dump_json()
            )
        # When the run is over, its records are in the index and the versions it replaced gone.
        settle_index_updates()
        settle_removals()
