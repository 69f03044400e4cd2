"""An in-database hash proves itself first: before the first hash on a database (its key: server
kind, version, the settings that change text, the dialect) the golden vectors it can hold are
hashed in it and compared with their known digests, once per process; a database whose SQL
disagrees has its relations streamed to the kernel, with one warning naming the vector. Both
engines: a DuckDB file and a temporary PostgreSQL cluster."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pyarrow as pa
import pytest
from sql_engines import Engine, engine_for

from ubunye_rows import fingerprint_arrow
from ubunye_rows.sql import fingerprint_duckdb, fingerprint_postgres
from ubunye_rows.sql.dialects import Dialect, DuckDBDialect, PostgresDialect
from ubunye_rows.sql.duckdb import installed_dialect
from ubunye_rows.sql.self_check import database_key, forget_verdicts

# Runs no Dagster: CI runs it on the newest Dagster only (tests/test_code_shape.py checks).
pytestmark = pytest.mark.dagster_free

pytest.importorskip("duckdb")

LOGGER = "ubunye_rows.sql.self_check"


class WholeFloatsWithoutPoint:
    """A dialect wrong in one float case: a whole number in the plain range written without its
    ``.0`` (``3`` where Java writes ``3.0``)."""

    def plain_float_text(self, x: str, digits: str, power: str) -> str:
        return f"regexp_replace({super().plain_float_text(x, digits, power)}, '[.]0$', '')"  # type: ignore[misc]


class WrongDuckDB(WholeFloatsWithoutPoint, DuckDBDialect):
    pass


class WrongPostgres(WholeFloatsWithoutPoint, PostgresDialect):
    pass


@pytest.fixture(scope="module", params=["duckdb", "postgresql"])
def engine(request, tmp_path_factory) -> Iterator[Engine]:
    yield from engine_for(request.param, tmp_path_factory)


@pytest.fixture(autouse=True)
def _no_verdict_yet() -> None:
    forget_verdicts()


def hash_in(engine: Engine, relation: str, dialect: Dialect | None = None, **options):
    """The engine's hash of ``relation`` with ``dialect`` (PostgreSQL on psycopg2, as it
    stands: streaming types its rows by the catalog's columns)."""
    if engine.name == "duckdb":  # in its SQL (its default streams)
        options.setdefault("kernel_columns", ())
        return fingerprint_duckdb(engine.connection, relation, dialect=dialect, **options)
    return fingerprint_postgres(engine.connection, relation, dialect=dialect, **options)


def correct_dialect(engine: Engine) -> Dialect:
    return installed_dialect() if engine.name == "duckdb" else PostgresDialect()


def wrong_dialect(engine: Engine) -> Dialect:
    if engine.name == "duckdb":
        return WrongDuckDB(python_lambdas=installed_dialect().python_lambdas)
    return WrongPostgres()


def orders(engine: Engine) -> tuple[str, pa.Table]:
    table = pa.table({"k": [1, 2, 3], "amount": [3.0, 12.5, None], "who": ["a", None, "c"]})
    return engine.load(table), table


def self_check_records(caplog: pytest.LogCaptureFixture, level: int) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == LOGGER and r.levelno == level]


def run_in_session(engine: Engine, statement: str) -> list[tuple]:
    """``statement`` in the hashing session itself (a DuckDB cursor would be a session of its
    own)."""
    if engine.name == "duckdb":
        return engine.connection.execute(statement).fetchall()
    return engine.run(statement)


def test_a_database_whose_sql_disagrees_on_a_vector_is_streamed_with_the_right_digest(
    engine: Engine, caplog: pytest.LogCaptureFixture
) -> None:
    name, table = orders(engine)
    wrong = wrong_dialect(engine)
    # The wrong dialect, unchecked, gives a wrong digest: the check is what stands between.
    unchecked = hash_in(engine, name, wrong, self_check=False)
    assert unchecked.data_hash != fingerprint_arrow(table).data_hash
    with caplog.at_level(logging.INFO, logger=LOGGER):
        first = hash_in(engine, name, wrong)
        second = hash_in(engine, name, wrong)
    assert first.hashed_in == second.hashed_in == "stream"
    assert first == second == fingerprint_arrow(table)
    assert first.sketch == fingerprint_arrow(table).sketch
    [warning] = self_check_records(caplog, logging.WARNING)
    assert "doubles_java_edges" in warning.getMessage()
    key = database_key(engine.connection, wrong)
    assert " ".join(key) in warning.getMessage()


def test_a_correct_database_is_checked_once_per_process(
    engine: Engine, caplog: pytest.LogCaptureFixture
) -> None:
    name, table = orders(engine)
    with caplog.at_level(logging.INFO, logger=LOGGER):
        first = hash_in(engine, name)
        second = hash_in(engine, name)
    assert first.hashed_in == second.hashed_in == "database"
    assert first == second == fingerprint_arrow(table)
    [checked] = self_check_records(caplog, logging.INFO)
    assert "golden vectors" in checked.getMessage()
    assert not self_check_records(caplog, logging.WARNING)


def test_a_caller_who_checked_already_can_skip_the_check(
    engine: Engine, caplog: pytest.LogCaptureFixture
) -> None:
    name, table = orders(engine)
    with caplog.at_level(logging.INFO, logger=LOGGER):
        found = hash_in(engine, name, self_check=False)
    assert found.hashed_in == "database"
    assert found == fingerprint_arrow(table)
    assert not [r for r in caplog.records if r.name == LOGGER]


def test_the_key_changes_with_the_settings_that_change_text(
    engine: Engine, caplog: pytest.LogCaptureFixture
) -> None:
    name, _ = orders(engine)
    connection = engine.connection
    dialect = correct_dialect(engine)
    changes = ["SET TimeZone = 'Pacific/Auckland'"]
    if engine.name == "postgresql":
        changes.append("SET extra_float_digits = 0")
    with caplog.at_level(logging.INFO, logger=LOGGER):
        hash_in(engine, name)
        keys = [database_key(connection, dialect)]
        for change in changes:
            run_in_session(engine, change)
            keys.append(database_key(connection, dialect))
            hash_in(engine, name)
    assert len(set(keys)) == len(keys)
    assert "TimeZone=Pacific/Auckland" in keys[1]
    # Each new key is checked on its own.
    assert len(self_check_records(caplog, logging.INFO)) == len(keys)
    assert database_key(connection, wrong_dialect(engine)) != keys[-1]


def test_the_check_leaves_no_table_and_the_callers_transaction_as_it_was(engine: Engine) -> None:
    name, _ = orders(engine)
    if engine.name == "duckdb":
        listed = "SELECT table_name FROM duckdb_tables() ORDER BY 1"
        before = run_in_session(engine, listed)
        assert hash_in(engine, name).hashed_in == "database"
        assert run_in_session(engine, listed) == before
        return
    # PostgreSQL, inside the caller's open transaction holding an uncommitted row.
    cursor = engine.connection.cursor()
    cursor.execute(f"INSERT INTO {name} VALUES (4, 1.5, 'd')")
    found = fingerprint_postgres(engine.connection, name)
    assert (found.hashed_in, found.row_count) == ("database", 4)
    cursor.execute("SELECT count(*) FROM pg_class WHERE relname LIKE 'ubunye_rows_self_check_%'")
    assert cursor.fetchone() == (0,)
    cursor.execute(f"SELECT count(*) FROM {name}")
    assert cursor.fetchone() == (4,)
    engine.connection.rollback()
