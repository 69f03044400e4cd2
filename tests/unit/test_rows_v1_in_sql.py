"""rows-v1 computed inside DuckDB and PostgreSQL is the kernel's rows-v1, byte for byte: every
type each engine has, floats as Java writes them, text with every escape, any session time
zone, the reference's digest; a column the database cannot write is streamed to the kernel; bad
input is named. Each test runs on both engines (a temporary PostgreSQL cluster started by the
test). The golden vectors run in both too: tests/unit/test_conformance_sql.py."""

from __future__ import annotations

import math
import re
import struct
from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pytest
from sql_engines import Engine, engine_for

from ubunye_rows import UnsupportedTypeError, arrow_canonical_lines, fingerprint_arrow
from ubunye_rows.hashing.infinities import InfiniteValueError
from ubunye_rows.testing.edge_values import MISSING_AND_SPECIAL_DOUBLES, NOTATION_BOUNDARIES

# Runs no Dagster: CI runs it on the newest Dagster only (tests/unit/test_code_shape.py checks).
pytestmark = pytest.mark.dagster_free

pytest.importorskip("duckdb")


@pytest.fixture(scope="module", params=["duckdb", "postgresql"])
def engine(request, tmp_path_factory) -> Iterator[Engine]:
    yield from engine_for(request.param, tmp_path_factory)


def assert_same_as_the_kernel(engine: Engine, relation: str, order_by: str = "k") -> None:
    """The database's lines are the spec's lines, and its fingerprint the kernel's."""
    exported = engine.exported(relation, order_by)
    written = exported.select(engine.in_sql(relation))
    assert engine.lines(relation, order_by) == arrow_canonical_lines(written)
    in_sql, by_kernel = engine.fingerprint(relation), fingerprint_arrow(exported)
    assert (in_sql.schema_hash, in_sql.data_hash, in_sql.row_count) == (
        by_kernel.schema_hash,
        by_kernel.data_hash,
        by_kernel.row_count,
    )
    assert in_sql.sketch == by_kernel.sketch


EVERY_TYPE = {
    "duckdb": """
        CREATE TABLE {name} AS SELECT * FROM (VALUES
        (1, 127::TINYINT, 1::UBIGINT, 0.1::DOUBLE, 1.5e-7::FLOAT,
         'a"b\\c' || chr(1) || chr(10) || 'é', TRUE, DATE '2020-02-29',
         TIMESTAMPTZ '2020-01-01 00:00:00+02', TIMESTAMP '1969-12-31 23:59:59.999999',
         12.50::DECIMAL(10,2), 0.0000000001::DECIMAL(20,10), 170141183460469231731687::HUGEINT,
         '\\xAA\\x00'::BLOB, [1, NULL, 3], [[0.5], NULL], {'x': 1.5, 'y': NULL},
         MAP {'b': 1, 'a': NULL}, MAP {2: 'two', 1: 'one'}, 'x'::ENUM('x', 'y'),
         '00000000-0000-0000-0000-000000000001'::UUID),
        (2, NULL, NULL, 'nan'::DOUBLE, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0::DECIMAL(20,10),
         NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
        (3, (-128)::TINYINT, 18446744073709551615::UBIGINT, 5e-324::DOUBLE, 1.4e-45::FLOAT, '',
         FALSE, DATE '0001-01-01', TIMESTAMPTZ '9999-12-31 23:59:59.999999+00',
         TIMESTAMP '2000-01-01', -0.01::DECIMAL(10,2), -1.5::DECIMAL(20,10), -1::HUGEINT,
         ''::BLOB, [], [], {'x': NULL, 'y': 'q'}, MAP {}, MAP {}, 'y'::ENUM('x', 'y'), NULL)
        ) AS v(k, tiny, ubig, d, f, s, b, day, tz, ntz, dec, small_dec, huge, bin, ints,
               nested, st, m, int_keys, en, id)""",
    "postgresql": """
        CREATE TYPE mood AS ENUM ('sad', 'happy');
        CREATE DOMAIN money_amount AS numeric(12,2);
        CREATE TABLE {name} (k int, sm smallint, big bigint, d float8, f real, s text,
            vc varchar(5), b bool, day date, tz timestamptz, ntz timestamp(3), dec numeric(10,2),
            small_dec numeric(20,10), bin bytea, ints int[], texts text[], floats float8[],
            id uuid, doc jsonb, mood mood, price money_amount);
        INSERT INTO {name} VALUES
        (1, 1, 9223372036854775807, 0.1, 1.5e-7, E'a"b\\\\c\\x01\\n\\u00e9', 'abc', true,
         '2020-02-29', '2020-01-01 00:00:00+02', '1969-12-31 23:59:59.999', 12.50, 0.0000000001,
         '\\xAA00', '{1,NULL,3}', '{"a",NULL,"q\\"x"}', '{0.5,NaN,-0}',
         '00000000-0000-0000-0000-000000000001', '{"b": 1, "a": [true]}', 'happy', 12.5),
        (2, NULL, NULL, 'NaN', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, NULL, NULL,
         NULL, NULL, NULL, NULL, NULL, NULL),
        (3, -32768, -1, 5e-324, 1e-45, '', '', false, '0001-01-01',
         '9999-12-31 23:59:59.999999+00', '2000-01-01', -0.01, -1.5, '', '{}', '{}', '{}',
         NULL, 'null', 'sad', -0.01)""",
}


def test_every_type_of_the_engine_gives_the_kernels_digest(engine: Engine) -> None:
    name = engine.new_table()
    for statement in EVERY_TYPE[engine.name].replace("{name}", name).split(";"):
        engine.run(statement)
    assert_same_as_the_kernel(engine, name)


def _doubles_by_bits(count: int, seed: int) -> list[float]:
    """Doubles from random bit patterns (every exponent equally likely), finite ones only."""
    words = np.random.default_rng(seed).integers(0, 2**64, size=count, dtype=np.uint64)
    values = words.view(np.float64)
    return [float(v) for v in values if math.isfinite(v)]


def _one_digit_subnormals(bits: int) -> list[float]:
    """Every subnormal whose shortest text has one digit: where Java's two-digit rule moves the
    digits (4.9E-324), all of them."""
    if bits == 64:
        return sorted({float(f"{d}e{e}") for d in range(1, 10) for e in range(-324, -307)} - {0.0})
    found = set()
    for d in range(1, 10):
        for e in range(-45, -37):
            single = struct.unpack("f", struct.pack("f", float(f"{d}e{e}")))[0]
            if single != 0.0 and abs(single) < 1.17549435e-38:
                found.add(single)
    return sorted(found)


def _singles_by_bits(count: int, seed: int) -> list[float]:
    words = np.random.default_rng(seed).integers(0, 2**32, size=count, dtype=np.uint64)
    values = words.astype(np.uint32).view(np.float32)
    return [float(v) for v in values if math.isfinite(v)]


def test_floats_are_written_as_java_writes_them(engine: Engine) -> None:
    edges = [v for v in (*MISSING_AND_SPECIAL_DOUBLES, *NOTATION_BOUNDARIES) if v is not None]
    doubles = [*edges, *_one_digit_subnormals(64), *_doubles_by_bits(4000, 6)]
    doubles += [1e15, 1e16, 1e22, 123456789.0, 1.5e-7, 2.5e-310, 0.1, 100.0, 5e-324]
    doubles += [-v for v in doubles]
    singles = [*_one_digit_subnormals(32), *_singles_by_bits(4000, 7), 1.4e-45, 3.4028235e38]
    singles += [-v for v in singles]
    rows = max(len(doubles), len(singles))
    table = pa.table(
        {
            "k": pa.array(range(rows), pa.int32()),
            "d": pa.array(doubles + [None] * (rows - len(doubles)), pa.float64()),
            "f": pa.array(singles + [None] * (rows - len(singles)), pa.float32()),
        }
    )
    assert_same_as_the_kernel(engine, engine.load(table))


def test_text_is_escaped_exactly_as_jackson_escapes_it(engine: Engine) -> None:
    lowest = 0 if engine.name == "duckdb" else 1  # PostgreSQL text cannot hold NUL
    texts = [chr(code) for code in range(lowest, 0x80)]
    texts += ['"quoted"', "back\\slash", "\\u001a", "tab\there", "é ü 漢字 🙂", "\u2028", ""]
    texts += ["".join(chr(c) for c in range(lowest, 0x20)) + "end"]
    table = pa.table({"k": pa.array(range(len(texts)), pa.int32()), "s": texts})
    assert_same_as_the_kernel(engine, engine.load(table))


def test_times_are_written_in_utc_whatever_the_session_time_zone(engine: Engine) -> None:
    # From the first day after year 1 (a zone may not carry the first day out of year 1: the
    # spec's lines go through Python's datetime) to the last microsecond of year 9999.
    stamps = [0, -1, 1_577_836_800_123_456, -62_135_510_400_000_000, 253_402_300_799_999_999]
    table = pa.table(
        {
            "k": pa.array(range(len(stamps)), pa.int32()),
            "tz": pa.array(stamps, pa.timestamp("us", tz="Europe/Berlin")),
            "ntz": pa.array(stamps, pa.timestamp("us")),
            "day": pa.array([s // 86_400_000_000 for s in stamps], pa.date32()),
        }
    )
    name = engine.load(table)
    assert_same_as_the_kernel(engine, name)
    in_zone = engine.fingerprint(name).data_hash
    engine.run("SET TimeZone = 'UTC'")
    try:
        assert engine.fingerprint(name).data_hash == in_zone == fingerprint_arrow(table).data_hash
    finally:
        engine.run("SET TimeZone = 'Pacific/Chatham'")


def test_decimals_are_written_as_bigdecimal_writes_them(engine: Engine) -> None:
    import decimal

    values = ["0", "1", "-1", "0.5", "-0.0000000001", "123456.1234567891", "0.0000001", "1E-12"]
    columns = {"k": pa.array(range(len(values)), pa.int32())}
    for precision, scale in [(10, 0), (12, 2), (20, 10), (38, 18)]:
        quantum = decimal.Decimal(1).scaleb(-scale)
        scaled = [decimal.Decimal(v).quantize(quantum, rounding=decimal.ROUND_DOWN) for v in values]
        columns[f"d{scale}"] = pa.array(scaled, pa.decimal128(precision, scale))
    assert_same_as_the_kernel(engine, engine.load(pa.table(columns)))


def test_a_decimal_with_no_integer_digits_is_written_with_its_zero(engine: Engine) -> None:
    from decimal import Decimal

    table = pa.table(
        {
            "k": pa.array([0, 1, 2], pa.int32()),
            "cents": pa.array([Decimal("0.06"), Decimal("-0.06"), None], pa.decimal128(2, 2)),
            "tenth": pa.array(
                [Decimal("-0.7"), Decimal("0.5"), Decimal("0.0")], pa.decimal128(1, 1)
            ),
            "zero": pa.array([Decimal("0.000")] * 3, pa.decimal128(3, 3)),
            "listed": pa.array([[Decimal("-0.7"), None], [], None], pa.list_(pa.decimal128(1, 1))),
        }
    )
    relation = engine.load(table)
    assert_same_as_the_kernel(engine, relation)
    first = engine.lines(relation, "k")[0]
    assert '"cents":0.06' in first and '"tenth":-0.7' in first and '"zero":0.000' in first
    assert '"listed":[-0.7,null]' in first


def test_a_duckdb_decimal_map_key_and_struct_field_keep_their_zero(engine: Engine) -> None:
    if engine.name != "duckdb":
        pytest.skip("PostgreSQL has no map or struct column")
    name = engine.new_table()
    engine.run(
        f"CREATE TABLE {name} AS SELECT 1 AS k, MAP {{0.25::DECIMAL(2,2): 1}} AS m, "
        "{'x': (-0.5)::DECIMAL(1,1)} AS st"
    )
    assert_same_as_the_kernel(engine, name)
    assert engine.lines(name, "k") == ['{"k":1,"m":{"0.25":1},"st":{"x":-0.5}}']


#: A column holding a value rows-v1 has no text for, per engine: its SQL type and value, and
#: the value the error names.
NO_TEXT = {
    "duckdb": [
        ("DATE", "'infinity'::DATE", "infinity"),
        ("TIMESTAMP", "'-infinity'::TIMESTAMP", "-infinity"),
        ("TIMESTAMPTZ", "'infinity'::TIMESTAMPTZ", "infinity"),
        ("TIMESTAMPTZ[]", "[now(), '-infinity'::TIMESTAMPTZ]", "-infinity"),
    ],
    "postgresql": [
        ("date", "'infinity'::date", "infinity"),
        ("timestamp", "'-infinity'::timestamp", "-infinity"),
        ("timestamptz", "'infinity'::timestamptz", "infinity"),
        ("date[]", "'{2020-01-01,-infinity}'::date[]", "-infinity"),
        ("numeric(10,2)", "'NaN'::numeric", "NaN"),
    ],
}


def _exported_as_its_driver_exports_it(engine: Engine, relation: str) -> pa.Table:
    """The relation as Arrow, read by the engine's own Arrow export (DuckDB's, ADBC's)."""
    if engine.name == "duckdb":
        return engine.connection.sql(f"SELECT * FROM {relation}").to_arrow_table()
    cursor = engine.adbc.cursor()
    try:
        cursor.execute(f"SELECT * FROM {relation}")
        return cursor.fetch_arrow_table()
    finally:
        cursor.close()


def test_a_value_without_text_is_an_error_naming_its_column_on_every_path(engine: Engine) -> None:
    for sql_type, value, said in NO_TEXT[engine.name]:
        name = engine.new_table()
        engine.run(f"CREATE TABLE {name} (k int, v {sql_type})")
        engine.run(f"INSERT INTO {name} VALUES (1, NULL), (2, {value})")
        expected = f"the column 'v' holds {said}: rows-v1 has no text for"
        for options in ({}, {"kernel_columns": "all"}):
            with pytest.raises(InfiniteValueError, match=re.escape(expected)):
                engine.fingerprint(name, **options)
        if sql_type.startswith("numeric"):
            continue  # no Arrow type holds a decimal NaN: ADBC exports its text, refused by type
        exported = fingerprint_arrow(_exported_as_its_driver_exports_it(engine, name))
        assert exported.data_hash is None and expected in exported.error, (sql_type, exported)


def test_a_column_the_database_cannot_write_is_streamed_to_the_kernel(engine: Engine) -> None:
    table = pa.table(
        {
            "k": pa.array([1, 2, 3], pa.int32()),
            "d": [0.1, None, 1e300],
            "s": ["a", None, 'q"'],
            "dec": pa.array([None, 1, -2], pa.decimal128(12, 3)),
        }
    )
    name = engine.load(table)
    whole = engine.fingerprint(name)
    for streamed in [("d",), ("s", "k"), ("k", "d", "s", "dec"), "all"]:
        assert engine.fingerprint(name, kernel_columns=streamed) == whole
    if engine.name == "duckdb":
        # Nanoseconds (floored to microseconds) and fixed-size arrays: always streamed.
        name = engine.new_table()
        engine.run(
            f"CREATE TABLE {name} AS SELECT 1 AS k, TIMESTAMP_NS '1969-12-31 23:59:59.999999999' "
            "AS ns, [1, 2, 3]::INTEGER[3] AS fixed, {'at': TIMESTAMP_NS '2001-01-01'} AS inner"
        )
        assert engine.fingerprint(name) == fingerprint_arrow(engine.exported(name))


def test_a_slice_is_hashed_by_its_predicate(engine: Engine) -> None:
    table = pa.table({"k": [1, 2, 3, 4], "day": ["a", "b", "a", "b"]})
    name = engine.load(table)
    sliced = engine.fingerprint(name, where="day = 'b'")
    assert sliced == fingerprint_arrow(table.filter(pa.compute.equal(table["day"], "b")))
    assert sliced.row_count == 2


def test_the_reference_agrees_on_a_table_hashed_in_the_database(engine: Engine) -> None:
    reference = pytest.importorskip("ubunye.lineage.content_hash")
    rng = np.random.default_rng(3)
    rows = 2000
    table = pa.table(
        {
            "k": pa.array(np.arange(rows), pa.int64()),
            "amount": pa.array(rng.normal(0, 1e6, rows)),
            "ratio": pa.array(np.where(rng.random(rows) < 0.1, np.nan, rng.random(rows))),
            "name": [f'customer "{i}"\n{chr(i % 32)}' if i % 7 else None for i in range(rows)],
            "vip": pa.array(rng.random(rows) < 0.3),
            "at": pa.array(rng.integers(-(10**15), 10**16, rows), pa.timestamp("us", tz="UTC")),
        }
    )
    if engine.name == "postgresql":
        table = table.set_column(
            3, "name", pa.array([v and v.replace("\0", "") for v in table["name"].to_pylist()])
        )
    expected = reference.fingerprint(table)
    got = engine.fingerprint(engine.load(table))
    assert (got.schema_hash, got.data_hash, got.row_count) == (
        expected.schema_hash,
        expected.data_hash,
        expected.row_count,
    )


def test_bad_input_is_named(engine: Engine) -> None:
    with pytest.raises(ValueError, match="empty name"):
        engine.fingerprint(" ")
    name = engine.load(pa.table({"k": [1]}))
    with pytest.raises(ValueError, match=r"\['nope'\]"):
        engine.fingerprint(name, kernel_columns=("nope",))
    with pytest.raises(ValueError, match="tuple of column names"):
        engine.fingerprint(name, kernel_columns="k")
    unsupported = engine.new_table()
    engine.run(f"CREATE TABLE {unsupported} AS SELECT INTERVAL '1 day' AS span")
    with pytest.raises(UnsupportedTypeError, match=r"(?i)interval"):
        engine.fingerprint(unsupported)
    missing = LookupError if engine.name == "postgresql" else Exception
    with pytest.raises(missing, match="no_such_table"):
        engine.fingerprint("no_such_table")


def test_a_hash_in_postgresql_leaves_the_callers_session_and_transaction_as_they_were(
    engine: Engine,
) -> None:
    if engine.name != "postgresql":
        pytest.skip("PostgreSQL only: session settings and savepoints")
    table = pa.table({"k": [1, 2], "x": [0.1, 2.5e-310]})
    name = engine.load(table)
    connection, cursor = engine.connection, engine.connection.cursor()
    cursor.execute("SET extra_float_digits = 0")  # what some clients set: 15 digits only
    cursor.execute(f"INSERT INTO {name} VALUES (3, 1.0)")  # the caller's open transaction
    # Inside it: the hash sees the caller's uncommitted row, and a failed hash (a missing
    # relation) rolls back only its own savepoint.
    got = fingerprint_postgres_of(engine, name)
    assert got.row_count == 3
    with pytest.raises(LookupError):
        fingerprint_postgres_of(engine, "no_such_table")
    cursor.execute("SELECT current_setting('extra_float_digits'), count(*) FROM " + name)
    assert cursor.fetchone() == ("0", 3)
    connection.rollback()
    assert engine.fingerprint(name) == fingerprint_arrow(table)


def fingerprint_postgres_of(engine: Engine, relation: str):
    """The hash on the engine's psycopg2 connection as it stands (no commit around it)."""
    from ubunye_rows.sql import fingerprint_postgres

    return fingerprint_postgres(engine.connection, relation)


def test_a_bare_numeric_is_refused_with_the_column_named(engine: Engine) -> None:
    if engine.name != "postgresql":
        pytest.skip("PostgreSQL only: DuckDB has no decimal without precision and scale")
    name = engine.new_table()
    engine.run(f"CREATE TABLE {name} (amount numeric)")
    with pytest.raises(UnsupportedTypeError, match=r"'amount'.*numeric\(p,s\)"):
        engine.fingerprint(name)
