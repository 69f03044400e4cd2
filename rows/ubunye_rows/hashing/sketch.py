"""Sketches: a rows-v1 digest split over 256 buckets, so digests add up and differences localise.

A row's bucket is the top 8 bits of its line's SHA-256 (the first byte of lane A). Per bucket a
sketch keeps the row count and the two lane sums modulo 2**64. The buckets' totals are the
digest's own count and sums, so a sketch rebuilds ``data_hash`` exactly; two sketches of the same
schema add up to the sketch of both tables' rows; and two tables differ only in the buckets
where their sketches differ.
"""

from __future__ import annotations

import base64
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ubunye_rows.hashing.digest import LANE_MASK, Fingerprint, data_hash, schema_hash
from ubunye_rows.latest import Latest

if TYPE_CHECKING:
    import numpy as np

#: Buckets per sketch: the top 8 bits of a row's SHA-256.
BUCKETS = 256
#: The name a stored sketch carries, so a reader knows its layout.
SKETCH_FORMAT = "rows-v1-sketch256"

_EMPTY = (0,) * BUCKETS


def empty_bucket_arrays() -> np.ndarray:
    """A (3, 256) uint64 array of zeros: per-bucket counts, lane A sums, lane B sums."""
    import numpy as np

    return np.zeros((3, BUCKETS), dtype=np.uint64)


def add_digest_buckets(totals: np.ndarray, digests: np.ndarray, count: int) -> None:
    """Add ``count`` 32-byte SHA-256 digests (laid end to end, uint8) into ``totals`` in place.

    ``totals`` is a (3, 256) uint64 array as from :func:`empty_bucket_arrays`; uint64 adds
    wrap modulo 2**64, the lane arithmetic of rows-v1.
    """
    import numpy as np

    if digests.size != 32 * count:
        raise RuntimeError(f"expected {count} SHA-256 digests, got {digests.size} bytes")
    if count == 0:
        return
    words = digests.view(">u8").reshape(count, 4)
    buckets = digests[::32]
    totals[0] += np.bincount(buckets, minlength=BUCKETS).astype(np.uint64)
    # np.add.at on two 1-D arrays is the cheapest exact grouped uint64 sum numpy offers.
    np.add.at(totals[1], buckets, words[:, 0].astype(np.uint64))
    np.add.at(totals[2], buckets, words[:, 1].astype(np.uint64))


@dataclass(frozen=True)
class Sketch:
    """Row count and lane sums per bucket of one table, with the schema its lines were made by.

    ``schema`` is the sorted ``(name, canonical type)`` pairs; ``counts``, ``lane_a`` and
    ``lane_b`` have one entry per bucket.
    """

    schema: tuple[tuple[str, str], ...]
    counts: tuple[int, ...] = _EMPTY
    lane_a: tuple[int, ...] = _EMPTY
    lane_b: tuple[int, ...] = _EMPTY

    def __post_init__(self) -> None:
        for name in ("counts", "lane_a", "lane_b"):
            size = len(getattr(self, name))
            if size != BUCKETS:
                raise ValueError(f"a sketch has {BUCKETS} buckets, {name} has {size}")

    @classmethod
    def from_arrays(cls, schema: Iterable[Sequence[str]], totals: Any) -> Sketch:
        """A sketch from a (3, 256) array (counts, lane A sums, lane B sums) and schema pairs."""
        kind = getattr(getattr(totals, "dtype", None), "kind", None)
        if kind == "u" and totals.dtype.itemsize <= 8:
            # Unsigned 64-bit or narrower: already in range; tolist() is one C call, not 768.
            rows = [tuple(row) for row in totals.tolist()]
        else:
            rows = [tuple(int(value) & LANE_MASK for value in row) for row in totals]
        return cls(sorted_schema(schema), rows[0], rows[1], rows[2])

    @classmethod
    def of_rows_only(cls, schema: Iterable[Sequence[str]], rows: int) -> Sketch:
        """The sketch of a table without columns: rows-v1 sums nothing, so all rows are in
        bucket 0 with zero sums."""
        return cls(sorted_schema(schema), (int(rows), *_EMPTY[1:]))

    @property
    def rows(self) -> int:
        """Rows in the table."""
        return sum(self.counts)

    def lane_sums(self) -> tuple[int, int]:
        """The digest's two lane sums: the buckets' sums added modulo 2**64."""
        return sum(self.lane_a) & LANE_MASK, sum(self.lane_b) & LANE_MASK

    def data_hash(self) -> str:
        """The rows-v1 ``data_hash`` these buckets add up to (worked out once per sketch)."""
        found = self.__dict__.get("_data_hash")
        if found is None:
            found = self.__dict__["_data_hash"] = data_hash(
                self.schema, self.rows, self.lane_sums()
            )
        return found

    def schema_hash(self) -> str:
        """The rows-v1 ``schema_hash`` of the sketch's schema."""
        return schema_hash(self.schema)

    def __add__(self, other: Sketch) -> Sketch:
        """The sketch of both tables' rows together (same schema only)."""
        if not isinstance(other, Sketch):
            return NotImplemented
        if other.schema != self.schema:
            raise ValueError("sketches of different schemas do not add up")
        return Sketch(
            self.schema,
            tuple(x + y for x, y in zip(self.counts, other.counts, strict=True)),
            tuple((x + y) & LANE_MASK for x, y in zip(self.lane_a, other.lane_a, strict=True)),
            tuple((x + y) & LANE_MASK for x, y in zip(self.lane_b, other.lane_b, strict=True)),
        )

    def bucket(self, index: int) -> tuple[int, int, int]:
        """(rows, lane A sum, lane B sum) of one bucket."""
        return self.counts[index], self.lane_a[index], self.lane_b[index]

    def differing_buckets(self, other: Sketch) -> list[int]:
        """Buckets whose rows differ between the two tables (all of them when schemas differ)."""
        if other.schema != self.schema:
            return list(range(BUCKETS))
        return [i for i in range(BUCKETS) if self.bucket(i) != other.bucket(i)]

    def summary(self) -> str:
        """One short line for metadata: how the rows spread over the buckets."""
        used = sum(1 for count in self.counts if count)
        return f"{self.rows} rows in {used}/{BUCKETS} buckets, largest {max(self.counts)}"

    def to_record(self) -> dict[str, Any]:
        """The compact form kept in a run record: schema pairs and zlib+base64 little-endian
        uint64 arrays (counts, lane A, lane B)."""
        return {
            "format": SKETCH_FORMAT,
            "schema": [list(pair) for pair in self.schema],
            "rows": self.rows,
            "buckets": self.packed_buckets(),
        }

    def packed_buckets(self) -> str:
        """The buckets as ``to_record`` stores them, packed once per sketch."""
        packed = self.__dict__.get("_packed")
        if packed is None:
            import numpy as np

            raw = np.array([self.counts, self.lane_a, self.lane_b], dtype="<u8").tobytes()
            # Level 6: the lanes are random bits, on which level 9 only searches longer (4 to 5
            # times as long for 0.6 % fewer bytes).
            packed = base64.b64encode(zlib.compress(raw, 6)).decode("ascii")
            self.__dict__["_packed"] = packed  # frozen: the cache is not a field
            _KNOWN.keep(packed, self)
        return packed

    @classmethod
    def from_record(cls, document: Mapping[str, Any]) -> Sketch:
        """Read the form :meth:`to_record` writes; ValueError naming what is wrong otherwise."""
        if not isinstance(document, Mapping) or document.get("format") != SKETCH_FORMAT:
            raise ValueError(f"not a {SKETCH_FORMAT} sketch")
        try:
            sketch = _KNOWN.sketch(document["buckets"], document["schema"])
            if sketch is None:
                sketch = cls.from_arrays(document["schema"], _unpacked(document["buckets"]))
                _KNOWN.keep(document["buckets"], sketch)
        except (KeyError, TypeError, ValueError, zlib.error) as exc:
            raise ValueError(f"a damaged {SKETCH_FORMAT} sketch: {exc}") from exc
        if document.get("rows") is not None and int(document["rows"]) != sketch.rows:
            raise ValueError(f"a damaged {SKETCH_FORMAT} sketch: rows do not add up")
        return sketch


def _unpacked(packed: Any) -> np.ndarray:
    """The (3, 256) totals of packed bucket text."""
    import numpy as np

    raw = zlib.decompress(base64.b64decode(packed, validate=True))
    return np.frombuffer(raw, dtype="<u8").reshape(3, BUCKETS)


class _KnownSketches:
    """The sketches this process packed or read last, by their packed bucket text: the same
    text always unpacks to the same buckets (sketches are immutable), so it is not unpacked
    again; the schema, stored beside the text, must match too."""

    def __init__(self, size: int = 64):
        self._known: Latest[str, Sketch] = Latest(size)

    def keep(self, packed: Any, sketch: Sketch) -> None:
        if isinstance(packed, str):
            self._known.put(packed, sketch)

    def sketch(self, packed: Any, schema: Iterable[Sequence[str]]) -> Sketch | None:
        """The sketch known for ``packed`` with ``schema`` (pairs as stored), else None."""
        known = self._known.get(packed) if isinstance(packed, str) else None
        return known if known is not None and known.schema == sorted_schema(schema) else None


_KNOWN = _KnownSketches()


def sorted_schema(schema: Iterable[Sequence[str]]) -> tuple[tuple[str, str], ...]:
    """Schema pairs as a sketch keeps them: ``(name, type)`` tuples sorted by name."""
    return tuple(sorted((str(name), str(kind)) for name, kind in schema))


def combine(fingerprints: Sequence[Fingerprint]) -> Fingerprint:
    """The fingerprint of all the fingerprinted tables' rows together, without reading a row.

    Every fingerprint must be complete, carry its sketch, and have the same schema; the result
    equals ``fingerprint(concat(tables))`` byte for byte. ValueError says which one cannot be
    combined and why.
    """
    if not fingerprints:
        raise ValueError("combine needs at least one fingerprint")
    total: Sketch | None = None
    for index, fp in enumerate(fingerprints):
        if not fp.is_complete:
            raise ValueError(f"fingerprint {index} has no data hash ({fp.error or 'no rows'})")
        if fp.sketch is None:
            raise ValueError(f"fingerprint {index} has no sketch, so it cannot be combined")
        if fp.sketch.data_hash() != fp.data_hash:
            raise ValueError(f"fingerprint {index}: its sketch does not add up to its data hash")
        if total is not None and fp.sketch.schema != total.schema:
            raise ValueError(f"fingerprint {index} has another schema than fingerprint 0")
        total = fp.sketch if total is None else total + fp.sketch
    assert total is not None
    return fingerprint_of_sketch(total)


def fingerprint_of_sketch(sketch: Sketch) -> Fingerprint:
    """The fingerprint a sketch adds up to (schema hash, data hash, rows, and the sketch)."""
    return Fingerprint(
        schema_hash=sketch.schema_hash(),
        data_hash=sketch.data_hash(),
        row_count=sketch.rows,
        sketch=sketch,
    )
