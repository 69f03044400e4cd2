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
from pydantic import Field, field_validator

from ubunye_core.hashing import Fingerprint, fingerprint
from ubunye_core.record import RunRecord, StepRecord
from ubunye_core.store import LineageStore
from ubunye_dagster import recording
from ubunye_dagster.identity import DEFAULT_USECASE, check_usecase
from ubunye_dagster.metadata import output_metadata


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
    verify_reads: Literal["fail", "warn", "off"] = Field(
        default="fail",
        description="What a loaded input whose digest differs from the one recorded when it was "
        "written does: fail the step, warn, or nothing.",
    )
    code_folder: str | None = Field(
        default=None,
        description="Folder (or .py file) hashed into code_hash for every asset; default: the "
        "folder of the module defining the asset (asset metadata ubunye/code_folder wins).",
    )
    storage_options: dict[str, Any] = Field(
        default_factory=dict, description="fsspec options for a lineage folder on object storage."
    )

    @field_validator("usecase")
    @classmethod
    def _safe_usecase(cls, value: str) -> str:
        return check_usecase(value)

    def store(self) -> LineageStore:
        """The lineage store records are saved in."""
        from upath import UPath

        if self.lineage_dir:
            return LineageStore(UPath(self.lineage_dir, **self.storage_options))
        return LineageStore.for_usecase_dir(UPath(self.usecase_dir, **self.storage_options))

    def fingerprint(self, frame: Any) -> Fingerprint:
        """rows-v1 of a pandas, Arrow, polars or Spark frame; a failure says why (never raises)."""
        return fingerprint(frame)

    def record_output(
        self,
        context: Any,
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
        op_context = getattr(context, "op_execution_context", context)
        step_context = op_context.get_step_execution_context()
        asset_key = context.asset_key
        partition_key = context.partition_key if context.has_partition_key else None
        session = recording.open_session(context.run.run_id, step_context.step.key, step_context)
        with session.lock:
            transform = session.transform_timing(step_context.op_def.name)
            open_record = recording.asset_record(
                session,
                self,
                asset_key=asset_key,
                output_name=None,
                partition_key=partition_key,
            )
            started = time.perf_counter()
            fp = self.fingerprint(frame)
            seconds = round(time.perf_counter() - started, 6)
            step_name = name or "/".join(asset_key.path)
            output = StepRecord.from_fingerprint(
                fp,
                name=step_name,
                direction="output",
                format=format,
                location=location,
                hash_seconds=seconds,
                hash_basis="materialised",
            )
            record = open_record.record
            outputs = [step for step in record.outputs if step.name != step_name] + [output]
            names = recording.input_names_for(session, asset_key)
            keys = recording.fill_steps(
                record,
                session,
                input_names=names,
                unseen=recording.unseen_inputs(session, asset_key),
                outputs=outputs,
                extra_timings=[transform],
                expectations=record.expectations,
            )
            if backend:
                record.backend = backend
            recording.finish(record, "success")
            path = open_record.save()
        metadata = output_metadata(
            record,
            output,
            record_path=path,
            input_asset_keys=keys,
            partition_key=partition_key,
        )
        version = dg.DataVersion(fp.data_hash) if fp.data_hash is not None else None
        return Receipt(record=record, record_path=path, metadata=metadata, data_version=version)

    def teardown_after_execution(self, context: dg.InitResourceContext) -> None:
        """Finish the records of steps that failed: after loading their inputs, after recording
        an output, or (for assets that use this resource and are not stored by an
        ``UbunyeIOManager``, which records those itself) before doing anything at all."""
        recording.close_run_records(context, self, claims=_uses_resource_unmanaged)


def _uses_resource_unmanaged(job_def: Any, keys: set[str], op_def: Any, asset_node: Any) -> bool:
    """An asset whose op uses this resource and that no ``UbunyeIOManager`` stores."""
    uses = bool(keys & set(op_def.required_resource_keys))
    return uses and not recording.stored_by_ubunye(job_def, asset_node)
