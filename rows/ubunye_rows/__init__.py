"""rows-v1 (ADR 006): one digest of every row of a table, order free and column-order free, the
same on pandas, Arrow, polars and Spark; its sketches, which add up; and the evidence a receipt
carries beside it (the code's hash, the environment)."""

from ubunye_rows.evidence import code_hash, environment, environment_hash
from ubunye_rows.hashing import (
    METHOD,
    Fingerprint,
    UnsupportedTypeError,
    arrow_canonical_lines,
    arrow_schema_pairs,
    canonical_line,
    canonical_lines,
    canonical_type,
    fingerprint,
    fingerprint_arrow,
    fingerprint_rows,
)
from ubunye_rows.hashing.digest import data_hash, schema_hash
from ubunye_rows.hashing.sketch import (
    BUCKETS,
    SKETCH_FORMAT,
    Sketch,
    combine,
    fingerprint_of_sketch,
)

__version__ = "0.1.0"

__all__ = [
    "BUCKETS",
    "METHOD",
    "SKETCH_FORMAT",
    "Fingerprint",
    "Sketch",
    "UnsupportedTypeError",
    "__version__",
    "arrow_canonical_lines",
    "arrow_schema_pairs",
    "canonical_line",
    "canonical_lines",
    "canonical_type",
    "code_hash",
    "combine",
    "data_hash",
    "environment",
    "environment_hash",
    "fingerprint",
    "fingerprint_arrow",
    "fingerprint_of_sketch",
    "fingerprint_rows",
    "schema_hash",
]
