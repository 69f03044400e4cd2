"""The stream path: any database's rows as Arrow batches to the kernel, digest exact."""

from __future__ import annotations

import duckdb
import pytest

from ubunye_rows import fingerprint
from ubunye_rows.hashing.types import UnsupportedTypeError
from ubunye_rows.sql import fingerprint_duckdb
from ubunye_rows.sql.stream import fingerprint_streamed

TABLE = """CREATE TABLE t AS SELECT i::BIGINT AS id, 'row ' || i AS name, i * 0.5 AS half,
  DATE '2020-01-01' + i::INTEGER AS day, i % 3 = 0 AS third,
  CASE WHEN i % 7 = 0 THEN NULL ELSE i::DECIMAL(12, 2) END AS price
  FROM range(200000) r(i)"""


def test_streamed_duckdb_digest_equals_in_database_and_kernel():
    con = duckdb.connect()
    con.execute(TABLE)
    streamed = fingerprint_streamed(con, "t")
    assert streamed == fingerprint_duckdb(con, "t", kernel_columns=())
    assert streamed.data_hash == fingerprint(con.sql("SELECT * FROM t").to_arrow_table()).data_hash


def test_streamed_query_of_no_rows_is_the_empty_digest():
    con = duckdb.connect()
    con.execute(TABLE)
    assert fingerprint_streamed(con, query="SELECT * FROM t WHERE id < 0").row_count == 0


def test_streamed_column_rows_v1_cannot_name_is_refused_by_name_and_type():
    con = duckdb.connect()
    with pytest.raises(UnsupportedTypeError, match=r"'span'.*month_day_nano_interval"):
        fingerprint_streamed(con, query="SELECT INTERVAL 3 DAY AS span")


def test_a_duckdb_in_this_process_is_streamed_by_default_its_digest_the_same():
    con = duckdb.connect()
    con.execute(TABLE)
    by_default = fingerprint_duckdb(con, "t")
    in_duckdb = fingerprint_duckdb(con, "t", kernel_columns=())
    assert (by_default.hashed_in, in_duckdb.hashed_in) == ("stream", "database")
    assert by_default == in_duckdb
    assert by_default.sketch == in_duckdb.sketch
