"""The rows-v1 conformance suite (the golden vectors and the reference's digests) run inside
DuckDB and inside PostgreSQL: each vector loaded as a table by the loader the self-check uses
(``ubunye_rows.sql.golden_tables``) and hashed in SQL. A vector the database cannot hold as it is
(a type it does not have: PostgreSQL has no unsigned integers, structs or maps) is skipped, and
which ones are is pinned (``NOT_HELD``, the list the self-check leaves out)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

import pytest
from sql_engines import Engine, duckdb_engine, postgres_engine

from ubunye_rows.hashing.digest import Fingerprint
from ubunye_rows.hashing.types import schema_pairs
from ubunye_rows.sql.golden_tables import NOT_HELD
from ubunye_rows.testing.backend_conformance import RowsV1Conformance, vectors_for

# Runs no Dagster: CI runs it on the newest Dagster only (tests/unit/test_code_shape.py checks).
pytestmark = pytest.mark.dagster_free

pytest.importorskip("duckdb")


@pytest.fixture(scope="module")
def duckdb_database(tmp_path_factory) -> Iterator[Engine]:
    yield from duckdb_engine(tmp_path_factory.mktemp("duckdb"))


@pytest.fixture(scope="module")
def postgres_database() -> Iterator[Engine]:
    pytest.importorskip("psycopg2")
    pytest.importorskip("adbc_driver_postgresql")
    yield from postgres_engine()


def held_as_it_is(database: Engine, table: Any) -> str | None:
    """The name of ``table`` loaded into ``database`` when it keeps every type name; None when
    the database refuses a type or holds one as another."""
    try:
        name = database.load(table)
    except Exception:  # a type the database has no column for
        return None
    same = sorted(schema_pairs(database.exported(name).schema)) == sorted(
        schema_pairs(table.schema)
    )
    return name if same else None


class InTheDatabase(RowsV1Conformance):
    """Each golden vector as a table of the database, hashed in SQL."""

    engine = "arrow"
    fixture: ClassVar[str] = ""

    @pytest.fixture(autouse=True)
    def _database(self, request) -> None:
        self.database: Engine = request.getfixturevalue(self.fixture)

    def to_frame(self, table: Any) -> Any:
        name = held_as_it_is(self.database, table)
        if name is None:
            pytest.skip(f"{self.database.name} cannot hold this table's types as they are")
        return name

    def fingerprint(self, frame: Any) -> Fingerprint:
        return self.database.fingerprint(frame)

    def test_the_vectors_not_held_are_those_pinned(self) -> None:
        missed = {
            golden.name
            for golden in vectors_for("arrow")
            if held_as_it_is(self.database, golden.table()) is None
        }
        assert missed == set(NOT_HELD[self.database.name])


class TestDuckDB(InTheDatabase):
    fixture = "duckdb_database"


class TestPostgreSQL(InTheDatabase):
    fixture = "postgres_database"


class Streamed(InTheDatabase):
    """Each golden vector as a table of the database, streamed to the kernel as Arrow."""

    def fingerprint(self, frame: Any) -> Fingerprint:
        from ubunye_rows.sql.stream import fingerprint_streamed

        database = self.database
        if database.adbc is None:
            return fingerprint_streamed(database.connection, frame)
        return fingerprint_streamed(database.adbc, frame, columns=database.columns(frame))


class TestDuckDBStreamed(Streamed):
    fixture = "duckdb_database"


class TestPostgreSQLStreamed(Streamed):
    fixture = "postgres_database"
