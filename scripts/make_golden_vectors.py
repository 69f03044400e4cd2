"""Write rows/ubunye_rows/testing/golden_rows_v1.json: tables and the digests the reference
gives them, or Spark's ``to_json`` where rows-v1 follows Spark rather than the reference.

Run once with the reference and pyspark installed (``pip install ubunye-engine==0.8.0``), then
commit the file; the conformance suite reads it and never needs the reference. Each table is
stored as an Arrow IPC stream (base64), which brings every type and every chunk back exactly, and
lists the engines that can hold it without changing a value or a type name.

    python scripts/make_golden_vectors.py            # write the file
    python scripts/make_golden_vectors.py --check    # compare with the committed file
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import decimal
import json
import math
import os
import sys
from pathlib import Path

import pyarrow as pa

from ubunye_rows.hashing.frames import no_column_table
from ubunye_rows.testing.edge_values import (
    DATE_EDGES,
    MISSING_AND_SPECIAL_DOUBLES,
    NOTATION_BOUNDARIES,
)

OUT = Path(__file__).resolve().parent.parent / "rows/ubunye_rows/testing/golden_rows_v1.json"

ALL = ["arrow", "pandas", "polars", "spark"]
#: What gave a vector's digest: the reference, or Spark's to_json where rows-v1 follows Spark.
REFERENCE = "ubunye-engine 0.8.0"
SPARK = "Spark's to_json"
UTC = dt.timezone.utc


def _ipc_base64(table: pa.Table) -> str:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        for batch in table.to_batches():
            writer.write_batch(batch)
    return base64.b64encode(sink.getvalue().to_pybytes()).decode("ascii")


def vectors() -> list[tuple[str, str, list[str], pa.Table]]:
    """(name, what it holds, engines that hold it losslessly, table)."""
    d = decimal.Decimal
    awkward = [
        'say "hi"',
        "back\\slash",
        "".join(chr(c) for c in range(0x20)),
        "😀 \U00010000",
        "line\u2028sep",
        "é/ü",
        "",
    ]
    many = pa.table({"n": pa.array(range(300), pa.int64()), "s": [f"row {i}" for i in range(300)]})
    return [
        (
            "reference_csv",
            "the reference conformance table: int, text with a comma and quotes, double, bool, "
            "date, UTC timestamp, nulls",
            ALL,
            pa.table(
                {
                    "id": pa.array([1, 2, 3], pa.int32()),
                    "name": ["Mokoena, Thabo", '"Anna ""Annie"" Dlamini"', "Sipho"],
                    "score": pa.array([71.5, None, 88.0]),
                    "passed": pa.array([True, False, None]),
                    "day": pa.array([dt.date(2024, 1, 2), dt.date(2024, 2, 29), None]),
                    "seen": pa.array(
                        [
                            dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC),
                            dt.datetime(2024, 2, 29, 23, 59, 59, tzinfo=UTC),
                            None,
                        ],
                        pa.timestamp("us", tz="UTC"),
                    ),
                }
            ),
        ),
        (
            "integers",
            "int8 to int64 at their limits, with nulls",
            ALL,
            pa.table(
                {
                    "i8": pa.array([-128, 127, None, 0], pa.int8()),
                    "i16": pa.array([-32768, 32767, 0, None], pa.int16()),
                    "i32": pa.array([None, -(2**31), 2**31 - 1, 7], pa.int32()),
                    "i64": pa.array([-(2**63), 2**63 - 1, None, -1], pa.int64()),
                }
            ),
        ),
        (
            "doubles_java_edges",
            "NaN, null, +-0.0, +-inf, 1e-3, 1e7 and their neighbours, subnormals, 1e23, "
            "the largest double",
            ALL,
            pa.table(
                {
                    "x": pa.array(
                        [
                            *MISSING_AND_SPECIAL_DOUBLES,
                            *NOTATION_BOUNDARIES,
                            5e-324,
                            -1e-323,
                            2.2250738585072014e-308,
                            1e23,
                            1.7976931348623157e308,
                            0.1,
                            -123.0,
                        ],
                        pa.float64(),
                    )
                }
            ),
        ),
        (
            "floats32",
            "float32 values as Java's Float.toString writes them (kept below 1e6 and from 1e7)",
            ALL,
            pa.table(
                {
                    "f": pa.array(
                        [
                            0.1,
                            1.401298464324817e-45,
                            3.4028234663852886e38,
                            math.nan,
                            -0.0,
                            1e-3,
                            1e7,
                            12345.678,
                            None,
                            -math.inf,
                        ],
                        pa.float32(),
                    )
                }
            ),
        ),
        (
            "awkward_text",
            "quotes, backslashes, every control character, non-BMP characters, U+2028, empty text",
            ALL,
            pa.table({"text": [*awkward, None], 'odd "name"\n': list(range(len(awkward) + 1))}),
        ),
        (
            "binary",
            "bytes as base64",
            ALL,
            pa.table({"raw": pa.array([b"\x00\xff\x10", b"", None, b"abc"])}),
        ),
        (
            "dates",
            "dates from year 1 to 9999",
            ALL,
            pa.table({"day": pa.array([*DATE_EDGES, None])}),
        ),
        (
            "timestamps_utc",
            "instants with microseconds, held in UTC",
            ALL,
            pa.table(
                {
                    "at": pa.array(
                        [
                            dt.datetime(2024, 3, 31, 1, 30, 0, 123456, tzinfo=UTC),
                            dt.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
                            None,
                        ],
                        pa.timestamp("us", tz="UTC"),
                    )
                }
            ),
        ),
        (
            "timestamps_far_years",
            "instants in the years 1000 and 9999",
            ALL,
            pa.table(
                {
                    "at": pa.array(
                        [
                            dt.datetime(1000, 1, 1, tzinfo=UTC),
                            dt.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
                        ],
                        pa.timestamp("us", tz="UTC"),
                    )
                }
            ),
        ),
        (
            "timestamps_in_a_zone",
            "instants whose column carries a zone other than UTC: the text is still UTC",
            ALL,
            pa.table(
                {
                    "at": pa.array(
                        [dt.datetime(2024, 6, 1, 12, 0, tzinfo=UTC), None],
                        pa.timestamp("us", tz="UTC"),
                    ).cast(pa.timestamp("us", tz="Asia/Kolkata"))
                }
            ),
        ),
        (
            "timestamps_ntz",
            "wall-clock timestamps without a zone (timestamp_ntz); "
            "pandas reads naive datetimes as instants",
            ["arrow", "polars", "spark"],
            pa.table(
                {
                    "wall": pa.array(
                        [
                            dt.datetime(2024, 3, 31, 2, 30),
                            dt.datetime(1000, 1, 1, 0, 0, 0, 1),
                            None,
                        ],
                        pa.timestamp("us"),
                    )
                }
            ),
        ),
        (
            "decimals",
            "decimal(38,18) at its limits and decimal(10,2)",
            ALL,
            pa.table(
                {
                    "wide": pa.array(
                        [
                            d("99999999999999999999.999999999999999999"),
                            d("-0.000000000000000001"),
                            d("0E-18"),
                            None,
                        ],
                        pa.decimal128(38, 18),
                    ),
                    "money": pa.array(
                        [d("12.50"), d("-0.01"), None, d("99999999.99")], pa.decimal128(10, 2)
                    ),
                }
            ),
        ),
        (
            "lists",
            "lists keep order and write null elements as null",
            ALL,
            pa.table(
                {
                    "ints": pa.array([[3, None, 1], [], None], pa.list_(pa.int64())),
                    "words": pa.array([["b", "a"], [None], ['"']], pa.list_(pa.string())),
                }
            ),
        ),
        (
            "maps",
            "maps with unsorted keys and null values",
            ALL,
            pa.table(
                {
                    "attrs": pa.array(
                        [[("z", 1), ("a", None), ("m", 3)], [], None],
                        pa.map_(pa.string(), pa.int64()),
                    )
                }
            ),
        ),
        (
            "structs",
            "struct fields keep their declared order; null fields are left out",
            ALL,
            pa.table(
                {
                    "pair": pa.array(
                        [{"b": 1, "a": "x"}, {"b": None, "a": "y"}, None],
                        pa.struct([("b", pa.int32()), ("a", pa.string())]),
                    )
                }
            ),
        ),
        (
            "nested",
            "a list of structs holding a map and a list of doubles",
            ALL,
            pa.table(
                {
                    "deep": pa.array(
                        [[{"m": [("k2", 1.5), ("k1", None)], "xs": [math.nan, -0.0]}], [], None],
                        pa.list_(
                            pa.struct(
                                [
                                    ("m", pa.map_(pa.string(), pa.float64())),
                                    ("xs", pa.list_(pa.float64())),
                                ]
                            )
                        ),
                    )
                }
            ),
        ),
        (
            "empty_table",
            "columns but no rows",
            ALL,
            pa.table({"a": pa.array([], pa.int64()), "b": pa.array([], pa.string())}),
        ),
        (
            "no_columns",
            "rows but no columns: both sums are zero",
            ["arrow", "pandas", "polars"],
            no_column_table(3),
        ),
        (
            "many_chunks",
            "300 rows in 100 chunks",
            ALL,
            pa.concat_tables([many.slice(i, 3) for i in range(0, 300, 3)]),
        ),
        (
            "unsigned_and_large_types",
            "unsigned integers (named as Arrow names them) and large string/list types "
            "(named as the plain ones)",
            ["arrow", "pandas", "polars"],
            pa.table(
                {
                    "u8": pa.array([0, 255, None], pa.uint8()),
                    "u64": pa.array([2**64 - 1, 0, None], pa.uint64()),
                    "big": pa.array(["x", None, "é"], pa.large_string()),
                    "longs": pa.array([[1], None, []], pa.large_list(pa.int64())),
                }
            ),
        ),
    ]


def spark_vectors() -> list[tuple[str, str, list[str], pa.Table]]:
    """The corners where rows-v1 follows Spark's ``to_json`` and the reference's pandas path,
    which splits type names on commas, does not: their digests are Spark's (docs/rows-v1.md)."""
    d = decimal.Decimal
    map_of_float_lists = pa.map_(pa.decimal128(10, 4), pa.list_(pa.float32()))
    map_of_maps = pa.map_(pa.string(), pa.map_(pa.string(), pa.float32()))
    punctuated = pa.struct([("a,b", pa.float32()), ("c:d<e", pa.int64()), ("f>", pa.string())])
    return [
        (
            "map_keyed_by_decimal",
            "a map keyed by decimal(10,4) holding float32 lists, and a map of maps: each value "
            "written by its own type (-1.0E-38, an object, {})",
            ["arrow", "pandas", "spark"],
            pa.table(
                {
                    "prices": pa.array(
                        [[(d("1.5000"), [-1e-38, 1.5, None]), (d("-0.2500"), [])], [], None],
                        map_of_float_lists,
                    ),
                    "nested": pa.array(
                        [[("k", [("x", 1.25), ("y", None)])], [("k", [])], None], map_of_maps
                    ),
                }
            ),
        ),
        (
            "struct_field_names_with_punctuation",
            "struct fields named with a comma, a colon and angle brackets keep their types",
            ALL,
            pa.table(
                {
                    "s": pa.array(
                        [{"a,b": 0.1, "c:d<e": 2, "f>": "x"}, {"a,b": None, "c:d<e": 3}, None],
                        punctuated,
                    )
                }
            ),
        ),
    ]


def spark_fingerprints(tables: list[pa.Table]) -> list:
    """rows-v1 of each table by Spark's own ``to_json`` (the JVM path), in one local session."""
    os.environ["UBUNYE_SPARK_ENGINE"] = "jvm"
    from pyspark.sql import SparkSession

    from ubunye_rows.hashing.spark import fingerprint_spark

    spark = (
        SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
    )
    try:
        return [fingerprint_spark(spark.createDataFrame(table)) for table in tables]
    finally:
        spark.stop()


def _entry(name: str, about: str, engines: list[str], table: pa.Table, expected, by: str) -> dict:
    return {
        "name": name,
        "about": about,
        "engines": engines,
        "digest_by": by,
        "arrow_ipc_base64": _ipc_base64(table),
        "schema_hash": expected.schema_hash,
        "data_hash": expected.data_hash,
        "row_count": expected.row_count,
    }


def _check_engines(name: str, engines: list[str], table: pa.Table, expected) -> None:
    """Our digest on every engine listed (but Spark) is the expected one."""
    import pandas as pd

    from ubunye_rows import fingerprint

    checks = {"arrow": table}
    if "pandas" in engines:
        checks["pandas"] = table.to_pandas(types_mapper=pd.ArrowDtype)
    if "polars" in engines:
        import polars as pl

        checks["polars"] = pl.from_arrow(table)
    for engine, frame in checks.items():
        ours = fingerprint(frame)
        if (ours.schema_hash, ours.data_hash, ours.row_count) != (
            expected.schema_hash,
            expected.data_hash,
            expected.row_count,
        ):
            raise SystemExit(f"{name}: ubunye_rows on {engine} disagrees with {expected}: {ours}")


def build() -> dict:
    os.environ.setdefault("UBUNYE_HASH_WORKERS", "1")
    out = reference_entries()
    followed = spark_vectors()
    for (name, about, engines, table), expected in zip(
        followed, spark_fingerprints([table for *_, table in followed]), strict=True
    ):
        if expected.error:
            raise SystemExit(f"{name}: Spark failed: {expected.error}")
        _check_engines(name, engines, table, expected)
        out.append(_entry(name, about, engines, table, expected, SPARK))
    import ubunye

    return {
        "method": "rows-v1",
        "made_by": "scripts/make_golden_vectors.py with ubunye-engine "
        + str(getattr(ubunye, "__version__", "?"))
        + " (each vector's digest_by names what gave its digest)",
        "vectors": out,
    }


def reference_entries() -> list[dict]:
    """The vectors whose digests the reference gives."""
    import pandas as pd
    from ubunye.lineage.content_hash import fingerprint as reference_fingerprint

    out = []
    for name, about, engines, table in vectors():
        expected = reference_fingerprint(table)
        if expected.error:
            raise SystemExit(f"{name}: the reference failed: {expected.error}")
        if "pandas" in engines:
            again = reference_fingerprint(table.to_pandas(types_mapper=pd.ArrowDtype))
            if again.data_hash != expected.data_hash:
                raise SystemExit(
                    f"{name}: pandas is listed but the reference's pandas digest differs"
                )
        _check_engines(name, engines, table, expected)
        out.append(_entry(name, about, engines, table, expected, REFERENCE))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the committed file")
    args = parser.parse_args(argv)
    text = json.dumps(build(), indent=1, ensure_ascii=False) + "\n"
    if args.check:
        same = OUT.read_text(encoding="utf-8") == text
        print(
            "golden vectors are up to date" if same else "golden vectors differ from the reference"
        )
        return 0 if same else 1
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
