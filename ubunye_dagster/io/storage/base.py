"""Where and how rows are kept: the strategy the receipt pipeline (``ubunye_dagster.io.pipeline``)
calls, whichever store holds them.

The pipeline names what it writes or reads as a :class:`Part`: an op's output, an asset, or one
partition of it. A :class:`Storage` answers with

- ``handlers``: the frame handlers of the libraries it stores, one per library;
- ``stage``: the writer of an output (a ``StagedWrite``), its rows staged where this storage
  keeps them, or in memory. The pipeline hashes the rows the writer offers, passes the staged
  rows through its gate, then commits with the writer's note or discards, leaving the previous
  data in place;
- ``fetch`` and ``read``: for an input, the parts as this storage loads them (those asked, or
  fewer when it loads several partitions as one object) and each part's rows, with how to hash
  them.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import dagster as dg

from ubunye_dagster.io.handlers.base import FrameHandler, LoadedFrame, StagedWrite, TableSlice
from ubunye_dagster.receipts.materialisations import Materialised

if TYPE_CHECKING:
    from upath import UPath


@dataclass(frozen=True)
class Part:
    """One stored unit as the pipeline names it: an op's output, an asset, or a partition."""

    #: The asset key's parts, or an op output's identifier (run, step, output).
    key_path: tuple[str, ...]
    asset_key: dg.AssetKey | None = None
    #: The partition key; None when unpartitioned (or several partitions read as one object).
    partition_key: Any = None
    #: The asset's ``partition_expr`` metadata, for a storage that selects partitions by value.
    partition_expr: Any = None
    #: The record step's name (an input's ``name``, or ``name[partition]`` for one of several).
    name: str = ""
    #: True when this is one of several partitions a step reads (returned as a dict).
    one_of_several: bool = False

    def slice_at(self, location: UPath) -> TableSlice:
        """This part's rows kept at ``location``: what every handler is given."""
        return TableSlice(location, self.partition_key, self.partition_expr)


@dataclass(frozen=True)
class ReadRequest:
    """What one part's read asks of a storage."""

    part: Part
    #: The part's latest materialisation (where it says the rows are), or None.
    latest: Materialised | None = None
    #: The frame type wanted; None for the writer's.
    wanted: Any = None
    #: A byte digest algorithm: digest the stored bytes too (None: do not).
    digest_with: str | None = None


@dataclass
class StoredRead:
    """One part's rows as read: who read them as what, the frame and where they were."""

    #: The reader's frame library (``pandas``, ``spark``...): a handler's ``kind``.
    reader: str
    #: What the rows were stored as, for the input step's ``format`` (``parquet``, ``delta``, or
    #: the name of the IO manager that stored them).
    format: str
    loaded: LoadedFrame
    #: Where the rows were, as the record names it.
    location: str
    #: False when the rows cannot be held against one recorded digest (several partitions
    #: loaded as one object).
    verifiable: bool = True

    @classmethod
    def by(cls, handler: FrameHandler, loaded: LoadedFrame, location: Any) -> StoredRead:
        """What ``handler`` loaded from ``location``, named by its kind and its storage."""
        return cls(handler.kind, handler.storage, loaded, str(location))


class Storage(ABC):
    """Where and how an IO manager's rows are kept (files, Delta tables, another IO manager)."""

    #: Whether a read of several partitions also records one input combining their digests.
    combines_partition_reads: ClassVar[bool] = True

    @abstractmethod
    def handlers(self) -> Sequence[FrameHandler]:
        """The frame handlers this storage stores with, the default reader first."""

    @abstractmethod
    def stage(self, part: Part, handler: FrameHandler, obj: Any, context: Any) -> StagedWrite:
        """The writer of ``obj`` (one of ``handler``'s frames) as ``part``; nothing is visible
        where the part is kept before it commits."""

    def fetch(self, context: dg.InputContext, parts: list[Part]) -> list[Part]:
        """The parts of an input as this storage loads them; by default those asked, each read
        on its own by :meth:`read`."""
        return parts

    @abstractmethod
    def read(self, context: dg.InputContext, request: ReadRequest) -> StoredRead:
        """The rows of ``request.part``, with who read them; FileNotFoundError when nothing is
        stored for it."""
