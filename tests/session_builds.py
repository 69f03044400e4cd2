"""Work done once per test session and shared by every xdist worker of it (a dbt scenario built
once, read by the modules of several workers): the first worker to ask builds it in a folder of
the session while the others wait on a lock, and later ones read what it left.

Only what outlives the build is shared (files: a home, records, a warehouse file, and a small
JSON answer); a service (a database server, a SparkSession) stays with the worker that needs it.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest


def session_folder(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    """The folder ``name`` of this test session, the same for each of its workers (their base
    temporary folders are siblings inside the session's), not made yet."""
    base = tmp_path_factory.getbasetemp()
    session = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    return session / "shared" / name


def built_once_per_session(folder: Path, build: Callable[[Path], Any]) -> Any:
    """What ``build(folder)`` returned (JSON), built into ``folder`` by the first caller of the
    session; a build that failed half-way is started again by the next caller."""
    done = folder / "built.json"
    folder.parent.mkdir(parents=True, exist_ok=True)
    with (folder.parent / f"{folder.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            answer = build(folder)
            done.write_text(json.dumps(answer), encoding="utf-8")
    return json.loads(done.read_text(encoding="utf-8"))
