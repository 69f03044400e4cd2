"""The parts of rows-v1 every engine shares: lanes of one line, the schema hash, the data hash."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

METHOD = "rows-v1"
LANE_MASK = (1 << 64) - 1

SchemaPairs = Sequence[tuple[str, str]]


#: ``Fingerprint.hashed_in``: rows hashed by one aggregation in the database.
IN_DATABASE = "database"
#: ``Fingerprint.hashed_in``: rows streamed from a database to the kernel as Arrow batches.
STREAMED = "stream"


@dataclass(frozen=True)
class Fingerprint:
    """What a run record says about one table; no ``data_hash`` exactly when ``error`` says why."""

    schema_hash: str
    data_hash: str | None
    row_count: int | None
    method: str = METHOD
    error: str | None = None
    #: Count and lane sums per bucket, a ``ubunye_rows.hashing.sketch.Sketch`` (typed ``Any``: that
    #: module builds on this one), when the hash kept them.
    sketch: Any = field(default=None, compare=False, repr=False)
    #: Where the rows were hashed when not in this process's memory: ``"database"`` (one
    #: aggregation in the database, no row left it) or ``"stream"`` (rows streamed from a
    #: database to the kernel as Arrow batches). Not part of the digest.
    hashed_in: str | None = field(default=None, compare=False)

    @property
    def is_complete(self) -> bool:
        """True when every row was read and hashed."""
        return self.data_hash is not None and self.error is None


def prefixed_sha256(text: str) -> str:
    """``sha256:<hex>`` of ``text`` encoded as UTF-8."""
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def _sorted_pairs(schema: SchemaPairs) -> list[list[str]]:
    return sorted([[str(name), str(kind)] for name, kind in schema])


def schema_hash(schema: SchemaPairs) -> str:
    """``sha256:`` of the compact JSON list of ``[name, type]`` pairs, in name order."""
    return prefixed_sha256(json.dumps(_sorted_pairs(schema), separators=(",", ":")))


def data_hash(schema: SchemaPairs, rows: int, sums: tuple[int, int]) -> str:
    """Hash of method, schema, row count and the two lane sums (each taken modulo 2**64)."""
    payload = {
        "method": METHOD,
        "rows": int(rows),
        "schema": _sorted_pairs(schema),
        "sums": [int(sums[0]) & LANE_MASK, int(sums[1]) & LANE_MASK],
    }
    return prefixed_sha256(json.dumps(payload, sort_keys=True, separators=(",", ":")))


def line_lanes(line: str) -> tuple[int, int]:
    """One canonical line's two lanes: SHA-256 bytes 0..8 and 8..16 as big-endian uint64."""
    digest = hashlib.sha256(line.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big"), int.from_bytes(digest[8:16], "big")
