"""rows-v1 on Spark: one aggregation on the cluster, a handful of numbers back to the driver.

Two ways to write the lines, one digest. By default (``UBUNYE_SPARK_ENGINE=auto``) each
partition reaches a Python worker as Arrow batches (``mapInArrow``) and the Arrow path writes and
hashes its lines there (:mod:`ubunye_rows.hashing.spark_arrow`): about twice as fast as Spark's
own ``to_json``, which pays a JSON generator per row. When the workers cannot import
``ubunye_rows`` (``jvm``, or ``auto`` after such a failure), Spark writes each line itself:
``to_json`` of a struct holding the columns in name order, after every map's entries are put in
key order, hashed by ``sha2``. Either way the SHA-256 of the line gives two 64-bit lanes; each
lane is cut into three pieces of at most 22 bits, and the pieces are summed as ``long``. A piece
sum cannot leave the ``long`` range before 2**41 rows, so the sums are exact whether or not ANSI
mode is on, and the driver rebuilds each lane sum modulo 2**64 from its three piece sums.

Works on classic and Spark Connect DataFrames alike: only the DataFrame and functions API is used.

On the JVM path doubles and floats are written by Java's ``Double.toString`` /
``Float.toString``. Before Java 19 those are not always the shortest round trip (about 0.3% of
arbitrary bit patterns, and values such as 1e23), so on Java 17 such a value gives another line
than the Arrow path writes; on Java 19 or later (21, 25) Spark and Arrow agree on every value.
The Python workers write the Arrow path's text on any Java.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from ubunye_rows.hashing.digest import LANE_MASK, Fingerprint
from ubunye_rows.hashing.sketch import BUCKETS, Sketch, fingerprint_of_sketch
from ubunye_rows.hashing.spark_arrow import WorkerCannotWriteLine
from ubunye_rows.hashing.types import Kind, UnsupportedTypeError, refuse_duplicate_names

#: Options that make ``to_json`` write the canonical line whatever the session says: instants in
#: UTC to the microsecond, wall-clock timestamps and dates as ISO text, null fields left out.
CANONICAL_JSON_OPTIONS = {
    "timestampFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSS'Z'",
    "timestampNTZFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSS",
    "dateFormat": "yyyy-MM-dd",
    "timeZone": "UTC",
    # Both default to the canonical choice, but a session may change the defaults.
    "ignoreNullFields": "true",
    "writeNonAsciiCharacterAsCodePoint": "false",
}

#: Setting (environment variable) for where Spark writes the lines: ``auto`` (default), ``arrow``
#: (the Arrow path in Spark's Python workers) or ``jvm`` (``to_json`` and ``sha2`` on the JVM).
SPARK_ENGINE_ENV = "UBUNYE_SPARK_ENGINE"
SPARK_ENGINES = ("auto", "arrow", "jvm")

#: Bit widths of a lane's pieces, most significant first; they add up to 64.
PIECE_BITS = (22, 21, 21)
#: Where each piece starts inside its lane (its shift), most significant first.
PIECE_SHIFTS = (42, 21, 0)

_SIMPLE_TYPE_NAMES = {
    "ByteType": "int8",
    "ShortType": "int16",
    "IntegerType": "int32",
    "LongType": "int64",
    "FloatType": "float32",
    "DoubleType": "float64",
    "BooleanType": "bool",
    "StringType": "string",
    "VarcharType": "string",
    "CharType": "string",
    "BinaryType": "binary",
    "DateType": "date",
    "TimestampType": "timestamp",
    "TimestampNTZType": "timestamp_ntz",
    "NullType": "null",
}


def spark_type_name(kind: Any) -> str:
    """The canonical rows-v1 name of a Spark SQL type (ADR 006's table).

    Raises UnsupportedTypeError for a type outside the table (intervals, variant, UDTs, ...),
    as the Arrow side does: no other engine could write the same line for it.
    """
    from pyspark.sql import types as T

    simple = _SIMPLE_TYPE_NAMES.get(type(kind).__name__)
    if simple is not None:
        return simple
    if isinstance(kind, T.DecimalType):
        return f"decimal({kind.precision},{kind.scale})"
    if isinstance(kind, T.ArrayType):
        return Kind.of_list(spark_type_name(kind.elementType))
    if isinstance(kind, T.MapType):
        return Kind.of_map(spark_type_name(kind.keyType), spark_type_name(kind.valueType))
    if isinstance(kind, T.StructType):
        return Kind.of_struct([(field.name, spark_type_name(field.dataType)) for field in kind])
    raise UnsupportedTypeError(
        f"rows-v1 has no canonical name for the Spark type {kind.simpleString()}"
    )


def spark_schema_pairs(df: Any) -> list[tuple[str, str]]:
    """``(column name, canonical type name)`` per column of a Spark DataFrame, in frame order."""
    return [(field.name, spark_type_name(field.dataType)) for field in df.schema.fields]


def lane_sums_from_piece_sums(piece_sums: Sequence[int | None]) -> tuple[int, int]:
    """The two lane sums modulo 2**64 from the six piece sums (lane A's three, then lane B's).

    A lane is ``p0 * 2**42 + p1 * 2**21 + p2``, so the sum of a lane over the rows is the same
    combination of the piece sums; a missing sum (no rows) counts as 0.
    """
    if len(piece_sums) != 2 * len(PIECE_SHIFTS):
        raise ValueError(f"expected {2 * len(PIECE_SHIFTS)} piece sums, got {len(piece_sums)}")
    values = [int(value or 0) for value in piece_sums]
    lanes = []
    for lane in range(2):
        pieces = values[lane * len(PIECE_SHIFTS) : (lane + 1) * len(PIECE_SHIFTS)]
        total = sum(piece << shift for piece, shift in zip(pieces, PIECE_SHIFTS, strict=True))
        lanes.append(total & LANE_MASK)
    return lanes[0], lanes[1]


def lane_pieces(lane: int) -> tuple[int, int, int]:
    """One unsigned 64-bit lane cut into its three pieces, most significant first."""
    if not 0 <= lane <= LANE_MASK:
        raise ValueError(f"a lane is an unsigned 64-bit integer, got {lane}")
    return tuple(  # type: ignore[return-value]
        (lane >> shift) & ((1 << bits) - 1)
        for shift, bits in zip(PIECE_SHIFTS, PIECE_BITS, strict=True)
    )


def fingerprint_spark(df: Any) -> Fingerprint:
    """rows-v1 fingerprint of a Spark DataFrame (classic or Connect) in one aggregation.

    Raises when the rows cannot be read (or the column names are ambiguous); the caller reports it.
    """
    return fingerprint_of_sketch(spark_sketch(df))


def spark_line_engine() -> str:
    """Where Spark lines are written: ``UBUNYE_SPARK_ENGINE`` (``auto``, ``arrow`` or ``jvm``)."""
    wanted = os.environ.get(SPARK_ENGINE_ENV, "auto").strip().lower() or "auto"
    if wanted not in SPARK_ENGINES:
        raise ValueError(f"{SPARK_ENGINE_ENV} must be auto, arrow or jvm, not {wanted!r}")
    return wanted


def spark_row_count_and_lane_sums(df: Any) -> tuple[int, tuple[int, int]]:
    """Row count and the two lane sums (modulo 2**64) of ``df``'s canonical lines, in one job."""
    sketch = spark_sketch(df)
    return sketch.rows, sketch.lane_sums()


def spark_sketch(df: Any) -> Sketch:
    """Per-bucket row counts and lane sums of ``df``'s canonical lines, in one job.

    ``auto`` hashes in Spark's Python workers with the Arrow path and, when a worker cannot
    import ``ubunye_rows`` or ``pyarrow`` or cannot write a line, once more on the JVM with
    ``to_json``. Either way a
    grouped aggregation by bucket brings at most 256 rows of seven numbers to the driver.
    """
    from pyspark.sql import functions as F

    pairs = spark_schema_pairs(df)
    if not df.schema.fields:
        # rows-v1: a table without columns has lane sums of zero; only its rows are counted.
        return Sketch.of_rows_only(pairs, int(df.agg(F.count(F.lit(1))).collect()[0][0]))
    engine = spark_line_engine()
    if engine != "jvm":
        from ubunye_rows.hashing.spark_arrow import arrow_worker_bucket_rows

        refuse_duplicate_names(df.columns)
        try:
            rows = arrow_worker_bucket_rows(df, pairs, PIECE_SHIFTS, PIECE_BITS)
        except Exception as exc:
            if engine == "arrow" or not _workers_cannot_hash(exc):
                raise
        else:
            return sketch_of_bucket_rows(pairs, rows)
    return sketch_of_bucket_rows(pairs, _to_json_bucket_rows(df))


def sketch_of_bucket_rows(pairs: Sequence[tuple[str, str]], rows: Sequence[Any]) -> Sketch:
    """The sketch from rows of (bucket, row count, lane A's three piece sums, lane B's)."""

    totals = [[0] * BUCKETS for _ in range(3)]
    for row in rows:
        bucket = int(row[0])
        totals[0][bucket] = int(row[1] or 0)
        totals[1][bucket], totals[2][bucket] = lane_sums_from_piece_sums(list(row[2:]))
    return Sketch.from_arrays(pairs, totals)


def _workers_cannot_hash(error: BaseException) -> bool:
    """True when a Spark job failed because a Python worker lacks a module it needs or met a
    value it cannot write as a line (then ``to_json`` on the JVM writes it)."""
    # The workers' exception reaches the driver as text inside Spark's (or Connect's) error.
    signs = ("ModuleNotFoundError", "No module named", WorkerCannotWriteLine.__name__)
    return any(sign in str(error) for sign in signs)


def _to_json_bucket_rows(df: Any) -> list[Any]:
    """Per bucket: row count and lane piece sums, every line written by ``to_json`` and hashed
    on the JVM."""
    from pyspark.sql import functions as F

    piece_sums = [
        F.sum(_lane_piece(F.col(lane), shift, bits)).alias(f"{lane}{shift}")
        for lane in ("a", "b")
        for shift, bits in zip(PIECE_SHIFTS, PIECE_BITS, strict=True)
    ]
    digests = spark_canonical_lines(df).select(F.sha2("line", 256).alias("d"))
    # Each lane is parsed once, as a signed long (conv to base -10), then cut with bit operations.
    lanes = digests.select(
        _signed_lane(F.substring("d", 1, 16)).alias("a"),
        _signed_lane(F.substring("d", 17, 16)).alias("b"),
    )
    # The bucket is the top byte of lane A: one shift, no second parse of the text.
    bucket = F.shiftrightunsigned(F.col("a"), 56).cast("int").alias("bucket")
    return lanes.groupBy(bucket).agg(F.count(F.lit(1)).alias("rows"), *piece_sums).collect()


def spark_canonical_lines(df: Any) -> Any:
    """A one-column DataFrame (``line``) of each row's canonical rows-v1 line.

    Columns are renamed by position first, so no name is ever parsed: dots, backticks, spaces
    and names differing only in case all reach the line exactly as written.
    """
    from pyspark.sql import functions as F

    fields = df.schema.fields
    refuse_duplicate_names([field.name for field in fields])
    positional = df.toDF(*[f"_c{index}" for index in range(len(fields))])
    order = sorted(range(len(fields)), key=lambda index: fields[index].name)
    columns = [
        with_sorted_maps(F.col(f"_c{index}"), fields[index].dataType).alias(fields[index].name)
        for index in order
    ]
    return positional.select(F.to_json(F.struct(*columns), CANONICAL_JSON_OPTIONS).alias("line"))


def contains_map(kind: Any) -> bool:
    """True when a map occurs in ``kind``, at the top or nested in arrays, structs or maps."""
    from pyspark.sql import types as T

    if isinstance(kind, T.MapType):
        return True
    if isinstance(kind, T.ArrayType):
        return contains_map(kind.elementType)
    if isinstance(kind, T.StructType):
        return any(contains_map(field.dataType) for field in kind)
    return False


def with_sorted_maps(col: Any, kind: Any) -> Any:
    """``col`` as is when ``kind`` holds no map; else rebuilt so each map, however deep, lists
    its entries in key order."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    if not contains_map(kind):
        return col
    if isinstance(kind, T.ArrayType):
        return F.transform(col, lambda element: with_sorted_maps(element, kind.elementType))
    if isinstance(kind, T.StructType):
        fields = [
            with_sorted_maps(col.getField(field.name), field.dataType).alias(field.name)
            for field in kind
        ]
        return F.when(col.isNotNull(), F.struct(*fields))
    return _sorted_map(col, kind)


def _sorted_map(col: Any, kind: Any) -> Any:
    from pyspark.sql import functions as F

    entries = F.map_entries(col)
    if not contains_map(kind.valueType):
        # Keys are unique, so ordering (key, value) structs orders by key alone.
        return F.map_from_entries(F.sort_array(entries))
    # A value holding a map cannot be ordered, so sort the rebuilt entries by key only.
    rebuilt = F.transform(
        entries,
        lambda entry: F.struct(
            entry.getField("key").alias("key"),
            with_sorted_maps(entry.getField("value"), kind.valueType).alias("value"),
        ),
    )
    by_key = F.array_sort(
        rebuilt,
        lambda left, right: (
            F.when(left.getField("key") < right.getField("key"), F.lit(-1))
            .when(left.getField("key") > right.getField("key"), F.lit(1))
            .otherwise(F.lit(0))
        ),
    )
    return F.map_from_entries(by_key)


def _signed_lane(hex16: Any) -> Any:
    from pyspark.sql import functions as F

    return F.conv(hex16, 16, -10).cast("long")


def _lane_piece(lane: Any, shift: int, bits: int) -> Any:
    from pyspark.sql import functions as F

    return F.shiftrightunsigned(lane, shift).bitwiseAND(F.lit((1 << bits) - 1))
