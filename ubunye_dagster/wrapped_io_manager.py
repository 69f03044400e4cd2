"""Receipts for any IO manager: ``with_receipts(inner)`` hashes what goes into and comes out of it.

The inner IO manager (dagster-duckdb's, a ``UpathIOManager`` of your own, a warehouse's) stores
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

from ubunye_core.hashing import fingerprint
from ubunye_core.hashing.digest import Fingerprint
from ubunye_core.hashing.spark import spark_schema_pairs
from ubunye_dagster.expectations import RuleCounter
from ubunye_dagster.handlers import FrameHandler, LoadedFrame, StagedWrite, default_handlers
from ubunye_dagster.handlers.arrow_backed import ArrowBackedHandler, ArrowStagedWrite
from ubunye_dagster.handlers.pyspark import SparkRuleCounter
from ubunye_dagster.io_manager import UbunyeIOManager
from ubunye_dagster.resource import UbunyeResource

#: Output metadata keys an inner IO manager states where it stored the data under, best first.
_LOCATION_KEYS = ("dagster/uri", "path", "dagster/table_name", "table_name")


class InMemoryRows:
    """A frame's rows as the hash and the rules see them, without storing anything."""

    def __init__(self, handler: FrameHandler, obj: Any, location: str):
        if isinstance(handler, ArrowBackedHandler):
            self._view: Any = ArrowStagedWrite(handler.to_arrow(obj), location, handler.kind)
        else:  # Spark: the DataFrame itself, hashed and counted where it lives
            self._view = _SparkRows(obj)

    def fingerprint(self) -> Fingerprint:
        return self._view.fingerprint()

    def schema_pairs(self) -> list[tuple[str, str]]:
        return self._view.schema_pairs()

    def rule_counter(self) -> RuleCounter:
        return self._view.rule_counter()


class _SparkRows:
    def __init__(self, df: Any):
        self.df = df
        self._fingerprint: Fingerprint | None = None

    def fingerprint(self) -> Fingerprint:
        if self._fingerprint is None:
            self._fingerprint = fingerprint(self.df)
        return self._fingerprint

    def schema_pairs(self) -> list[tuple[str, str]]:
        return spark_schema_pairs(self.df)

    def rule_counter(self) -> RuleCounter:
        total = self._fingerprint.row_count if self._fingerprint is not None else None
        return SparkRuleCounter(self.df, dict(self.schema_pairs()), total)


class HandOver(StagedWrite):
    """An object hashed and checked in memory; committing hands it to the inner IO manager."""

    def __init__(self, rows: InMemoryRows, inner: dg.IOManager, context: Any, obj: Any, where: str):
        super().__init__(location=where)
        self.format = type(inner).__name__
        self.rows = rows
        self.inner = inner
        self.context = context
        self.obj = obj

    def fingerprint(self) -> Fingerprint:
        return self.rows.fingerprint()

    def schema_pairs(self) -> list[tuple[str, str]]:
        return self.rows.schema_pairs()

    def rule_counter(self) -> RuleCounter:
        return self.rows.rule_counter()

    def commit(self, notes: Mapping[str, str]) -> None:
        # The inner IO manager keeps no notes of ours: reads are verified against Dagster's
        # record of the materialisation instead.
        with self.write_watch.timing():
            self.inner.handle_output(self.context, self.obj)
        stated = self.context.get_logged_metadata()
        for key in _LOCATION_KEYS:
            if key in stated:
                value = stated[key]
                self.location = str(getattr(value, "value", value))
                break

    def discard(self) -> None:
        self.obj = None  # nothing was handed over


class HandOverHandler(FrameHandler):
    """One frame library's rows, stored by the inner IO manager instead of as Parquet."""

    def __init__(self, frames: FrameHandler, inner: dg.IOManager):
        self.frames = frames
        self.inner = inner
        self.kind = frames.kind
        self.backend = frames.backend

    def accepts_type(self, cls: type) -> bool:
        return self.frames.accepts_type(cls)

    def stage(self, obj: Any, path: Any, context: Any) -> StagedWrite:
        rows = InMemoryRows(self.frames, obj, str(path))
        return HandOver(rows, self.inner, context, obj, str(path))

    def load(self, path: Any, context: Any, as_type: type | None = None) -> LoadedFrame:
        raise NotImplementedError("loads go through ReceiptIOManager._load")


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


class _PreloadedReader(FrameHandler):
    """Hashes an object the inner IO manager already loaded, as its own library's frames."""

    def __init__(self, frames: FrameHandler):
        self.frames = frames
        self.kind = frames.kind
        self.backend = frames.backend

    def accepts_type(self, cls: type) -> bool:
        return self.frames.accepts_type(cls)

    def stage(self, obj: Any, path: Any, context: Any) -> StagedWrite:
        raise NotImplementedError("writes go through HandOverHandler")

    def load(self, path: Any, context: Any, as_type: type | None = None) -> LoadedFrame:
        rows = InMemoryRows(self.frames, path.frame, path.location)
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

    def wrapping(self, inner: dg.IOManager) -> ReceiptIOManager:
        """This manager around ``inner`` (an initialised IO manager)."""
        self._inner = inner
        return self

    def _where(self, parts: list[str]) -> str:
        """Where the inner IO manager keeps something, until it states it (``Name:a/b[/p]``)."""
        return f"{type(self._inner).__name__}:{'/'.join(parts)}"

    def _asset_path(self, asset_key: dg.AssetKey, partition_key: str | None) -> Any:
        extra = [] if partition_key is None else [str(partition_key)]
        return self._where([*asset_key.path, *extra])

    def _op_path(self, identifier: Any) -> Any:
        return self._where(list(identifier))

    def handlers(self) -> list[FrameHandler]:
        if self._handler_list is None:
            self._handler_list = [
                HandOverHandler(frames, self._inner)
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
        if asset_key is None:
            where = self._op_path(context.upstream_output.get_identifier())
        else:
            where = self._asset_path(asset_key, keys[0] if len(keys) == 1 else None)
        if len(keys) > 1 and isinstance(loaded, Mapping) and set(loaded) <= set(keys):
            return {
                key: self._load_one(
                    context,
                    session,
                    Preloaded(frame, self._asset_path(asset_key, key), seconds),
                    f"{context.name}[{key}]",
                    asset_key,
                    key,
                    wanted,
                )
                for key, frame in loaded.items()
            }
        preloaded = Preloaded(loaded, where, seconds, verifiable=len(keys) <= 1)
        partition = keys[0] if len(keys) == 1 else None
        return self._load_one(
            context, session, preloaded, context.name, asset_key, partition, wanted
        )

    def _reader_for(self, path: Any, wanted: Any) -> FrameHandler:
        for frames in default_handlers(self.spark_resource_key):
            if frames.accepts(path.frame):
                return _PreloadedReader(frames)
        raise TypeError(
            f"{type(self._inner).__name__} loaded a {type(path.frame).__name__}, which rows-v1 "
            "cannot hash (pandas, pyarrow, polars or Spark frames)"
        )

    def _verify(self, context, step, loaded, path, asset_key, partition_key) -> str | None:
        if not path.verifiable:
            step.source_note = (
                "not verified: several partitions were loaded as one object, and each partition "
                "has its own recorded digest"
            )
            return None
        return super()._verify(context, step, loaded, path, asset_key, partition_key)


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
            manager = ReceiptIOManager(**settings).wrapping(made)
            yield manager
            manager.teardown_after_execution(init_context)

    return _with_receipts
