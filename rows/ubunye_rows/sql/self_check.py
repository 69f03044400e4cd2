"""An in-database hash proves itself before it is trusted: the golden vectors the database can
hold are loaded as temporary tables and hashed in its SQL, and their digests compared with the
known ones. The verdict is kept for the process, per database key (server kind, version, the
settings that change text, the dialect); a database that disagrees on any vector gets its
relations streamed to the kernel instead, and one warning names the vector and the key."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ubunye_rows.hashing.digest import Fingerprint
from ubunye_rows.sql.dialects import Dialect, literal
from ubunye_rows.sql.golden_tables import held_vectors, load_golden_table

logger = logging.getLogger(__name__)

#: What a database's text depends on, besides its server kind and the dialect writing the SQL.
KEY_SETTINGS = {
    "duckdb": ("TimeZone", "Calendar"),
    "postgresql": (
        "server_version",
        "extra_float_digits",
        "DateStyle",
        "IntervalStyle",
        "TimeZone",
        "client_encoding",
    ),
}

#: Hashes a relation in the database without a self-check: ``(relation, dialect)``.
HashInDatabase = Callable[[str, Dialect], Fingerprint]

_TABLE_PREFIX = "ubunye_rows_self_check_"


@dataclass(frozen=True)
class Verdict:
    """The self-check's answer for one database key: trusted, or the vectors that disagreed."""

    key: tuple
    disagreed: tuple[str, ...] = ()
    #: Why the check could not run to the end (an error from the database), if it could not.
    failure: str | None = None

    @property
    def trusted(self) -> bool:
        """Whether every vector gave its known digest in the database."""
        return not self.disagreed and self.failure is None


_verdicts: dict[tuple, Verdict] = {}
_lock = threading.Lock()
_key_locks: dict[tuple, threading.Lock] = {}


def dialect_key(dialect: Dialect) -> str:
    """The dialect as part of the key: its class and its options."""
    kind = type(dialect)
    options = ",".join(f"{name}={value!r}" for name, value in sorted(vars(dialect).items()))
    return f"{kind.__module__}.{kind.__qualname__}({options})"


def database_key(connection: Any, dialect: Dialect) -> tuple:
    """The key a verdict is kept by: server kind, version and text settings, the dialect."""
    kind = dialect.name
    settings = KEY_SETTINGS[kind]
    listed = ", ".join(f"current_setting({literal(name)})" for name in settings)
    if kind == "duckdb":
        import duckdb

        version = duckdb.__version__
        [found] = connection.execute(f"SELECT {listed}").fetchall()
    else:
        version = ""
        cursor = connection.cursor()
        try:
            cursor.execute(f"SELECT {listed}")
            found = cursor.fetchone()
        finally:
            cursor.close()
    described = tuple(f"{name}={value}" for name, value in zip(settings, found, strict=True))
    return (kind, *((f"duckdb={version}",) if version else ()), *described, dialect_key(dialect))


def trusted_verdict(connection: Any, dialect: Dialect, hash_in_database: HashInDatabase) -> Verdict:
    """The database's verdict, checked on the golden vectors the first time its key is met in
    the process (one warning when it is not trusted), remembered after."""
    key = database_key(connection, dialect)
    with _lock:
        if key in _verdicts:
            return _verdicts[key]
        key_lock = _key_locks.setdefault(key, threading.Lock())
    with key_lock:  # one check per key, however many threads hash at once
        if key not in _verdicts:
            verdict = check_database(connection, dialect, hash_in_database, key)
            if not verdict.trusted:
                logger.warning(warning_text(verdict))
            with _lock:
                _verdicts[key] = verdict
    return _verdicts[key]


def warning_text(verdict: Verdict) -> str:
    """The one warning an untrusted database gets: what disagreed, the key, what happens."""
    what = (
        f"disagreed with the golden vectors {', '.join(verdict.disagreed)}"
        if verdict.disagreed
        else f"could not run ({verdict.failure})"
    )
    return (
        f"rows-v1 in the database {what} for {' '.join(verdict.key)}; its relations are "
        "streamed to the kernel instead"
    )


def check_database(
    connection: Any, dialect: Dialect, hash_in_database: HashInDatabase, key: tuple
) -> Verdict:
    """Hash each golden vector the database holds, in temporary tables, against its digest."""
    disagreed = []
    started = time.perf_counter()
    vectors = held_vectors(dialect.name)
    try:
        with _temporary_scope(connection, dialect.name):
            for vector in vectors:
                name = _TABLE_PREFIX + vector.name
                load_golden_table(connection, dialect.name, vector.table(), name)
                found = hash_in_database(_temporary(dialect.name, name), dialect)
                known = (vector.schema_hash, vector.data_hash, vector.row_count)
                if (found.schema_hash, found.data_hash, found.row_count) != known:
                    disagreed.append(vector.name)
    except Exception as error:  # a database that cannot run the check is not trusted either
        return Verdict(key, tuple(disagreed), f"{type(error).__name__}: {error}".strip())
    seconds = time.perf_counter() - started
    logger.info(
        "rows-v1 self-check of %s: %d golden vectors in %.3f s",
        " ".join(key),
        len(vectors),
        seconds,
    )
    return Verdict(key, tuple(disagreed))


def _temporary(kind: str, name: str) -> str:
    """A temporary table's name, qualified so no table of the caller's can shadow it."""
    return f"temp.main.{name}" if kind == "duckdb" else f"pg_temp.{name}"


@contextmanager
def _temporary_scope(connection: Any, kind: str) -> Iterator[None]:
    """A block whose temporary tables are gone after it, the caller's session as it was:
    DuckDB's dropped; PostgreSQL's rolled back (to a savepoint inside a transaction)."""
    if kind == "duckdb":
        try:
            yield
        finally:
            for vector in held_vectors(kind):
                connection.execute(
                    f"DROP TABLE IF EXISTS {_temporary(kind, _TABLE_PREFIX + vector.name)}"
                )
        return
    cursor = connection.cursor()
    in_transaction = not getattr(connection, "autocommit", False)
    cursor.execute("SAVEPOINT ubunye_rows_self_check" if in_transaction else "BEGIN")
    try:
        yield
    finally:
        if in_transaction:
            cursor.execute("ROLLBACK TO SAVEPOINT ubunye_rows_self_check")
            cursor.execute("RELEASE SAVEPOINT ubunye_rows_self_check")
        else:
            cursor.execute("ROLLBACK")
        cursor.close()


def forget_verdicts() -> None:
    """Forget every verdict (the next hash on each database checks again)."""
    with _lock:
        _verdicts.clear()
        _key_locks.clear()
