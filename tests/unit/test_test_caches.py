"""The test cache (tests/external_python.py, tests/wheel_builds.py) builds a venv or a wheel once
per content of its sources, wherever the checkout is, and removes what has gone unused."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import external_python
import pytest
from external_python import built_once


def git_checkout(folder: Path) -> Path:
    """A git repository in ``folder`` holding rows/ with one source file, committed."""
    (folder / "rows").mkdir(parents=True)
    (folder / "rows" / "lib.rs").write_text("fn main() {}\n", encoding="utf-8")
    for command in (["init", "-q"], ["add", "."]):
        subprocess.run(["git", *command], cwd=folder, check=True)
    return folder


def rows_digest(checkout: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The Pipes venv's cache entry as the checkout ``checkout`` names it."""
    monkeypatch.setattr(external_python, "REPOSITORY", checkout)
    monkeypatch.setattr(external_python, "ROWS_SOURCE", checkout / "rows")
    return external_python.venv_key(external_python.PIPES)


def test_two_checkouts_of_the_same_sources_share_a_cache_entry_and_an_edit_does_not(
    tmp_path, monkeypatch
):
    first = git_checkout(tmp_path / "first")
    second = tmp_path / "elsewhere" / "second"
    shutil.copytree(first, second)

    assert rows_digest(first, monkeypatch) == rows_digest(second, monkeypatch)
    (second / "rows" / "lib.rs").write_text("fn main() { 1; }\n", encoding="utf-8")
    assert rows_digest(first, monkeypatch) != rows_digest(second, monkeypatch)


def test_an_entry_unused_for_a_week_is_removed_when_another_is_built(tmp_path):
    cache = tmp_path / "cache"
    made: list[str] = []

    def build(folder: Path) -> None:
        made.append(folder.name)
        (folder / "built").write_text("yes", encoding="utf-8")

    old, recent = built_once(cache / "old", build), built_once(cache / "recent", build)
    week_ago = time.time() - (external_python.UNUSED_DAYS + 1) * 86400
    os.utime(old, (week_ago, week_ago))
    os.utime(recent, (time.time() - 86400, time.time() - 86400))

    built_once(cache / "new", build)
    assert sorted(p.name for p in cache.iterdir() if p.is_dir()) == ["new", "recent"]

    # A use dates the entry now, and builds nothing.
    assert built_once(cache / "recent", build) == recent
    assert time.time() - recent.stat().st_mtime < 60 and len(made) == 3
