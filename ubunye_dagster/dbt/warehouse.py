"""Relations hashed where they are stored: rows-v1 of a dbt relation, computed in the warehouse
through the dbt adapter's own connection (DuckDB through dbt-duckdb's database file).

A hash that cannot be computed is the step's ``hash_error`` (``"<Type>: <message>"``), never a
raised error: a receipt does not fail a build.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ubunye_core.records.model import StepRecord
from ubunye_rows.sql import fingerprint_duckdb

#: The adapter types whose relations are hashed in the database.
HASHED_IN = ("duckdb",)


@contextlib.contextmanager
def _working_directory(folder: Path) -> Iterator[None]:
    """Run inside ``folder``: a profile's relative database path is the project's, as for dbt."""
    before = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(before)


@contextlib.contextmanager
def warehouse_cursor(adapter: Any, project_dir: Path) -> Iterator[Any]:
    """A cursor on the warehouse from the dbt ``adapter``'s own connection, released after."""
    with _working_directory(project_dir), adapter.connection_named("ubunye_receipts"):
        yield adapter.connections.get_thread_connection().handle.cursor()


@dataclass(frozen=True)
class Unreachable:
    """No cursor on the warehouse, and why (``"<Type>: <message>"``): each step's hash error."""

    reason: str


def failure_text(error: BaseException) -> str:
    """``<ExceptionType>: <message>``, the record's hash error."""
    return f"{type(error).__name__}: {error}"


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
        return StepRecord(**unhashed, hash_error=failure_text(error))
    return StepRecord.from_fingerprint(
        fp,
        name=name,
        direction=direction,  # type: ignore[arg-type]
        format=format,
        location=relation,
        hash_seconds=round(time.perf_counter() - started, 6),
        hash_basis="materialised",
    )
