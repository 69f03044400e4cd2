"""The rows-v1 content hash (ADR 006): one digest of every row, the same on every engine."""

from __future__ import annotations

from ubunye_rows.hashing.canonical import arrow_canonical_lines, canonical_line, canonical_lines
from ubunye_rows.hashing.digest import METHOD, Fingerprint
from ubunye_rows.hashing.fingerprint import (
    arrow_schema_pairs,
    fingerprint,
    fingerprint_arrow,
    fingerprint_rows,
)
from ubunye_rows.hashing.types import UnsupportedTypeError, canonical_type

__all__ = [
    "METHOD",
    "Fingerprint",
    "UnsupportedTypeError",
    "arrow_canonical_lines",
    "arrow_schema_pairs",
    "canonical_line",
    "canonical_lines",
    "canonical_type",
    "fingerprint",
    "fingerprint_arrow",
    "fingerprint_rows",
]
