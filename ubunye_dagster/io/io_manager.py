"""UbunyeIOManager: Parquet (or Delta tables) on any UPath, and a receipt for every read and write.

Its settings choose the storage (``ubunye_dagster.io.storage``: files, or Delta tables); the receipt
pipeline (``ubunye_dagster.io.pipeline``) stages, hashes, checks and commits every write through it
and proves or verifies every read.
"""

from __future__ import annotations

from typing import Any, Literal

import dagster as dg
from pydantic import Field, PrivateAttr, model_validator

from ubunye_core.locations import StoreAccess
from ubunye_dagster.io.handlers import default_handlers
from ubunye_dagster.io.pipeline import ReceiptPipeline
from ubunye_dagster.io.pipeline import UnverifiedReadError as UnverifiedReadError
from ubunye_dagster.io.storage.base import Storage
from ubunye_dagster.io.storage.delta import DeltaStorage
from ubunye_dagster.io.storage.files import FileStorage
from ubunye_dagster.io.write_observers import receipt_observers
from ubunye_dagster.resource import UbunyeResource
from ubunye_dagster.strict_fields import refuse_unknown_fields


class UbunyeIOManager(dg.ConfigurableIOManager):
    """Stores pandas, pyarrow, polars and Spark frames as Parquet (or Delta tables) and records
    each read and write.

    Every materialisation gets a run record (v2) in the lineage store and its receipt as
    metadata; its Dagster data version is the rows' rows-v1 digest. The storage
    (``storage.files`` or ``storage.delta``) keeps the rows; ``pipeline`` makes the receipts.
    """

    @model_validator(mode="before")
    @classmethod
    def _known_fields_only(cls, data: Any) -> Any:
        elsewhere = {
            name: f"a UbunyeResource field: UbunyeIOManager(ubunye=UbunyeResource({name}=...))"
            for name in UbunyeResource.model_fields
            if name not in cls.model_fields
        }
        return refuse_unknown_fields(cls, data, belongs_to=elsewhere)

    base_path: str = Field(
        default="data",
        description="Folder or fsspec URL (s3://, gs://, memory://) the data is stored under; "
        "a relative path is taken from the run's working directory.",
    )
    storage_options: dict[str, Any] = Field(
        default_factory=dict, description="fsspec options for base_path (credentials, endpoint)."
    )
    ubunye: UbunyeResource | None = Field(
        default=None, description="Record settings; UbunyeResource() defaults when left out."
    )
    spark_resource_key: str = Field(
        default="pyspark",
        description="Resource key of a dagster-pyspark PySparkResource whose session Spark "
        "inputs are read with; the active session when the step has none.",
    )
    format: Literal["parquet", "delta"] = Field(
        default="parquet",
        description="How pandas, pyarrow and polars frames are stored: Parquet files, or Delta "
        "Lake tables (a new table version per materialisation; needs the deltalake package). "
        "Spark frames are stored as Parquet either way.",
    )

    _storage: Storage | None = PrivateAttr(default=None)
    _default_resource: UbunyeResource | None = PrivateAttr(default=None)
    _pipeline: ReceiptPipeline | None = PrivateAttr(default=None)

    @property
    def resource(self) -> UbunyeResource:
        """The ``UbunyeResource`` in force (its defaults when none was given, built once)."""
        if self.ubunye is not None:
            return self.ubunye
        if self._default_resource is None:
            # Dagster infers a resource's config schema on every construction (about 0.8 ms).
            self._default_resource = UbunyeResource()
        return self._default_resource

    def storage(self) -> Storage:
        """Where the rows are kept: Parquet files, or Delta tables (Spark keeps Parquet)."""
        if self._storage is None:
            handlers = default_handlers(self.spark_resource_key)
            kind = DeltaStorage if self.format == "delta" else FileStorage
            self._storage = kind(self.base_path, self.storage_options, handlers)
        return self._storage

    def pipeline(self) -> ReceiptPipeline:
        """The receipt pipeline around this IO manager's storage (one per IO manager)."""
        if self._pipeline is None:
            resource = self.resource
            # Records are read back with the record store's options, else the data's.
            access = StoreAccess(storage_options=resource.storage_options or self.storage_options)
            self._pipeline = ReceiptPipeline(resource, self.storage(), receipt_observers(), access)
        return self._pipeline

    def handle_output(self, context: dg.OutputContext, obj: Any) -> None:
        """Stage, hash, check, then atomically write ``obj``, save the asset's record (an
        ``error`` record, and a failed step, when any of it fails, ``None`` included) and give
        its ``ubunye_reproducible`` verdict when the run evaluates that check."""
        self.pipeline().handle_output(context, obj)

    def load_input(self, context: dg.InputContext) -> Any:
        """Load the stored frame(s) as the annotated type (else the written type), hashing and
        verifying each as configured; several partitions load as ``{partition key: frame}``."""
        return self.pipeline().load_input(context)

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        """Hear the run's step starts from now on (see ``ReceiptPipeline.setup``)."""
        self.pipeline().setup(context)

    def teardown_after_execution(self, context: dg.InitResourceContext) -> None:
        """Close the records of this run's steps still open in this process (see
        ``ReceiptPipeline.teardown``)."""
        self.pipeline().teardown(context)
