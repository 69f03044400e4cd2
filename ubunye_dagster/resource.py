"""UbunyeResource: where records go and how inputs are treated; a recorder for self-written assets.

Given to ``UbunyeIOManager(ubunye=...)`` it configures the receipts of every asset the IO manager
stores. Given to an asset as a resource, it hashes frames the asset writes itself::

    @dg.asset
    def exported(context: dg.AssetExecutionContext, ubunye: UbunyeResource, orders: pd.DataFrame):
        frame = ...
        frame.to_parquet("s3://bucket/exported.parquet")
        receipt = ubunye.record_output(context, frame, location="s3://bucket/exported.parquet")
        return receipt.materialize_result()
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import dagster as dg

from ubunye_core.records.model import RunRecord, StepRecord
from ubunye_core.store.later import settle_index_updates
from ubunye_dagster import dagster_internals as internals
from ubunye_dagster.own_rows.asset_receipt import save_asset_output
from ubunye_dagster.own_rows.pipes import PipesReceipts, run_pipes_with_receipts
from ubunye_dagster.receipts.session import close_run, open_session
from ubunye_dagster.receipts.settings import RecordSettings
from ubunye_rows.hashing import Fingerprint, fingerprint


@dataclass
class Receipt:
    """What ``record_output`` saved: the record, its path, and the materialisation's metadata."""

    record: RunRecord
    record_path: str
    metadata: dict[str, Any]
    data_version: dg.DataVersion | None

    def materialize_result(self, **kwargs: Any) -> dg.MaterializeResult:
        """A ``MaterializeResult`` carrying this receipt's metadata and content data version."""
        metadata = {**self.metadata, **kwargs.pop("metadata", {})}
        return dg.MaterializeResult(metadata=metadata, data_version=self.data_version, **kwargs)


class UbunyeResource(internals.QuickRebuilds, dg.ConfigurableResource, RecordSettings):
    """Settings of the run records (where, under which usecase, what is hashed: the fields of
    ``RecordSettings``) and a recorder."""

    def fingerprint(self, frame: Any) -> Fingerprint:
        """rows-v1 of a pandas, Arrow, polars or Spark frame; a failure says why (never raises)."""
        return fingerprint(frame)

    def record_output(
        self,
        context: dg.AssetExecutionContext,
        frame: Any,
        *,
        location: str,
        format: str = "",
        name: str | None = None,
        backend: str = "",
    ) -> Receipt:
        """Hash ``frame`` (the rows the asset wrote itself to ``location``) and save it as an
        output of the asset's record, beside the inputs the step loaded. Call it once per table
        written; the record keeps every output recorded."""
        session = open_session(internals.step_context_of(context))
        step_name = name or "/".join(context.asset_key.path)
        output, _ = self._hashed_output(frame, step_name, format=format, location=location)
        saved = save_asset_output(
            session, self, context, context.asset_key, output, backend=backend
        )
        return Receipt(
            record=saved.record,
            record_path=saved.path,
            metadata=saved.metadata,
            data_version=saved.data_version,
        )

    def run_pipes(
        self, client: Any, *, context: dg.AssetExecutionContext, **run_kwargs: Any
    ) -> PipesReceipts:
        """Run the Pipes ``client`` (``client.run(context=context, **run_kwargs)``) and save
        each asset's run record from the receipt its external process reported with
        ``ubunye_rows.pipes.report_receipt``; when the process fails, each asset of the step
        gets an ``error`` record with what it reported before failing. Returns the results to
        hand to Dagster: ``.get_materialize_result()`` (one asset) or ``.get_results()``."""
        return run_pipes_with_receipts(self, client, context=context, **run_kwargs)

    def _hashed_output(
        self, frame: Any, step_name: str, *, format: str, location: str
    ) -> tuple[StepRecord, Fingerprint]:
        started = time.perf_counter()
        fp = self.fingerprint(frame)
        seconds = round(time.perf_counter() - started, 6)
        output = StepRecord.from_fingerprint(
            fp,
            name=step_name,
            direction="output",
            format=format,
            location=location,
            hash_seconds=seconds,
            hash_basis="materialised",
        )
        return output, fp

    def teardown_after_execution(self, context: dg.InitResourceContext) -> None:
        """Close the records of this run's steps still open in this process: a step that failed
        after loading its inputs or after recording an output gets its ``error`` record."""
        if context.run is not None:
            close_run(context.run.run_id)
        settle_index_updates()  # the run's records are in the index when the run is over
