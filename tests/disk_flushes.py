"""What ``os.fsync`` flushes during a test: each call still flushes, and its path is noted."""

from __future__ import annotations

import os

import pytest

#: Paths of file descriptors are read from /proc (Linux).
NAMES_FDS = pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="names fds in /proc")


def flushed_files(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths ``os.fsync`` flushes from now on, in order (the real flush still happens)."""
    real_fsync, flushed = os.fsync, []

    def fsync(fd: int) -> None:
        flushed.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return flushed
