"""Receipts for any IO manager: ``with_receipts(inner)`` hashes what goes into and comes out of it.

The inner IO manager (dagster-duckdb's, a ``UPathIOManager`` of your own, a warehouse's) stores
and loads the data as it always has. Around it, every object handed to it is hashed (rows-v1) and
checked against the asset's expectations before it is stored, every object it loads is hashed
after it is loaded and verified against the digest recorded when it was written, and each
materialisation leaves the same run record, metadata and data version as ``UbunyeIOManager``:
the same receipt pipeline, with the inner IO manager as its storage
(``ubunye_dagster.io.storage.inner``).
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Mapping
from typing import Any

import dagster as dg

from ubunye_dagster.io.pipeline import ReceiptPipeline
from ubunye_dagster.io.storage.inner import InnerIOManagerStorage
from ubunye_dagster.io.storage.warehouse_tables import duckdb_warehouse, is_duckdb_io_manager
from ubunye_dagster.io.write_observers import receipt_observers
from ubunye_dagster.resource import UbunyeResource
from ubunye_dagster.warehouse.settings import AnyWarehouse, as_warehouse


class ReceiptIOManager(dg.IOManager):
    """The receipt pipeline around another IO manager's storage; build it with
    :func:`with_receipts`."""

    def __init__(
        self,
        inner: dg.IOManager,
        name: str | None = None,
        *,
        ubunye: UbunyeResource | None = None,
        spark_resource_key: str = "pyspark",
        warehouse: AnyWarehouse | None = None,
    ):
        """Receipts around ``inner`` (an initialised IO manager), named ``name`` in receipts
        (default: its class name); with ``warehouse``, its tables are hashed there."""
        name = name or type(inner).__name__
        storage = InnerIOManagerStorage(inner, name, spark_resource_key, warehouse)
        resource = ubunye if ubunye is not None else UbunyeResource()
        self.pipeline = ReceiptPipeline(resource, storage, receipt_observers())

    def handle_output(self, context: dg.OutputContext, obj: Any) -> None:
        """Hash and check ``obj``, hand it to the inner IO manager, and record its receipt."""
        self.pipeline.handle_output(context, obj)

    def load_input(self, context: dg.InputContext) -> Any:
        """What the inner IO manager loads, hashed and verified against its receipt."""
        return self.pipeline.load_input(context)

    def teardown_after_execution(self, context: dg.InitResourceContext) -> None:
        """Close the records of this run's steps still open (``ReceiptPipeline.teardown``)."""
        self.pipeline.teardown(context)


def with_receipts(
    inner: Any,
    *,
    ubunye: UbunyeResource | None = None,
    spark_resource_key: str = "pyspark",
    warehouse: AnyWarehouse | Mapping[str, Any] | None = None,
) -> dg.IOManagerDefinition:
    """``inner`` (an IO manager resource, definition or instance) with Ubunye receipts: use it
    where ``inner`` was used, e.g. ``"io_manager": with_receipts(DuckDBPandasIOManager(...))``.

    ``inner`` keeps its own configuration and storage; nothing changes in the assets. Its
    tables are hashed where ``warehouse`` keeps them: in DuckDB or PostgreSQL (a
    :class:`Warehouse` or its fields), or streamed from any database a
    :class:`StreamedWarehouse`'s connection factory reaches; dagster-duckdb's IO managers name
    their DuckDB file themselves.
    """
    chosen = as_warehouse(warehouse)  # a bad setting fails here, not in the first run
    detect_duckdb = chosen is None and is_duckdb_io_manager(inner)
    settings = {"ubunye": ubunye, "spark_resource_key": spark_resource_key}
    if isinstance(inner, dg.IOManager) and not hasattr(inner, "get_resource_definition"):
        definition = None  # an IO manager object: used as it is
    elif isinstance(inner, dg.ResourceDefinition):
        definition = inner
    else:
        definition = inner.get_resource_definition()

    @dg.io_manager(
        config_schema=definition.config_schema if definition else None,
        required_resource_keys=definition.required_resource_keys if definition else None,
        description=f"Ubunye receipts around {type(inner).__name__}",
    )
    def _with_receipts(init_context):
        with contextlib.ExitStack() as stack:
            made = definition.resource_fn(init_context) if definition else inner
            if inspect.isgenerator(made):  # a resource that cleans up after the run
                made = stack.enter_context(contextlib.contextmanager(lambda: made)())
            elif isinstance(made, contextlib.AbstractContextManager):
                made = stack.enter_context(made)
            config = init_context.resource_config
            found = duckdb_warehouse(config) if detect_duckdb else chosen
            manager = ReceiptIOManager(made, type(inner).__name__, warehouse=found, **settings)
            yield manager
            manager.teardown_after_execution(init_context)

    return _with_receipts
