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
from typing import Any, Literal

import dagster as dg
from pydantic import Field, field_validator, model_validator

from ubunye_core.records.model import RunRecord, StepRecord
from ubunye_core.store import LineageStore
from ubunye_core.store.later import settle_index_updates
from ubunye_dagster import dagster_internals as internals
from ubunye_dagster.own_rows.asset_receipt import save_asset_output
from ubunye_dagster.own_rows.pipes import PipesReceipts, run_pipes_with_receipts
from ubunye_dagster.receipts.identity import DEFAULT_USECASE, check_usecase
from ubunye_dagster.receipts.session import close_run, open_session
from ubunye_dagster.strict_fields import refuse_unknown_fields
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


class UbunyeResource(dg.ConfigurableResource):
    """Settings of the run records (where, under which usecase, what is hashed) and a recorder."""

    @model_validator(mode="before")
    @classmethod
    def _known_fields_only(cls, data: Any) -> Any:
        return refuse_unknown_fields(cls, data)

    usecase_dir: str = Field(
        default=".",
        description="Folder (or fsspec URL) whose .ubunye/lineage holds the run records; a "
        "relative path is taken from the run's working directory.",
    )
    lineage_dir: str | None = Field(
        default=None,
        description="The lineage folder itself, instead of <usecase_dir>/.ubunye/lineage.",
    )
    usecase: str = Field(
        default=DEFAULT_USECASE, description="The usecase records are filed under."
    )
    hash_inputs: bool = Field(
        default=True,
        description="Hash every input as it is loaded (one more pass over each input). Off: "
        "inputs are recorded without hash or row count, and reads are not verified.",
    )
    verify_reads: Literal["fail", "warn", "off", "rows"] = Field(
        default="fail",
        description="What a loaded input whose digest differs from the one recorded when it was "
        "written does: fail the step, warn, or nothing. With fail, warn and off, an input whose "
        "stored bytes still hash to the byte digest recorded with it takes the recorded digest "
        "without hashing its rows; rows: always hash the rows, and fail on a difference.",
    )
    code_folder: str | None = Field(
        default=None,
        description="Folder (or .py file) hashed into code_hash for every asset; default: the "
        "folder of the module defining the asset (asset metadata ubunye/code_folder wins).",
    )
    storage_options: dict[str, Any] = Field(
        default_factory=dict, description="fsspec options for a lineage folder on object storage."
    )
    durable_records: bool = Field(
        default=False,
        description="Flush each local record file and its folder to disk (fsync) before it "
        "counts as saved, so records survive a power loss. Off, a record is still written whole "
        "or not at all (a temporary file renamed into place); on costs two disk flushes a save.",
    )

    @field_validator("usecase")
    @classmethod
    def _safe_usecase(cls, value: str) -> str:
        return check_usecase(value)

    def store(self) -> LineageStore:
        """The lineage store records are saved in."""
        from upath import UPath

        durable = self.durable_records
        if self.lineage_dir:
            return LineageStore(UPath(self.lineage_dir, **self.storage_options), durable=durable)
        return LineageStore.for_usecase_dir(
            UPath(self.usecase_dir, **self.storage_options), durable=durable
        )

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
