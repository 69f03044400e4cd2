"""Receipts for any IO manager: ``with_receipts(inner)`` hashes what goes into and comes out of it.

The inner IO manager (dagster-duckdb's, a ``UPathIOManager`` of your own, a warehouse's) stores
and loads the data as it always has. Around it, every object handed to it is hashed (rows-v1) and
checked against the asset's expectations before it is stored, every object it loads is hashed
after it is loaded and verified against the digest recorded when it was written, and each
materialisation leaves the same run record, metadata and data version as ``UbunyeIOManager``.
"""

from __future__ import annotations

import contextlib
import inspect
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import dagster as dg
from pydantic import PrivateAttr

from ubunye_dagster.handlers import FrameHandler, LoadedFrame, StagedWrite, default_handlers
from ubunye_dagster.handlers.arrow_backed import ArrowBackedHandler, ArrowRows
from ubunye_dagster.handlers.base import RowsOf
from ubunye_dagster.handlers.pyspark import SparkRows
from ubunye_dagster.io_manager import UbunyeIOManager
from ubunye_dagster.metadata import URI
from ubunye_dagster.recorded import RecordedOutput, latest_materialisation
from ubunye_dagster.resource import UbunyeResource


def stated_location(metadata: Mapping[str, Any]) -> str | None:
    """Where output metadata says the data is: a URI or path as stated, a table as
    ``<storage kind>:<table>`` (``duckdb:warehouse.duckdb.shop.orders``); None when silent."""

    def text(key: str) -> str | None:
        value = metadata.get(key)
        return None if value is None else str(getattr(value, "value", value))

    found = text(URI) or text("path")
    if found:
        return found
    table = text("dagster/table_name") or text("table_name")
    kind = text("dagster/storage_kind")
    return f"{kind}:{table}" if table and kind else table


def rows_in_memory(handler: FrameHandler, obj: Any) -> Any:
    """A frame's rows as the hash and the rules see them (``fingerprint``, ``schema_pairs``,
    ``rule_counter``), without storing anything."""
    if isinstance(handler, ArrowBackedHandler):
        return ArrowRows(handler.to_arrow(obj), handler.kind)
    return SparkRows(obj)  # Spark: the DataFrame itself, hashed and counted where it lives


class HandOver(RowsOf, StagedWrite):
    """An object hashed and checked in memory; committing hands it to the inner IO manager."""

    def __init__(
        self, rows: Any, inner: dg.IOManager, context: Any, obj: Any, where: str, name: str
    ):
        super().__init__(location=where)
        self.format = name
        self.rows = rows
        self.inner = inner
        self.context = context
        self.obj = obj

    def commit(self, notes: Mapping[str, str]) -> None:
        # The inner IO manager keeps no notes of ours: reads are verified against Dagster's
        # record of the materialisation instead.
        with self.write_watch.timing():
            self.inner.handle_output(self.context, self.obj)
        self.location = stated_location(self.context.get_logged_metadata()) or self.location

    def discard(self) -> None:
        self.obj = None  # nothing was handed over


@dataclass
class Preloaded:
    """An object the inner IO manager loaded, standing where a path stands for a Parquet read."""

    frame: Any
    location: str
    read_seconds: float
    #: False when the object holds several partitions at once (no single recorded digest).
    verifiable: bool = True

    def __str__(self) -> str:
        return self.location


class InnerStorageHandler(FrameHandler):
    """One frame library's rows, stored and loaded by the inner IO manager instead of as
    Parquet: staging hashes them in memory, loading hashes what the inner IO manager loaded."""

    def __init__(self, frames: FrameHandler, inner: dg.IOManager, name: str):
        self.frames = frames
        self.inner = inner
        self.kind = frames.kind
        self.backend = frames.backend
        self.storage = name

    def accepts_type(self, cls: type) -> bool:
        return self.frames.accepts_type(cls)

    def stage(self, obj: Any, path: Any, context: Any) -> StagedWrite:
        rows = rows_in_memory(self.frames, obj)
        return HandOver(rows, self.inner, context, obj, str(path), self.storage)

    def load(
        self,
        path: Preloaded,
        context: Any,
        as_type: type | None = None,
        digest_with: str | None = None,
    ) -> LoadedFrame:
        # The inner IO manager's storage has no bytes of ours to digest: rows are always hashed.
        rows = rows_in_memory(self.frames, path.frame)
        return LoadedFrame(
            frame=path.frame,
            read_seconds=path.read_seconds,
            fingerprint=rows.fingerprint,
            hash_basis="materialised" if self.kind != "spark" else "recomputed",
        )


class ReceiptIOManager(UbunyeIOManager):
    """``UbunyeIOManager``'s receipts around another IO manager's storage; build it with
    :func:`with_receipts`."""

    _inner: Any = PrivateAttr(default=None)
    _name: str = PrivateAttr(default="")

    def wrapping(self, inner: dg.IOManager, name: str | None = None) -> ReceiptIOManager:
        """This manager around ``inner`` (an initialised IO manager), named ``name`` in receipts
        (default: its class name)."""
        self._inner = inner
        self._name = name or type(inner).__name__
        return self

    def _where(self, parts: list[str]) -> str:
        """Where the inner IO manager keeps something, until it states it (``Name:a/b[/p]``)."""
        return f"{self._name}:{'/'.join(parts)}"

    def _asset_path(self, asset_key: dg.AssetKey, partition_key: str | None) -> Any:
        extra = [] if partition_key is None else [str(partition_key)]
        return self._where([*asset_key.path, *extra])

    def _op_path(self, identifier: Any) -> Any:
        return self._where(list(identifier))

    def handlers(self) -> list[FrameHandler]:
        if self._handler_list is None:
            self._handler_list = [
                InnerStorageHandler(frames, self._inner, self._name)
                for frames in default_handlers(self.spark_resource_key)
            ]
        return self._handler_list

    def _load(self, context: dg.InputContext, session: Any, wanted: Any) -> Any:
        started = time.perf_counter()
        loaded = self._inner.load_input(context)
        seconds = round(time.perf_counter() - started, 6)
        asset_key = context.asset_key if context.has_asset_key else None
        keys = (
            list(context.asset_partition_keys) if asset_key and context.has_asset_partitions else []
        )
        if len(keys) > 1 and isinstance(loaded, Mapping) and set(loaded) <= set(keys):
            return {
                key: self._load_one(
                    context,
                    session,
                    Preloaded(frame, self._input_location(context, asset_key, key), seconds),
                    f"{context.name}[{key}]",
                    asset_key,
                    key,
                    wanted,
                )
                for key, frame in loaded.items()
            }
        partition = keys[0] if len(keys) == 1 else None
        where = self._input_location(context, asset_key, partition)
        preloaded = Preloaded(loaded, where, seconds, verifiable=len(keys) <= 1)
        return self._load_one(
            context, session, preloaded, context.name, asset_key, partition, wanted
        )

    def _input_location(
        self, context: dg.InputContext, asset_key: dg.AssetKey | None, partition: str | None
    ) -> str:
        """Where the writer's receipt says the input is, else where the inner keeps it."""
        if asset_key is None:
            return self._op_path(context.upstream_output.get_identifier())
        latest = latest_materialisation(context, asset_key, partition)
        materialization = latest.asset_materialization if latest is not None else None
        stated = stated_location(materialization.metadata) if materialization else None
        return stated or self._asset_path(asset_key, partition)

    def _reader_for(self, path: Any, wanted: Any) -> FrameHandler:
        for handler in self.handlers():
            if handler.accepts(path.frame):
                return handler
        raise TypeError(
            f"{self._name} loaded a {type(path.frame).__name__}, which rows-v1 "
            "cannot hash (pandas, pyarrow, polars or Spark frames)"
        )

    def _verify(
        self,
        context: dg.InputContext,
        step: Any,
        loaded: LoadedFrame,
        path: Any,
        asset_key: dg.AssetKey | None,
        recorded: RecordedOutput | None,
    ) -> str | None:
        if not path.verifiable:
            step.source_note = (
                "not verified: several partitions were loaded as one object, and each partition "
                "has its own recorded digest"
            )
            return None
        return super()._verify(context, step, loaded, path, asset_key, recorded)


def with_receipts(
    inner: Any, *, ubunye: UbunyeResource | None = None, spark_resource_key: str = "pyspark"
) -> dg.IOManagerDefinition:
    """``inner`` (an IO manager resource, definition or instance) with Ubunye receipts: use it
    where ``inner`` was used, e.g. ``"io_manager": with_receipts(DuckDBPandasIOManager(...))``.

    ``inner`` keeps its own configuration and storage; nothing changes in the assets.
    """
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
            manager = ReceiptIOManager(**settings).wrapping(made, type(inner).__name__)
            yield manager
            manager.teardown_after_execution(init_context)

    return _with_receipts
