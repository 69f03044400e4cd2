"""The databases rows-v1 runs inside, for the tests: a DuckDB file and a temporary PostgreSQL
cluster, each able to load an Arrow table, hash a relation in SQL and export it back as Arrow."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from ubunye_rows.hashing.digest import Fingerprint
from ubunye_rows.sql import fingerprint_duckdb, fingerprint_postgres
from ubunye_rows.sql.dialects import Dialect, PostgresDialect, quote_identifier
from ubunye_rows.sql.duckdb import columns_of as duckdb_columns
from ubunye_rows.sql.duckdb import installed_dialect as duckdb_dialect
from ubunye_rows.sql.golden_tables import load_golden_table
from ubunye_rows.sql.postgres import columns_of as postgres_columns
from ubunye_rows.sql.query import line_text
from ubunye_rows.sql.texts import written_in_sql

_names = itertools.count()


@dataclass
class Engine:
    """One database: ``run`` SQL, ``load`` an Arrow table as a new table, ``fingerprint`` and
    ``lines`` of a relation computed in SQL, ``exported`` as the Arrow the kernel hashes."""

    name: str
    connection: Any
    #: An ADBC connection beside it (PostgreSQL: streams columns, exports tables).
    adbc: Any = None
    created: list[str] = field(default_factory=list)

    def run(self, sql: str) -> list[tuple]:
        """Run one statement and return its rows (none for a statement without rows)."""
        cursor = self.connection.cursor()
        try:
            cursor.execute(sql)
        except Exception:
            if self.name == "postgresql":
                self.connection.rollback()  # the session stays usable for the next test
            raise
        rows = cursor.fetchall() if cursor.description else []
        if self.name == "postgresql":
            self.connection.commit()
        return rows

    def new_table(self) -> str:
        """A table name not used before in this session."""
        return f"t{next(_names)}"

    def load(self, table: pa.Table) -> str:
        """``table`` as a new table of this database (committed), loaded by the loader the
        self-check uses; the table's name. The database's error for a type it cannot hold."""
        name = self.new_table()
        try:
            load_golden_table(self.connection, self.name, table, name, temporary=False)
        except Exception:
            if self.name == "postgresql":
                self.connection.rollback()
            raise
        if self.name == "postgresql":
            self.connection.commit()  # the ADBC session (streaming, exporting) sees it
        return name

    def fingerprint(self, relation: str, **options: Any) -> Fingerprint:
        """rows-v1 of ``relation`` computed inside the database."""
        if self.name == "duckdb":  # in DuckDB's SQL unless told otherwise (its default streams)
            options.setdefault("kernel_columns", ())
            return fingerprint_duckdb(self.connection, relation, **options)
        # Streaming columns to the kernel takes ADBC; every other hash runs on psycopg2.
        streams = bool(options.get("kernel_columns"))
        return fingerprint_postgres(self.adbc if streams else self.connection, relation, **options)

    def columns(self, relation: str) -> list[tuple[str, pa.DataType]]:
        """The relation's columns with the Arrow types the SQL writes them as."""
        if self.name == "duckdb":
            return duckdb_columns(self.connection, relation)[0]
        return postgres_columns(self.connection.cursor(), relation)

    def dialect(self) -> Dialect:
        return duckdb_dialect() if self.name == "duckdb" else PostgresDialect()

    def in_sql(self, relation: str) -> list[str]:
        """The relation's columns the database writes itself (the others go to the kernel)."""
        dialect = self.dialect()
        return [name for name, t in self.columns(relation) if written_in_sql(dialect, t)]

    def lines(self, relation: str, order_by: str) -> list[str]:
        """Each row's canonical line as the database writes it (of the columns it writes
        itself), rows in ``order_by`` order."""
        chosen = set(self.in_sql(relation))
        columns = [column for column in self.columns(relation) if column[0] in chosen]
        written = line_text(self.dialect(), columns)
        if self.name == "postgresql":
            self.run("SET extra_float_digits = 1")
        return [row[0] for row in self.run(f"SELECT {written} FROM {relation} ORDER BY {order_by}")]

    def exported(self, relation: str, order_by: str | None = None) -> pa.Table:
        """The relation as Arrow, each column of the type the SQL names it by."""
        if self.name == "duckdb":
            ordered = f" ORDER BY {order_by}" if order_by else ""
            return self.connection.sql(f"SELECT * FROM {relation}{ordered}").to_arrow_table()
        planned = self.columns(relation)
        dialect = self.dialect()
        listed = ", ".join(
            f"{dialect.streamed(quote_identifier(name), t)} AS {quote_identifier(name)}"
            for name, t in planned
        )
        cursor = self.adbc.cursor()
        cursor.execute(
            f"SELECT {listed} FROM {relation}" + (f" ORDER BY {order_by}" if order_by else "")
        )
        table = cursor.fetch_arrow_table()
        cursor.close()
        return pa.table({name: table.column(name).cast(t) for name, t in planned})


def duckdb_engine(folder: Path) -> Iterator[Engine]:
    """A DuckDB file in ``folder``, in a session whose time zone is not UTC."""
    import duckdb

    connection = duckdb.connect(str(folder / "rows.duckdb"))
    connection.execute("SET TimeZone = 'America/New_York'")
    try:
        yield Engine("duckdb", connection)
    finally:
        connection.close()


def postgres_engine() -> Iterator[Engine]:
    """A temporary PostgreSQL cluster on 127.0.0.1, a psycopg2 session whose time zone is not
    UTC, and an ADBC connection to stream columns."""
    import adbc_driver_postgresql.dbapi as adbc
    import psycopg2
    from postgres_cluster import postgres_cluster

    with postgres_cluster() as cluster:
        connection = psycopg2.connect(cluster.url)
        streaming = adbc.connect(cluster.url)
        connection.cursor().execute("SET TimeZone = 'Asia/Kolkata'")
        try:
            yield Engine("postgresql", connection, adbc=streaming)
        finally:
            streaming.close()
            connection.close()


def engine_for(kind: str, tmp_path_factory: Any) -> Iterator[Engine]:
    """The engine a module-scoped fixture parametrised by ``kind`` (``duckdb``, ``postgresql``)
    yields: a DuckDB file in a new folder, or a temporary PostgreSQL cluster (skipped without
    psycopg2 or ADBC's PostgreSQL driver)."""
    import pytest

    if kind == "duckdb":
        yield from duckdb_engine(tmp_path_factory.mktemp("duckdb"))
    else:
        pytest.importorskip("psycopg2")
        pytest.importorskip("adbc_driver_postgresql")
        yield from postgres_engine()
