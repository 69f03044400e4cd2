"""rows-v1 on Spark keeps ADR 006's promises and gives the same digest as Arrow and the reference.

The oracle is ubunye-engine 0.8.0: its Spark aggregation and its pandas/Arrow path. Frames are
built from Arrow tables and the session zone is not UTC (conftest), so a leaked zone would show.
"""

from __future__ import annotations

import datetime as dt
import inspect
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from local_spark import SPARK_SESSION_TIME_ZONE, java_feature_version, spark_frame

from ubunye_dagster.io.handlers.pyspark import session_conf
from ubunye_rows.hashing import spark as spark_hashing
from ubunye_rows.hashing.digest import LANE_MASK, line_lanes
from ubunye_rows.hashing.spark import (
    PIECE_BITS,
    fingerprint_spark,
    lane_pieces,
    lane_sums_from_piece_sums,
    spark_schema_pairs,
)
from ubunye_rows.testing.edge_values import (
    DATE_EDGES,
    MISSING_AND_SPECIAL_DOUBLES,
    NOTATION_BOUNDARIES,
)

pytestmark = pytest.mark.spark

LONG_MAX = 2**63 - 1
lanes = st.integers(min_value=0, max_value=LANE_MASK)


def digest_of(fp: Any) -> tuple[str | None, str | None, int | None]:
    """What two fingerprints (ours or the reference's) must share to agree."""
    return fp.schema_hash, fp.data_hash, fp.row_count


def arrow_digest(table: pa.Table) -> tuple[str | None, str | None, int | None]:
    """Our own Arrow path's digest of ``table``."""
    from ubunye_rows import fingerprint

    return digest_of(fingerprint(table))


def assert_same_digest_everywhere(spark: Any, table: pa.Table) -> None:
    """Spark (ours, reference) and Arrow (ours, reference) all give one digest for ``table``."""
    from ubunye.adapters.spark.content_hash import fingerprint_spark as reference_spark
    from ubunye.lineage.content_hash import fingerprint as reference_arrow

    from ubunye_rows import fingerprint

    df = spark_frame(spark, table)
    ours = fingerprint_spark(df)
    assert ours.error is None
    assert digest_of(ours) == digest_of(reference_spark(df)), "reference Spark digest"
    assert digest_of(ours) == digest_of(fingerprint(table)), "our Arrow digest"
    assert digest_of(ours) == digest_of(reference_arrow(table)), "reference Arrow digest"


# ---------------------------------------------------------------- lane pieces (pure arithmetic)


@given(lanes)
@settings(max_examples=200, deadline=None)
def test_a_lane_is_three_pieces_of_at_most_22_bits(lane: int) -> None:
    pieces = lane_pieces(lane)
    assert all(0 <= piece < 2**bits for piece, bits in zip(pieces, PIECE_BITS, strict=True))
    assert all(bits <= 22 for bits in PIECE_BITS) and sum(PIECE_BITS) == 64
    assert lane_sums_from_piece_sums([*pieces, *pieces]) == (lane, lane)


@given(st.lists(st.tuples(lanes, lanes), max_size=50))
@settings(max_examples=100, deadline=None)
def test_piece_sums_rebuild_the_lane_sums_modulo_2_64(rows: list[tuple[int, int]]) -> None:
    piece_sums = [0] * 6
    for a, b in rows:
        for index, piece in enumerate((*lane_pieces(a), *lane_pieces(b))):
            piece_sums[index] += piece
    expected = (sum(a for a, _ in rows) & LANE_MASK, sum(b for _, b in rows) & LANE_MASK)
    assert lane_sums_from_piece_sums(piece_sums) == expected


@given(lanes, lanes, st.integers(min_value=2**31, max_value=2**41))
@settings(max_examples=100, deadline=None)
def test_piece_sums_stay_exact_in_a_long_far_past_2_31_rows(a: int, b: int, rows: int) -> None:
    # As if `rows` rows all had these lanes: every piece sum must still fit a signed long.
    piece_sums = [rows * piece for piece in (*lane_pieces(a), *lane_pieces(b))]
    assert max(piece_sums) <= LONG_MAX
    assert lane_sums_from_piece_sums(piece_sums) == ((rows * a) & LANE_MASK, (rows * b) & LANE_MASK)


def test_the_largest_possible_piece_sum_fits_a_long_up_to_2_41_rows() -> None:
    largest_piece = max(2**bits - 1 for bits in PIECE_BITS)
    assert 2**41 * largest_piece <= LONG_MAX


def test_missing_piece_sums_of_an_empty_frame_count_as_zero() -> None:
    assert lane_sums_from_piece_sums([None] * 6) == (0, 0)


def test_a_wrong_number_of_piece_sums_is_refused() -> None:
    with pytest.raises(ValueError, match="expected 6 piece sums"):
        lane_sums_from_piece_sums([1, 2, 3])


def test_the_spark_module_uses_nothing_spark_connect_lacks() -> None:
    source = inspect.getsource(spark_hashing)
    for classic_only in ("_jdf", "_jvm", ".rdd", "sparkContext", "_jsparkSession"):
        assert classic_only not in source


# ---------------------------------------------------------------- agreement with the reference

NESTED = pa.table(
    {
        "items": pa.array(
            [
                [{"m": [("z", 1.5), ("a", None)], "xs": [1.0, None, float("nan")]}],
                [],
                None,
                [None, {"m": None, "xs": None}],
            ],
            pa.list_(
                pa.struct(
                    [("m", pa.map_(pa.string(), pa.float64())), ("xs", pa.list_(pa.float64()))]
                )
            ),
        ),
        "tags": pa.array(
            [[("zeta", 1), ("alpha", None), ("Beta", 3)], [], None, [("b", 2), ("a", 1)]],
            pa.map_(pa.string(), pa.int64()),
        ),
        "deep": pa.array(
            [[("y", [("q", 1), ("p", None)]), ("x", None)], None, [], [("k", [])]],
            pa.map_(pa.string(), pa.map_(pa.string(), pa.int32())),
        ),
        "by_number": pa.array(
            [[[(10, "ten"), (9, "nine"), (-1, None)]], [None], None, [[]]],
            pa.list_(pa.map_(pa.int32(), pa.string())),
        ),
        "record": pa.array(
            [
                {"b": 1, "a": "x", "inner": {"z": [("t", True), ("f", False)]}},
                None,
                {"b": None, "a": None, "inner": None},
                {"b": -7, "a": "", "inner": {"z": None}},
            ],
            pa.struct(
                [
                    ("b", pa.int32()),
                    ("a", pa.string()),
                    ("inner", pa.struct([("z", pa.map_(pa.string(), pa.bool_()))])),
                ]
            ),
        ),
    }
)

#: Doubles that Java 17 and Java 19+ write alike: specials and the plain/scientific boundaries.
PORTABLE_DOUBLES = [
    *MISSING_AND_SPECIAL_DOUBLES,
    *NOTATION_BOUNDARIES,
    5e-324,
    2.2250738585072014e-308,
    1.7976931348623157e308,
    -123.0,
    0.1,
    1 / 3,
]

#: Doubles Java before 19 writes with more (or other) digits than the shortest round trip.
JAVA_19_DOUBLES = [1e23, -1e-323, 1.2134227133018374e17, 2.0017929737320038e18]
#: The same for Float.toString: the smallest normal float32.
JAVA_19_FLOATS = [1.1754944e-38]

NUMBERS = pa.table(
    {
        "f64": pa.array(PORTABLE_DOUBLES, pa.float64()),
        "f32": pa.array(
            [
                *MISSING_AND_SPECIAL_DOUBLES,
                *(1e-3, 1e7, 0.1),
                *(3.4028235e38, 1e-45, -2.5, 16777216.0, 1.5e-38, 7.0, 123456.79),
            ],
            pa.float32(),
        ),
        "i8": pa.array([-128, 127, 0, None] * 4, pa.int8()),
        "i16": pa.array([-32768, 32767, 0, None] * 4, pa.int16()),
        "i32": pa.array([-(2**31), 2**31 - 1, 0, None] * 4, pa.int32()),
        "i64": pa.array([-(2**63), 2**63 - 1, 0, None] * 4, pa.int64()),
        "flag": pa.array([True, False, None, True] * 4),
    }
)

DECIMALS = pa.table(
    {
        "wide": pa.array(
            [
                Decimal("99999999999999999999.999999999999999999"),
                Decimal("-99999999999999999999.999999999999999999"),
                Decimal("0E-18"),
                Decimal("0.000000000000000001"),
                Decimal("-1.500000000000000000"),
                None,
            ],
            pa.decimal128(38, 18),
        ),
        "money": pa.array(
            [
                Decimal("12345678.90"),
                Decimal("-0.01"),
                Decimal("0.00"),
                None,
                Decimal("1.00"),
                None,
            ],
            pa.decimal128(10, 2),
        ),
    }
)

CONTROL_CHARACTERS = "".join(chr(code) for code in range(0x20))
AWKWARD_TEXT = pa.table(
    {
        "text": pa.array(
            [
                'quote " and backslash \\ and both \\"',
                CONTROL_CHARACTERS,
                *[f"<{chr(code)}>" for code in range(0x20)],
                "\x7f delete, \u2028 line separator, \u2029 paragraph separator",
                "non-BMP 😀 𝄞 \U0010ffff, BMP ü 中 \ufeff",
                "",
                None,
                "/ slash <script> &amp;",
            ]
        ),
        "raw": pa.array([bytes([i, 255 - i, 0]) for i in range(38)] + [None], pa.binary()),
    }
)

TIMES = pa.table(
    {
        "day": pa.array([*DATE_EDGES, None], pa.date32()),
        "utc": pa.array(
            [
                dt.datetime(1000, 1, 1, tzinfo=dt.timezone.utc),
                dt.datetime(1970, 1, 1, 0, 0, 0, 1, tzinfo=dt.timezone.utc),
                dt.datetime(2024, 10, 6, 3, 30, tzinfo=dt.timezone.utc),
                dt.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=dt.timezone.utc),
                None,
            ],
            pa.timestamp("us", tz="UTC"),
        ),
        "kolkata": pa.array(
            [0, 1_700_000_000_123_456, -1, None, 253_402_300_799_999_999],
            pa.timestamp("us", tz="Asia/Kolkata"),
        ),
        "wall": pa.array(
            [
                dt.datetime(2024, 3, 31, 2, 30),  # a daylight-saving gap in many zones
                dt.datetime(1000, 1, 1, 0, 0, 0, 1),
                dt.datetime(2023, 10, 15, 0, 0),  # Sao Paulo's old spring-forward midnight
                None,
                dt.datetime(9999, 12, 31, 23, 59, 59, 999999),
            ],
            pa.timestamp("us"),
        ),
        "millis": pa.array([0, 1, -1, None, 1_000], pa.timestamp("ms", tz="UTC")),
    }
)


@pytest.fixture(params=["auto", "jvm"], ids=["arrow_workers", "to_json"])
def line_engine(request: Any, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each test using it runs with the lines written in Python workers and on the JVM."""
    monkeypatch.setenv(spark_hashing.SPARK_ENGINE_ENV, request.param)
    return request.param


@pytest.mark.parametrize(
    "table",
    [NESTED, NUMBERS, DECIMALS, AWKWARD_TEXT, TIMES],
    ids=["nested", "numbers", "decimals", "awkward_text", "times"],
)
def test_spark_gives_the_arrow_and_the_reference_digest(
    spark: Any, table: pa.Table, line_engine: str
) -> None:
    assert_same_digest_everywhere(spark, table)


def test_the_arrow_workers_give_the_arrow_digest_on_any_java(
    spark: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Doubles Java before 19 writes otherwise: the workers write them as the Arrow path does.
    monkeypatch.setenv(spark_hashing.SPARK_ENGINE_ENV, "arrow")
    table = pa.table({"x": pa.array(PORTABLE_DOUBLES + JAVA_19_DOUBLES, pa.float64())})
    assert digest_of(fingerprint_spark(spark_frame(spark, table))) == arrow_digest(table)


def test_auto_hashes_on_the_jvm_when_the_workers_cannot_import_the_hasher(
    spark: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    import importlib
    import sys

    from ubunye_rows.hashing import spark_arrow

    # A module only the driver can import stands in for a worker without ubunye_core.
    (tmp_path / "driver_only_hasher.py").write_text(
        "def partition_lane_pieces(*args):\n    raise AssertionError('never runs')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    driver_only = importlib.import_module("driver_only_hasher")
    monkeypatch.setattr(spark_arrow, "partition_lane_pieces", driver_only.partition_lane_pieces)
    df = spark_frame(spark, NUMBERS)
    monkeypatch.setenv(spark_hashing.SPARK_ENGINE_ENV, "arrow")
    with pytest.raises(Exception, match="No module named 'driver_only_hasher'"):
        fingerprint_spark(df)
    monkeypatch.setenv(spark_hashing.SPARK_ENGINE_ENV, "auto")
    assert digest_of(fingerprint_spark(df)) == arrow_digest(NUMBERS)
    sys.modules.pop("driver_only_hasher", None)


def test_an_unknown_spark_engine_setting_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(spark_hashing.SPARK_ENGINE_ENV, "gpu")
    with pytest.raises(ValueError, match="UBUNYE_SPARK_ENGINE must be auto, arrow or jvm"):
        spark_hashing.spark_line_engine()


def test_java_float_boundaries_agree_with_arrow_on_java_19_or_later(spark: Any) -> None:
    java = java_feature_version(spark)
    if java < 19:
        pytest.skip(
            f"the executors run Java {java}: before 19 Double.toString (which Spark's to_json "
            "uses) is not always the shortest round trip, so Spark and Arrow lines differ here"
        )
    doubles = PORTABLE_DOUBLES + JAVA_19_DOUBLES
    floats = JAVA_19_FLOATS + [None] * (len(doubles) - len(JAVA_19_FLOATS))
    table = pa.table({"x": pa.array(doubles, pa.float64()), "y": pa.array(floats, pa.float32())})
    assert_same_digest_everywhere(spark, table)


def test_years_before_1000_agree_with_our_arrow_digest_and_the_reference_spark(spark: Any) -> None:
    # The reference's Python path writes such years unpadded; Spark and ours write four digits.
    from ubunye.adapters.spark.content_hash import fingerprint_spark as reference_spark

    from ubunye_rows import fingerprint

    table = pa.table(
        {
            "day": pa.array([dt.date(1, 1, 1), dt.date(999, 12, 31)], pa.date32()),
            "at": pa.array(
                [dt.datetime(1, 1, 1, tzinfo=dt.timezone.utc), None], pa.timestamp("us", "UTC")
            ),
            "wall": pa.array([dt.datetime(1, 1, 1), dt.datetime(10, 5, 6, 7, 8, 9)]),
        }
    )
    df = spark_frame(spark, table)
    ours = fingerprint_spark(df)
    assert digest_of(ours) == digest_of(reference_spark(df))
    assert digest_of(ours) == digest_of(fingerprint(table))


def test_public_fingerprint_hashes_a_spark_frame_with_the_spark_aggregation(spark: Any) -> None:
    from ubunye_rows import fingerprint

    df = spark_frame(spark, NESTED)
    assert digest_of(fingerprint(df)) == digest_of(fingerprint_spark(df))


# ---------------------------------------------------------------- ADR 006 promises, on Spark


def test_the_spark_sums_are_the_lanes_of_every_canonical_line(spark: Any) -> None:
    df = spark_frame(spark, AWKWARD_TEXT)
    lines = [
        row[0] for row in spark_hashing.spark_canonical_lines(df).collect()
    ]  # test-only collect
    expected_a = sum(line_lanes(line)[0] for line in lines) & LANE_MASK
    expected_b = sum(line_lanes(line)[1] for line in lines) & LANE_MASK
    assert spark_hashing.spark_row_count_and_lane_sums(df) == (len(lines), (expected_a, expected_b))


@pytest.mark.parametrize("ansi", ["true", "false"])
def test_ansi_mode_does_not_change_the_digest(spark: Any, ansi: str) -> None:
    df = spark_frame(spark, NUMBERS)
    with session_conf(spark, "spark.sql.ansi.enabled", ansi):
        assert digest_of(fingerprint_spark(df)) == arrow_digest(NUMBERS)


@pytest.mark.parametrize("zone", ["UTC", "Asia/Kathmandu", "Pacific/Chatham"])
def test_the_session_time_zone_does_not_change_the_digest(
    spark: Any, zone: str, line_engine: str
) -> None:
    expected = arrow_digest(TIMES)
    with session_conf(spark, "spark.sql.session.timeZone", zone):
        assert digest_of(fingerprint_spark(spark_frame(spark, TIMES))) == expected
    assert spark.conf.get("spark.sql.session.timeZone") == SPARK_SESSION_TIME_ZONE


@pytest.mark.parametrize(
    ("key", "value", "table"),
    [
        ("spark.sql.jsonGenerator.ignoreNullFields", "false", NESTED),
        ("spark.sql.legacy.timeParserPolicy", "LEGACY", TIMES),
    ],
    ids=["json_nulls_kept", "legacy_time_parser"],
)
def test_session_settings_do_not_change_the_line(
    spark: Any, key: str, value: str, table: pa.Table
) -> None:
    expected = arrow_digest(table)
    with session_conf(spark, key, value):
        assert digest_of(fingerprint_spark(spark_frame(spark, table))) == expected


def test_row_order_does_not_change_the_digest(spark: Any) -> None:
    df = spark_frame(spark, NUMBERS)
    shuffled = df.orderBy("i64", "f32", ascending=False).repartition(3)
    assert digest_of(fingerprint_spark(shuffled)) == digest_of(fingerprint_spark(df))


def test_column_order_does_not_change_the_digest(spark: Any) -> None:
    df = spark_frame(spark, DECIMALS)
    assert digest_of(fingerprint_spark(df.select("money", "wide"))) == digest_of(
        fingerprint_spark(df)
    )


def test_map_entry_order_does_not_change_the_digest(spark: Any) -> None:
    kind = pa.map_(pa.string(), pa.map_(pa.string(), pa.int64()))
    one = pa.table({"m": pa.array([[("b", [("y", 1), ("x", None)]), ("a", None)]], kind)})
    other = pa.table({"m": pa.array([[("a", None), ("b", [("x", None), ("y", 1)])]], kind)})
    assert digest_of(fingerprint_spark(spark_frame(spark, one))) == digest_of(
        fingerprint_spark(spark_frame(spark, other))
    )


def test_one_changed_cell_changes_the_digest(spark: Any) -> None:
    changed = NESTED.set_column(
        NESTED.schema.get_field_index("tags"),
        "tags",
        pa.array(
            [[("zeta", 1), ("alpha", None), ("Beta", 4)], [], None, [("b", 2), ("a", 1)]],
            pa.map_(pa.string(), pa.int64()),
        ),
    )
    before = fingerprint_spark(spark_frame(spark, NESTED))
    after = fingerprint_spark(spark_frame(spark, changed))
    assert before.schema_hash == after.schema_hash
    assert before.data_hash != after.data_hash


def test_every_row_counts_and_an_empty_frame_has_zero_sums(spark: Any, line_engine: str) -> None:
    empty = NUMBERS.slice(0, 0)
    fp = fingerprint_spark(spark_frame(spark, empty))
    assert fp.row_count == 0
    assert digest_of(fp) == arrow_digest(empty)
    assert fingerprint_spark(spark_frame(spark, NUMBERS)).row_count == NUMBERS.num_rows


def test_a_frame_without_columns_counts_rows_with_zero_sums(spark: Any) -> None:
    no_columns = pa.table({"x": [1, 2, 3]}).drop_columns(["x"])
    fp = fingerprint_spark(spark.range(3).select())
    assert fp.row_count == 3
    assert digest_of(fp) == arrow_digest(no_columns)


def test_awkward_column_names_are_hashed_as_written(spark: Any, line_engine: str) -> None:
    names = ["a.b", "c`d", "e f", "`g`", "A", "a"]
    table = pa.table({name: pa.array([index, None]) for index, name in enumerate(names)})
    with session_conf(spark, "spark.sql.caseSensitive", "false"):
        df = spark_frame(spark, table)
        assert digest_of(fingerprint_spark(df)) == arrow_digest(table)


def test_spark_types_get_the_adr_names(spark: Any) -> None:
    df = spark.sql(
        "SELECT CAST(1 AS TINYINT) a, CAST(1 AS SMALLINT) b, 1 c, 1L d, CAST(1 AS FLOAT) e,"
        " 1D f, true g, 'x' h, CAST('x' AS BINARY) i, DATE'2024-01-01' j,"
        " TIMESTAMP'2024-01-01 00:00:00' k, TIMESTAMP_NTZ'2024-01-01 00:00:00' l,"
        " CAST(1 AS DECIMAL(38,18)) m, array(1) n, map('k', 1D) o,"
        " named_struct('z', 1, 'y', array(map(1, 'v'))) p, NULL q"
    )
    assert spark_schema_pairs(df) == [
        ("a", "int8"),
        ("b", "int16"),
        ("c", "int32"),
        ("d", "int64"),
        ("e", "float32"),
        ("f", "float64"),
        ("g", "bool"),
        ("h", "string"),
        ("i", "binary"),
        ("j", "date"),
        ("k", "timestamp"),
        ("l", "timestamp_ntz"),
        ("m", "decimal(38,18)"),
        ("n", "list<int32>"),
        ("o", "map<string,float64>"),
        ("p", "struct<z:int32,y:list<map<int32,string>>>"),
        ("q", "null"),
    ]
    from ubunye.adapters.spark.content_hash import fingerprint_spark as reference_spark

    assert digest_of(fingerprint_spark(df)) == digest_of(reference_spark(df))


def test_a_spark_type_outside_the_adr_table_is_refused_and_reported_honestly(spark: Any) -> None:
    from ubunye_rows import fingerprint
    from ubunye_rows.hashing.types import UnsupportedTypeError

    df = spark.sql("SELECT 1 AS n, INTERVAL '1' DAY AS gap")
    with pytest.raises(UnsupportedTypeError, match="interval day"):
        spark_schema_pairs(df)
    fp = fingerprint(df)
    assert (fp.data_hash, fp.row_count) == (None, None)
    assert fp.error is not None and fp.error.startswith("UnsupportedTypeError: ")


def test_duplicate_column_names_are_refused_and_reported_honestly(spark: Any) -> None:
    from ubunye_rows import fingerprint

    df = spark.range(2).select("id", "id")
    with pytest.raises(ValueError, match=r"duplicated: \['id'\]"):
        fingerprint_spark(df)
    fp = fingerprint(df)
    assert (fp.data_hash, fp.row_count) == (None, None)
    assert fp.error is not None and fp.error.startswith("ValueError: ")


def test_rows_that_cannot_be_read_leave_no_data_hash(spark: Any) -> None:
    from pyspark.sql import functions as F

    from ubunye_rows import fingerprint

    df = spark.range(3).select(F.raise_error(F.lit("this row cannot be read")).alias("x"))
    fp = fingerprint(df)
    assert (fp.data_hash, fp.row_count) == (None, None)
    assert fp.error is not None and "this row cannot be read" in fp.error


# ---------------------------------------------------------------- the ends of the timestamp range

#: A zone west of UTC (Sao Paulo) and one east of it (Tokyo), with daylight saving in the past
#: and a local mean time before 1900, so a shifted or lost offset shows at both ends.
ZONES_WEST_AND_EAST = ["America/Sao_Paulo", "Asia/Tokyo"]
YEAR_1 = dt.datetime(1, 1, 1)
YEAR_9999 = dt.datetime(9999, 12, 31, 23, 59, 59, 999999)


def range_ends() -> pa.Table:
    """Year 1 and year 9999 without a zone, in UTC, and in zones whose UTC instant lies in
    the year 0 or 10000 (which Spark holds and writes)."""

    def aware(zone: str) -> pa.Array:
        micros = [int((v - dt.datetime(1970, 1, 1)).total_seconds()) * 10**6 for v in (YEAR_1,)]
        micros += [253_402_300_799_999_999]
        # The wall times year 1 and year 9999 at +14 and -11 hours, as UTC instants.
        shift = {"Pacific/Kiritimati": -14, "Pacific/Pago_Pago": 11}[zone] * 3_600_000_000
        return pa.array([m + shift for m in micros] + [None], pa.timestamp("us", tz=zone))

    return pa.table(
        {
            "wall": pa.array([YEAR_1, YEAR_9999, None], pa.timestamp("us")),
            "utc": pa.array(
                [v.replace(tzinfo=dt.timezone.utc) for v in (YEAR_1, YEAR_9999)] + [None],
                pa.timestamp("us", tz="UTC"),
            ),
            "east": aware("Pacific/Kiritimati"),
            "west": aware("Pacific/Pago_Pago"),
        }
    )


@pytest.mark.parametrize("zone", ZONES_WEST_AND_EAST)
def test_the_ends_of_the_timestamp_range_give_the_pandas_and_arrow_digest_in_any_session_zone(
    spark: Any, zone: str, line_engine: str
) -> None:
    from ubunye.adapters.spark.content_hash import fingerprint_spark as reference_spark

    from ubunye_rows import fingerprint

    table = range_ends()
    expected = arrow_digest(table)
    assert expected[1] is not None
    # pandas has no wall-time type (a naive datetime is read as UTC), so it gets the zoned ones.
    zoned = table.drop_columns(["wall"])
    assert digest_of(fingerprint(zoned.to_pandas())) == arrow_digest(zoned), "our pandas digest"
    with session_conf(spark, "spark.sql.session.timeZone", zone):
        df = spark_frame(spark, table)
        assert digest_of(fingerprint_spark(df)) == expected
        assert digest_of(reference_spark(df)) == expected, "reference Spark digest"


@pytest.mark.parametrize("zone", ZONES_WEST_AND_EAST)
def test_naive_range_ends_spark_reads_as_session_time_hash_as_their_instants(
    spark: Any, zone: str, line_engine: str
) -> None:
    # Spark infers a naive Arrow timestamp as wall time in the session zone: 9999-12-31 in Sao
    # Paulo is an instant in the year 10000, year 1 in Tokyo one in the year 0.
    from zoneinfo import ZoneInfo

    naive = pa.table({"at": pa.array([YEAR_1, YEAR_9999, None], pa.timestamp("us"))})
    epoch = dt.datetime(1970, 1, 1)
    instants = [
        (v - epoch) // dt.timedelta(microseconds=1)
        - v.replace(tzinfo=ZoneInfo(zone)).utcoffset() // dt.timedelta(microseconds=1)
        for v in (YEAR_1, YEAR_9999)
    ]
    expected = arrow_digest(
        pa.table({"at": pa.array([*instants, None], pa.timestamp("us", "UTC"))})
    )
    with session_conf(spark, "spark.sql.session.timeZone", zone):
        df = spark.createDataFrame(naive)
        assert df.schema["at"].dataType.typeName() == "timestamp"
        assert digest_of(fingerprint_spark(df)) == expected


def test_a_value_the_workers_cannot_write_is_hashed_by_spark_itself(
    spark: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A date past 9999 exists in Spark, but the Arrow path writes dates of the years 1 to 9999.
    from ubunye.adapters.spark.content_hash import fingerprint_spark as reference_spark

    from ubunye_rows import fingerprint

    df = spark.sql("SELECT id, date_add(DATE'9999-12-31', CAST(id AS INT)) AS day FROM range(3)")
    monkeypatch.setenv(spark_hashing.SPARK_ENGINE_ENV, "arrow")
    with pytest.raises(Exception, match="WorkerCannotWriteLine"):
        fingerprint_spark(df)
    monkeypatch.setenv(spark_hashing.SPARK_ENGINE_ENV, "auto")
    fp = fingerprint(df)
    assert fp.error is None and fp.row_count == 3
    assert digest_of(fp) == digest_of(reference_spark(df))
