"""The lineage index: a SQLite database (WAL mode) derived from the record files.

The JSON files stay the truth; the index only remembers, per record file, its change signature
(modification time, size, inode or ETag), the columns listings order and filter by, and the
record itself (zlib-compressed), so a query reads no record file. Before each query the store lists
the folders it touches and ``sync`` brings their rows up to date: files not seen before or whose
signature changed are read, rows of files that are gone are dropped. Deleting the index loses
nothing; a damaged one is discarded and rebuilt.

A folder whose listing (every file's name and signature) has the digest remembered from a sync
that found its rows exactly in step, with no row of it written since, is in step without comparing
its files one by one. Triggers count every write to a folder's rows (its ``generation``), so a
writer in any process makes the remembered digest stale.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import sqlite3
import sys
import threading
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import islice, zip_longest
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ubunye_core.store.listing import (
    UNREADABLE_RANK,
    FileEntry,
    RunEntry,
    record_of,
    started_order,
)

if TYPE_CHECKING:
    from ubunye_core.records.model import RunRecord

#: File name of the index kept beside the records (inside the store's root; never ``*.json``,
#: so the reference CLI, which reads ``*.json`` files, does not see it).
INDEX_FILE_NAME = ".ubunye-index.sqlite3"

#: Folder for the indexes of object stores and read-only folders (default: the user's cache).
CACHE_DIR_ENV = "UBUNYE_INDEX_CACHE_DIR"

SCHEMA_VERSION = "4"
_BUSY_TIMEOUT_MS = 60_000
_BATCH = 500

_SCHEMA = (
    """
    CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)
    """,
    """
    CREATE TABLE IF NOT EXISTS runs (
        id INTEGER PRIMARY KEY,
        task_path TEXT NOT NULL,
        file TEXT NOT NULL,
        sig_a, sig_b, sig_c,
        mtime REAL NOT NULL,
        rank INTEGER NOT NULL,
        started_us INTEGER,
        started_tie TEXT NOT NULL,
        status TEXT,
        run_id TEXT,
        started_at TEXT,
        duration_sec REAL,
        partition_key TEXT,
        error TEXT
    )
    """,
    """
    CREATE UNIQUE INDEX IF NOT EXISTS runs_file ON runs (task_path, file)
    """,
    """
    CREATE INDEX IF NOT EXISTS runs_task_newest ON runs (
        task_path, mtime DESC, rank DESC, started_us DESC, started_tie DESC, file DESC,
        status, partition_key
    )
    """,
    # The unreadable files each sync reports, found without reading every row of the folder.
    f"""
    CREATE INDEX IF NOT EXISTS runs_unreadable ON runs (task_path, file)
    WHERE rank = {UNREADABLE_RANK}
    """,
    """
    CREATE TABLE IF NOT EXISTS documents (id INTEGER PRIMARY KEY, body BLOB NOT NULL)
    """,
    """
    CREATE TABLE IF NOT EXISTS dictionary (
        id INTEGER PRIMARY KEY CHECK (id = 1), body BLOB NOT NULL
    )
    """,
    # Per task folder: how many writes its rows have had, and the digest of the listing its rows
    # were last found exactly in step with (valid while ``listed_at`` is that count).
    """
    CREATE TABLE IF NOT EXISTS folders (
        task_path TEXT PRIMARY KEY,
        generation INTEGER NOT NULL DEFAULT 0,
        listing BLOB,
        listed_at INTEGER
    )
    """,
    """
    CREATE TRIGGER IF NOT EXISTS runs_inserted AFTER INSERT ON runs BEGIN
        INSERT INTO folders (task_path, generation) VALUES (NEW.task_path, 1)
        ON CONFLICT (task_path) DO UPDATE SET generation = generation + 1;
    END
    """,
    """
    CREATE TRIGGER IF NOT EXISTS runs_updated AFTER UPDATE ON runs BEGIN
        UPDATE folders SET generation = generation + 1 WHERE task_path = NEW.task_path;
    END
    """,
    """
    CREATE TRIGGER IF NOT EXISTS runs_deleted AFTER DELETE ON runs BEGIN
        UPDATE folders SET generation = generation + 1 WHERE task_path = OLD.task_path;
    END
    """,
)

_ORDER = "mtime DESC, rank DESC, started_us DESC, started_tie DESC, task_path DESC, file DESC"
_COLUMNS = "id, task_path, file, rank, status, run_id, started_at, duration_sec, error"
_UPSERT = """
INSERT INTO runs (task_path, file, sig_a, sig_b, sig_c, mtime, rank, started_us, started_tie,
                  status, run_id, started_at, duration_sec, partition_key, error)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (task_path, file) DO UPDATE SET
    sig_a = excluded.sig_a, sig_b = excluded.sig_b, sig_c = excluded.sig_c,
    mtime = excluded.mtime, rank = excluded.rank,
    started_us = excluded.started_us, started_tie = excluded.started_tie,
    status = excluded.status, run_id = excluded.run_id, started_at = excluded.started_at,
    duration_sec = excluded.duration_sec, partition_key = excluded.partition_key,
    error = excluded.error
RETURNING id
"""

#: ``(done, total)`` while a sync reads record files.
Progress = Callable[[int, int], None]

#: Reads the files of one task folder: per file, the record or None and why it is unreadable.
ReadFiles = Callable[
    [str, list[FileEntry]], Iterator[tuple[FileEntry, "RunRecord | None", "str | None"]]
]


class IndexUnavailable(Exception):
    """The index cannot be opened or written here; the store reads the folders instead."""


def default_cache_dir() -> Path:
    """Where indexes of object stores live: ``$UBUNYE_INDEX_CACHE_DIR``, else the user's cache."""
    chosen = os.environ.get(CACHE_DIR_ENV)
    if chosen:
        return Path(chosen)
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "ubunye-dagster" / "lineage-index"


def cached_index_path(store_key: str) -> Path:
    """The cache file of the index of the store named ``store_key`` (its URL and endpoint)."""
    digest = hashlib.sha256(store_key.encode("utf-8")).hexdigest()[:32]
    return default_cache_dir() / f"{digest}.sqlite3"


@dataclass
class SyncReport:
    """What a sync did: files read now, files already indexed, rows dropped, and the
    unreadable files of the folders (path under the root, reason)."""

    read: int = 0
    unchanged: int = 0
    removed: int = 0
    unreadable: list[tuple[str, str]] = field(default_factory=list)


@dataclass(frozen=True)
class FolderState:
    """A task folder as listed now: how many record files it holds, the digest of its listing
    (every file's name and change signature, in listing order) and the files themselves, made
    only when the sync compares them (none when the folder does not exist)."""

    task_path: str
    count: int
    digest: bytes
    make_entries: Callable[[], Sequence[FileEntry]] = field(repr=False, compare=False)

    @functools.cached_property
    def entries(self) -> Sequence[FileEntry]:
        """The folder's record files."""
        return self.make_entries()


def _row(
    task_path: str,
    entry: FileEntry,
    record: RunRecord | None,
    error: str | None,
    text: str | None = None,
) -> tuple[tuple, bytes | None]:
    """The ``runs`` values and the document (UTF-8) of one file; ``text`` is the record's JSON
    when the caller has it already."""
    if record is None:
        values = (task_path, entry.name, *entry.signature, entry.mtime, UNREADABLE_RANK, None, "")
        return (*values, None, None, None, None, None, error), None
    rank, micros, tie = started_order(record.started_at)
    document = record.to_json() if text is None else text
    values = (
        task_path,
        entry.name,
        *entry.signature,
        entry.mtime,
        rank,
        micros,
        tie,
        record.status,
        record.run_id,
        record.started_at,
        record.duration_sec,
        record.partition_key,
        None,
    )
    return values, document.encode("utf-8")


class RecordIndex:
    """The index database of one store, at ``path``; every method opens its own connection."""

    def __init__(self, path: Path, store_key: str) -> None:
        self.path = path
        self._store_key = store_key

    # --- connection ---------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            connection = self._open()
        except sqlite3.DatabaseError as exc:
            if is_damage(exc):
                # Not a database, or a damaged one: it is only derived data, start again.
                self.discard()
                try:
                    return self._open()
                except sqlite3.Error as again:
                    raise IndexUnavailable(f"cannot open the index {self.path}: {again}") from exc
            raise IndexUnavailable(f"cannot open the index {self.path}: {exc}") from exc
        except OSError as exc:
            raise IndexUnavailable(f"cannot create the index {self.path}: {exc}") from exc
        return connection

    def _open(self) -> sqlite3.Connection:
        connection = sqlite3.connect(
            self.path, timeout=_BUSY_TIMEOUT_MS / 1000, isolation_level=None
        )
        try:
            connection.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
            if connection.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                connection.execute("PRAGMA journal_mode = WAL")
            # WAL with synchronous=NORMAL stays consistent after a crash; the last commits may
            # be lost, which a later sync re-reads from the files.
            connection.execute("PRAGMA synchronous = NORMAL")
            self._check_schema(connection)
        except BaseException:
            connection.close()
            raise
        return connection

    def _check_schema(self, connection: sqlite3.Connection) -> None:
        found = dict(connection.execute(_META_QUERY).fetchall()) if _has_meta(connection) else {}
        wanted = {"schema": SCHEMA_VERSION, "store": self._store_key}
        if found == wanted:
            return
        with _writing(connection):
            found = (
                dict(connection.execute(_META_QUERY).fetchall()) if _has_meta(connection) else {}
            )
            if found != wanted:
                # Another version's or another store's index: it is only derived data.
                for table in ("runs", "documents", "dictionary", "folders", "meta"):
                    connection.execute(f"DROP TABLE IF EXISTS {table}")
                for statement in _SCHEMA:
                    connection.execute(statement)
                connection.executemany("INSERT INTO meta VALUES (?, ?)", wanted.items())

    @contextlib.contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        connection = self._connect()
        try:
            yield connection
        finally:
            connection.close()

    def discard(self) -> None:
        """Delete the index files (the next use builds a new one)."""
        self._drop_kept_writer()
        for suffix in ("", "-wal", "-shm", "-journal"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(f"{self.path}{suffix}")

    # --- writing ------------------------------------------------------------------------

    def record_saved(
        self, task_path: str, entry: FileEntry, record: RunRecord, text: str | None = None
    ) -> None:
        """Put the record just written to ``entry`` (``text``: its JSON, when known) in the
        index, through this process's kept write connection."""
        connection = self._kept_writer()
        try:
            with _writing(connection):
                _put(connection, [(task_path, entry, record, None)], texts=[text])
        except sqlite3.Error:
            self._drop_kept_writer()
            raise

    def _kept_writer(self) -> sqlite3.Connection:
        """This thread's open write connection to the index file, opened again when the file
        was replaced or deleted since (its inode changed)."""
        kept = _kept_writers()
        key = (str(self.path), self._store_key, os.getpid())
        found = kept.get(key)
        inode = _inode(self.path)
        if found is not None and inode is not None and found[1] == inode:
            return found[0]
        self._drop_kept_writer()
        connection = self._connect()
        kept[key] = (connection, _inode(self.path))
        return connection

    def _drop_kept_writer(self) -> None:
        found = _kept_writers().pop((str(self.path), self._store_key, os.getpid()), None)
        if found is not None:
            with contextlib.suppress(sqlite3.Error):
                found[0].close()

    def sync(
        self,
        folders: Iterable[FolderState],
        read_files: ReadFiles,
        *,
        still_gone: Callable[[str, str], bool],
        progress: Progress | None = None,
    ) -> SyncReport:
        """Bring the rows of ``folders`` in line with their listed files; ``read_files`` reads
        changed ones (giving the record, or None and why not)."""
        report = SyncReport()
        with self._connection() as connection:
            to_read: list[tuple[str, list[FileEntry]]] = []
            seen: list[str] = []
            for folder in folders:
                seen.append(folder.task_path)
                changed = _compare_folder(connection, folder, still_gone, report)
                if changed:
                    to_read.append((folder.task_path, changed))
            total = sum(len(entries) for _, entries in to_read)
            if progress is not None and total:
                progress(0, total)
            for task_path, entries in to_read:
                read = read_files(task_path, entries)
                # Short transactions: concurrent savers wait for one batch, not the rebuild.
                while batch := [(task_path, *found) for found in islice(read, _BATCH)]:
                    with _writing(connection):
                        _put(connection, batch)
                    report.read += len(batch)
                    if progress is not None:
                        progress(report.read, total)
            report.unreadable.extend(_unreadable(connection, seen))
        return report

    def drop_other_tasks(self, task_paths: Iterable[str]) -> int:
        """Drop rows of task folders not in ``task_paths`` (a whole-store sync found them gone)."""
        with self._connection() as connection, _writing(connection):
            scope, params = _scope(connection, list(task_paths))
            stale = connection.execute(
                f"SELECT id FROM runs WHERE NOT ({scope})", params
            ).fetchall()
            connection.executemany("DELETE FROM documents WHERE id = ?", stale)
            connection.executemany("DELETE FROM runs WHERE id = ?", stale)
        return len(stale)

    # --- reading ------------------------------------------------------------------------

    def runs(
        self,
        task_paths: Sequence[str],
        *,
        status: str | None = None,
        since_micros: int | None = None,
        partition: Any = ...,
        with_documents: bool = True,
        on_unreadable: Callable[[str], None],
    ) -> Iterator[RunEntry]:
        """Runs of ``task_paths`` newest first, narrowed by status, start and partition (``...``
        for any); ``on_unreadable`` gets the reason of each unreadable file met on the way.
        Without ``with_documents`` a record is fetched only when an entry is asked for it."""
        wanted, params = [], []
        for column, value in (("status = ?", status), ("started_us >= ?", since_micros)):
            if value is not None:
                wanted.append(column)
                params.append(value)
        if partition is not ...:
            wanted.append("partition_key IS ?")
            params.append(partition)
        condition = " AND ".join(wanted) or "1"
        body = "documents.body" if with_documents else "NULL"
        join = "LEFT JOIN documents USING (id)" if with_documents else ""
        with self._connection() as connection:
            connection.execute("BEGIN")
            try:
                scope, scope_params = _scope(connection, task_paths)
                zdict = _dictionary(connection)
                query = (
                    f"SELECT {_COLUMNS}, {body} FROM runs {join} WHERE {scope} "
                    f"AND (rank = {UNREADABLE_RANK} OR ({condition})) ORDER BY {_ORDER}"
                )
                for row in connection.execute(query, [*scope_params, *params]):
                    if row[3] == UNREADABLE_RANK:
                        on_unreadable(row[8] or f"{row[1]}/{row[2]} is not a readable record")
                        continue
                    yield self._entry(row, zdict)
            finally:
                # The caller may stop early; end the read transaction either way.
                with contextlib.suppress(sqlite3.Error):
                    connection.execute("COMMIT")

    def _entry(self, row: tuple, zdict: bytes | None) -> RunEntry:
        _, task_path, file, _, status, run_id, started_at, duration, _, body = row
        if body is not None:
            document = functools.partial(_text, zdict, body)
        else:
            document = functools.partial(self.document, task_path, file)
        load_record = functools.partial(record_of, document)
        return RunEntry(
            task_path, file, run_id, status, started_at, duration, load_record, document
        )

    def document(self, task_path: str, file: str) -> str:
        """The indexed record of one file, as ``RunRecord.to_json`` wrote it."""
        with self._connection() as connection:
            found = connection.execute(
                "SELECT body FROM runs JOIN documents USING (id) WHERE task_path = ? AND file = ?",
                (task_path, file),
            ).fetchone()
            zdict = _dictionary(connection)
        if found is None:
            raise IndexUnavailable(f"{task_path}/{file} left the index while it was read")
        return _text(zdict, found[0])

    def counts(self) -> tuple[int, int]:
        """(readable records, unreadable files) in the index."""
        with self._connection() as connection:
            rows = connection.execute(
                f"SELECT rank = {UNREADABLE_RANK}, count(*) FROM runs GROUP BY 1"
            ).fetchall()
        found = dict(rows)
        return found.get(0, 0), found.get(1, 0)


_META_QUERY = "SELECT key, value FROM meta"

#: Write connections kept open for the life of the process, per thread and index file: closing
#: the last connection of a WAL database checkpoints it (the database file written and flushed),
#: which every saved record paid for while connections were opened per write.
_KEPT = threading.local()


def _kept_writers() -> dict[tuple[str, str, int], tuple[sqlite3.Connection, int | None]]:
    if not hasattr(_KEPT, "connections"):
        _KEPT.connections = {}
    return _KEPT.connections


def _inode(path: Path) -> int | None:
    try:
        return os.stat(path).st_ino
    except OSError:
        return None


@contextlib.contextmanager
def _writing(connection: sqlite3.Connection) -> Iterator[None]:
    """One write transaction, taken at once (``IMMEDIATE``) so writers queue on the busy timeout
    instead of failing when a read turns into a write."""
    connection.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        connection.execute("ROLLBACK")
        raise
    connection.execute("COMMIT")


def is_damage(error: sqlite3.Error) -> bool:
    """The error says the file is not (or no longer) a sound database, not that it is busy."""
    name = getattr(error, "sqlite_errorname", "")
    if name:
        return name in ("SQLITE_CORRUPT", "SQLITE_NOTADB")
    text = str(error)
    return "malformed" in text or "not a database" in text


def _has_meta(connection: sqlite3.Connection) -> bool:
    return (
        connection.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'"
        ).fetchone()
        is not None
    )


def _put(
    connection: sqlite3.Connection,
    rows: list[tuple[str, FileEntry, RunRecord | None, str | None]],
    texts: Sequence[str | None] = (),
) -> None:
    """Upsert rows, in a write transaction the caller holds (``texts``: records' JSON known
    already, row for row)."""
    zdict = _dictionary(connection)
    for (task_path, entry, record, error), text in zip_longest(rows, texts[: len(rows)]):
        values, document = _row(task_path, entry, record, error, text)
        (row_id,) = connection.execute(_UPSERT, values).fetchone()
        if document is None:
            connection.execute("DELETE FROM documents WHERE id = ?", (row_id,))
            continue
        if zdict is None:
            # The first record becomes the dictionary: records share most of their text
            # (environment, steps), so each compresses to a tenth of what it would alone.
            connection.execute("INSERT INTO dictionary (id, body) VALUES (1, ?)", (document,))
            zdict = document
        packer = zlib.compressobj(6, zdict=zdict)
        body = packer.compress(document) + packer.flush()
        connection.execute(
            "INSERT OR REPLACE INTO documents (id, body) VALUES (?, ?)", (row_id, body)
        )


def _compare_folder(
    connection: sqlite3.Connection,
    folder: FolderState,
    still_gone: Callable[[str, str], bool],
    report: SyncReport,
) -> list[FileEntry]:
    """The files of ``folder`` new or changed since the index read them (the rows of files
    gone are dropped). A listing found exactly in step is remembered, with the folder's write
    count read before its rows: a write in between moves the count and nothing is remembered."""
    task_path = folder.task_path
    generation, listing, listed_at = connection.execute(
        "SELECT generation, listing, listed_at FROM folders WHERE task_path = ?", (task_path,)
    ).fetchone() or (None, None, None)
    if generation is not None and listed_at == generation and listing == folder.digest:
        report.unchanged += folder.count
        return []
    rows = connection.execute(
        "SELECT file, sig_a, sig_b, sig_c FROM runs WHERE task_path = ?", (task_path,)
    )
    known = {file: (a, b, c) for file, a, b, c in rows}
    changed = []
    for entry in folder.entries:
        if known.pop(entry.name, None) == entry.signature:
            report.unchanged += 1
        else:
            changed.append(entry)
    if not changed and not known and generation is not None:
        connection.execute(
            "UPDATE folders SET listing = ?, listed_at = generation "
            "WHERE task_path = ? AND generation = ?",
            (folder.digest, task_path, generation),
        )
    gone = [name for name in known if still_gone(task_path, name)]
    report.removed += _remove(connection, task_path, gone)
    return changed


def _dictionary(connection: sqlite3.Connection) -> bytes | None:
    found = connection.execute("SELECT body FROM dictionary WHERE id = 1").fetchone()
    return found[0] if found else None


def _remove(connection: sqlite3.Connection, task_path: str, names: list[str]) -> int:
    if not names:
        return 0
    with _writing(connection):
        for name in names:
            found = connection.execute(
                "DELETE FROM runs WHERE task_path = ? AND file = ? RETURNING id", (task_path, name)
            ).fetchall()
            connection.executemany("DELETE FROM documents WHERE id = ?", found)
    return len(names)


def _unreadable(connection: sqlite3.Connection, task_paths: list[str]) -> list[tuple[str, str]]:
    found = []
    for task_path in task_paths:
        found.extend(
            connection.execute(
                f"SELECT task_path || '/' || file, error FROM runs "
                f"WHERE task_path = ? AND rank = {UNREADABLE_RANK} ORDER BY file",
                (task_path,),
            ).fetchall()
        )
    return found


def _text(zdict: bytes | None, body: bytes) -> str:
    unpacker = zlib.decompressobj(zdict=zdict) if zdict else zlib.decompressobj()
    return (unpacker.decompress(body) + unpacker.flush()).decode("utf-8")


def _scope(connection: sqlite3.Connection, task_paths: Sequence[str]) -> tuple[str, list[str]]:
    """The WHERE clause (and its parameters) limiting a query to ``task_paths``."""
    if len(task_paths) == 1:
        return "task_path = ?", [task_paths[0]]
    connection.execute("CREATE TEMP TABLE IF NOT EXISTS scope (path TEXT PRIMARY KEY)")
    connection.execute("DELETE FROM temp.scope")
    connection.executemany(
        "INSERT OR IGNORE INTO temp.scope VALUES (?)", ((p,) for p in task_paths)
    )
    return "task_path IN (SELECT path FROM temp.scope)", []
