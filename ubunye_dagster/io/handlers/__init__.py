"""One handler per frame library; a library is imported only when its handler touches a frame."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ubunye_dagster.io.handlers.base import FrameHandler, LoadedFrame, StagedWrite
from ubunye_dagster.io.handlers.pandas import PandasHandler
from ubunye_dagster.io.handlers.polars import PolarsHandler
from ubunye_dagster.io.handlers.pyarrow import PyArrowHandler
from ubunye_dagster.io.handlers.pyspark import SparkHandler

__all__ = [
    "FrameHandler",
    "LoadedFrame",
    "PandasHandler",
    "PolarsHandler",
    "PyArrowHandler",
    "SparkHandler",
    "StagedWrite",
    "default_handlers",
    "handler_for_kind",
    "handler_for_object",
    "handler_for_type",
]


def default_handlers(spark_resource_key: str | None = "pyspark") -> list[FrameHandler]:
    """pandas, pyarrow, polars and Spark handlers, in that order."""
    return [PandasHandler(), PyArrowHandler(), PolarsHandler(), SparkHandler(spark_resource_key)]


def handler_for_object(handlers: Sequence[FrameHandler], obj: Any) -> FrameHandler:
    """The handler of ``obj``'s frame library; TypeError naming what is supported otherwise."""
    for handler in handlers:
        if handler.accepts(obj):
            return handler
    supported = ", ".join(handler.kind for handler in handlers)
    raise TypeError(
        f"UbunyeIOManager cannot store a {type(obj).__module__}.{type(obj).__name__}: it stores "
        f"frames of {supported} (return one of those, or annotate the asset '-> None' and write "
        "the data yourself)"
    )


def handler_for_type(handlers: Sequence[FrameHandler], cls: Any) -> FrameHandler | None:
    """The handler whose frames are of type ``cls``, or None (then the writer's type is used)."""
    if not isinstance(cls, type):
        return None
    for handler in handlers:
        if handler.accepts_type(cls):
            return handler
    return None


def handler_for_kind(handlers: Sequence[FrameHandler], kind: str | None) -> FrameHandler | None:
    """The handler that writes as ``kind`` (``pandas``, ``spark``, ...), or None."""
    for handler in handlers:
        if handler.kind == kind:
            return handler
    return None
