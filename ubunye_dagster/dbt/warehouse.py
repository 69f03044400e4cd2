"""Relations hashed where they are stored: rows-v1 of a dbt relation, computed in the warehouse
(DuckDB: the database file of the dbt-duckdb profile, opened read only once dbt has exited).

A hash that cannot be computed is the step's ``hash_error`` (``"<Type>: <message>"``), never a
raised error: a receipt does not fail a build.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from ubunye_core.records.model import StepRecord
from ubunye_dagster.masking import mask_error
from ubunye_rows.sql import fingerprint_duckdb

#: The adapter types whose relations are hashed in the database.
HASHED_IN = ("duckdb",)


#: How the database file is opened: read only, as dagster-dbt's in-process adapter opens it (DuckDB
#: refuses a second configuration of one file in a process).
READ_ONLY = {"access_mode": "READ_ONLY"}


def database_path(adapter: Any, project_dir: Path) -> str:
    """The DuckDB database the dbt ``adapter``'s profile names (a relative path is the
    project's, as for dbt)."""
    path = str(adapter.config.credentials.path)
    if path == ":memory:" or "://" in path or path.startswith("md:"):
        return path
    return str((project_dir / path).resolve())


@contextlib.contextmanager
def warehouse_connection(adapter: Any, project_dir: Path) -> Iterator[Any]:
    """A read-only connection to the profile's DuckDB file, closed after: dbt has exited, and
    no connection of this process is left holding the file for the next build."""
    connection = duckdb.connect(database_path(adapter, project_dir), config=READ_ONLY)
    try:
        yield connection
    finally:
        connection.close()


@dataclass(frozen=True)
class Unreachable:
    """No cursor on the warehouse, and why (``"<Type>: <message>"``): each step's hash error."""

    reason: str


def hashed_step(
    cursor: Any,
    relation: str | None,
    *,
    name: str,
    direction: str,
    format: str,
) -> StepRecord:
    """The step ``name`` of ``relation`` hashed with rows-v1 in the warehouse through ``cursor``;
    its hash error says why when it cannot be (unreachable, no relation, a type rows-v1 has no
    name for)."""
    started = time.perf_counter()
    unhashed = {"name": name, "direction": direction, "format": format, "location": relation or ""}
    if isinstance(cursor, Unreachable):
        return StepRecord(**unhashed, hash_error=cursor.reason)
    try:
        if relation is None:
            raise ValueError("the node is not a relation in the warehouse (an ephemeral model)")
        fp = fingerprint_duckdb(cursor, relation)
    except Exception as error:
        return StepRecord(**unhashed, hash_error=mask_error(error))
    return StepRecord.from_fingerprint(
        fp,
        name=name,
        direction=direction,  # type: ignore[arg-type]
        format=format,
        location=relation,
        hash_seconds=round(time.perf_counter() - started, 6),
        hash_basis="materialised",
    )
