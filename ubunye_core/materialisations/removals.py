"""The version a write replaced, removed after the write goes on.

Freeing a large file's blocks takes the file system longer than the rename that replaces it (a
25 MB Parquet file: about 20 ms against under 1 ms on ext4), so a local write keeps the replaced
version under a staging name of this process, renames the new one over it and leaves the
removal to a daemon thread. Until then the old version is an entry of a live writer, which sweeps
keep; once this process is gone, ``ubunye-dagster clean`` and the next write's sweep remove it.
"""

from __future__ import annotations

import contextlib
import os
import shutil

from ubunye_core.background import LaterCalls
from ubunye_core.materialisations.staging import staging_name

_REMOVALS = LaterCalls("ubunye-removals")


def replace_local(staged: str, final: str) -> None:
    """Move ``staged`` to ``final`` on one local file system, replacing what is there; the
    replaced version is removed on this process's removal thread.

    A file replaces a file in one atomic rename, the old one first given a second name (a hard
    link) so the rename frees nothing. A folder cannot be renamed over a folder, so the old one is
    first moved aside (both renames are atomic).
    """
    aside = os.path.join(os.path.dirname(final), staging_name("old"))
    if os.path.isdir(final):
        os.rename(final, aside)
        try:
            os.rename(staged, final)
        except BaseException:
            os.rename(aside, final)
            raise
        _REMOVALS.queue(lambda: shutil.rmtree(aside, ignore_errors=True))
        return
    try:
        os.link(final, aside)
    except OSError:  # nothing there yet, or a file system without hard links
        os.replace(staged, final)
        return
    try:
        os.replace(staged, final)
    finally:
        _REMOVALS.queue(lambda: _remove_file(aside))


def _remove_file(path: str) -> None:
    # Gone already when a sweep took this process for dead; a removal never fails the writer.
    with contextlib.suppress(OSError):
        os.remove(path)


def settle_removals() -> None:
    """Return once every replaced version queued for removal in this process is removed."""
    _REMOVALS.settle()
