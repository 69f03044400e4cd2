"""Staging names that say who is writing, so what a killed writer left can be told from a live
writer's work and removed.

A write is staged under ``.ubunye-tmp-<host>~<pid>~<start>~<random>-<name>`` beside its target and
renamed into place. A staged entry is dead when its writer is gone: on this host, no process has
that pid with that start time; from another host (where no process can be asked), it is older than
``stale_after`` seconds. Entries from before owners were named count as another host's.
"""

from __future__ import annotations

import os
import re
import socket
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

#: Prefix of every staging name; never a materialisation's own name.
TEMP_MARK = ".ubunye-tmp-"
#: How old another host's staging entry must be before it counts as dead (a day).
DEFAULT_STALE_AFTER = 24 * 3600.0

_OWNER = re.compile(
    re.escape(TEMP_MARK) + r"(?P<host>[A-Za-z0-9-]+)~(?P<pid>\d+)~(?P<start>\d+)~[0-9a-f]+"
)


@dataclass(frozen=True)
class Writer:
    """Who staged an entry: host name, process id and the process's start time (clock ticks
    since boot on Linux; 0 where the platform does not say)."""

    host: str
    pid: int
    start: int


def this_host() -> str:
    """The host name as it appears in staging names (letters, digits and ``-`` only)."""
    return re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname()) or "host"


def process_start(pid: int) -> int | None:
    """The start time of process ``pid`` (Linux clock ticks since boot); 0 when it is running but
    the platform does not tell its start; None when there is no such process."""
    if os.path.exists("/proc/self/stat"):
        try:
            with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
                # The command name (field 2) may hold spaces; the fields after its ")" are fixed.
                return int(handle.read().rsplit(")", 1)[1].split()[19])
        except FileNotFoundError:
            return None
        except (OSError, IndexError, ValueError):
            return 0
    try:
        os.kill(pid, 0)  # signal 0: asks whether the process exists, sends nothing
    except ProcessLookupError:
        return None
    except PermissionError:
        return 0
    return 0


def staging_name(final_name: str) -> str:
    """A fresh staging name for ``final_name``, owned by this process."""
    pid = os.getpid()
    start = process_start(pid) if os.name != "nt" else 0
    owner = f"{this_host()}~{pid}~{start or 0}~{uuid.uuid4().hex[:16]}"
    return f"{TEMP_MARK}{owner}-{final_name}"


def writer_of(name: str) -> Writer | None:
    """The writer a staging name records; None when it records none (an older name)."""
    match = _OWNER.match(name)
    if match is None:
        return None
    return Writer(match["host"], int(match["pid"]), int(match["start"]))


def writer_is_gone(writer: Writer | None, age_seconds: float, stale_after: float) -> bool:
    """Whether the writer of a staging entry is certainly gone (see the module docstring)."""
    # On Windows a process cannot be asked without being signalled: age decides there too.
    if writer is None or writer.host != this_host() or os.name == "nt":
        return age_seconds > stale_after
    start = process_start(writer.pid)
    if start is None:
        return True
    # The pid is in use: by our writer unless the start times are known and differ (pid reuse).
    return bool(start and writer.start and start != writer.start)


def dead_staging_entries(
    fs: Any, folder: str, *, stale_after: float = DEFAULT_STALE_AFTER, recursive: bool = False
) -> Iterator[str]:
    """Staging entries under ``folder`` (an fsspec file system's path) whose writer is gone."""
    try:
        entries = fs.ls(folder, detail=True)
    except (FileNotFoundError, NotADirectoryError):
        return
    now = time.time()
    for entry in entries:
        path = str(entry["name"]).rstrip("/")
        name = path.rsplit("/", 1)[-1]
        if name.startswith(TEMP_MARK):
            age = now - _modified(fs, path, entry)
            if writer_is_gone(writer_of(name), age, stale_after):
                yield path
        elif recursive and entry.get("type") == "directory":
            yield from dead_staging_entries(fs, path, stale_after=stale_after, recursive=True)


def remove_dead_staging(
    fs: Any, folder: str, *, stale_after: float = DEFAULT_STALE_AFTER, recursive: bool = False
) -> list[str]:
    """Remove what dead writers left under ``folder``; returns the paths removed. An entry that
    vanishes meanwhile (another cleaner, or its writer finishing) is passed over."""
    removed = []
    for path in list(
        dead_staging_entries(fs, folder, stale_after=stale_after, recursive=recursive)
    ):
        try:
            fs.rm(path, recursive=True)
        except FileNotFoundError:
            continue
        removed.append(path)
    return removed


def _modified(fs: Any, path: str, entry: dict[str, Any]) -> float:
    """An entry's modification time in epoch seconds (now when the store does not say)."""
    for key in ("mtime", "LastModified", "last_modified", "created"):
        value = entry.get(key)
        if value is not None:
            return value.timestamp() if hasattr(value, "timestamp") else float(value)
    try:
        return fs.modified(path).timestamp()
    except (NotImplementedError, OSError, AttributeError):
        return time.time()
