"""Delta Lake tables through ``deltalake`` (delta-rs, no JVM): write a version, read any version.

Each write is one commit, so one table version; the writer's notes (who wrote it, its digest)
ride in the commit's custom metadata together with a write id, which finds the version the
write made even when other writers commit to the same table. A partition is written by
replacing the rows its predicate selects, so the other partitions stay as they were.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa

#: The commit metadata key holding the id of the write that made the commit.
WRITE_ID_KEY = "ubunye.write_id"
#: How many newest commits are searched for a write's own commit.
_HISTORY_SEARCH = 100


def _deltalake() -> Any:
    try:
        import deltalake
    except ImportError as exc:  # an optional extra
        raise ImportError(
            "format='delta' needs the deltalake package: pip install 'ubunye-dagster[delta]'"
        ) from exc
    return deltalake


def _options(storage_options: Mapping[str, Any] | None) -> dict[str, str] | None:
    return {str(k): str(v) for k, v in storage_options.items()} if storage_options else None


def write_delta(
    table: pa.Table,
    location: str,
    *,
    predicate: str | None = None,
    notes: Mapping[str, str] | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> int:
    """Write ``table`` as a new version of the Delta table at ``location``; returns the version.

    Without ``predicate`` the whole table is replaced; with one only the rows it selects are.
    """
    deltalake = _deltalake()
    write_id = uuid.uuid4().hex
    metadata = {**{str(k): str(v) for k, v in (notes or {}).items()}, WRITE_ID_KEY: write_id}
    deltalake.write_deltalake(
        location,
        table,
        mode="overwrite",
        predicate=predicate,
        schema_mode="overwrite" if predicate is None else None,
        storage_options=_options(storage_options),
        commit_properties=deltalake.CommitProperties(custom_metadata=metadata),
    )
    history = deltalake.DeltaTable(location, storage_options=_options(storage_options)).history(
        _HISTORY_SEARCH
    )
    for commit in history:
        if commit.get(WRITE_ID_KEY) == write_id:
            return int(commit["version"])
    raise RuntimeError(f"the Delta commit of write {write_id} is not in {location}'s history")


def read_delta_version(
    location: str,
    version: int | None = None,
    storage_options: Mapping[str, Any] | None = None,
    predicate: str | None = None,
) -> pa.Table:
    """Version ``version`` (the latest when None) of the Delta table at ``location``, only the
    rows ``predicate`` selects when given, as an Arrow table. FileNotFoundError when there is no
    such table or version (vacuumed, say)."""
    deltalake = _deltalake()
    try:
        table = deltalake.DeltaTable(
            location, version=version, storage_options=_options(storage_options)
        )
    except (deltalake.exceptions.TableNotFoundError, deltalake.exceptions.DeltaError) as exc:
        where = f"{location}@v{version}" if version is not None else location
        raise FileNotFoundError(f"no Delta table version at {where}: {exc}") from exc
    if predicate is None:
        return _plain_strings(table.to_pyarrow_table())
    import pyarrow as pa

    reader = (
        deltalake.QueryBuilder().register("t", table).execute(f"SELECT * FROM t WHERE {predicate}")
    )
    return _plain_strings(pa.table(reader))


def commit_history(
    location: str, storage_options: Mapping[str, Any] | None = None
) -> list[dict[str, Any]]:
    """The table's recent commits, newest first: version, operation, parameters, custom
    metadata."""
    deltalake = _deltalake()
    table = deltalake.DeltaTable(location, storage_options=_options(storage_options))
    return [dict(commit) for commit in table.history(_HISTORY_SEARCH)]


def commit_info(
    location: str, version: int, storage_options: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The commit that made ``version``; empty when it is no longer in the recent history."""
    for commit in commit_history(location, storage_options):
        if int(commit.get("version", -1)) == version:
            return commit
    return {}


def newest_own_write(commits: list[dict[str, Any]], predicate: str | None) -> dict[str, Any]:
    """The newest commit an Ubunye write made of exactly the rows ``predicate`` selects (the
    whole table when None); empty when there is none."""
    for commit in commits:
        if WRITE_ID_KEY not in commit:
            continue
        written = (commit.get("operationParameters") or {}).get("predicate")
        if written == predicate:
            return commit
    return {}


def commit_notes(commit: Mapping[str, Any]) -> dict[str, str]:
    """The ``ubunye.`` notes (writer, digests) a commit carries."""
    return {k: str(v) for k, v in commit.items() if k.startswith("ubunye.")}


def latest_version(location: str, storage_options: Mapping[str, Any] | None = None) -> int:
    """The newest version of the Delta table at ``location``."""
    return int(
        _deltalake().DeltaTable(location, storage_options=_options(storage_options)).version()
    )


def equals_predicate(column: str, value: str) -> str:
    """A SQL predicate selecting the rows whose ``column`` equals ``value`` (both quoted)."""
    quoted_column = '"' + column.replace('"', '""') + '"'
    return f"{quoted_column} = '" + value.replace("'", "''") + "'"


def _plain_strings(table: pa.Table) -> pa.Table:
    """``table`` with view string/binary columns as plain ones (what was written, as Arrow)."""
    import pyarrow as pa

    fields = []
    for field in table.schema:
        kind = field.type
        if getattr(pa.types, "is_string_view", lambda _: False)(kind):
            kind = pa.string()
        elif getattr(pa.types, "is_binary_view", lambda _: False)(kind):
            kind = pa.binary()
        fields.append(field.with_type(kind))
    schema = pa.schema(fields, metadata=table.schema.metadata)
    return table if schema.equals(table.schema) else table.cast(schema)
