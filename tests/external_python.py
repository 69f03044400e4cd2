"""Pythons beside the test interpreter that hold ubunye-rows (this repository's rows/) and never
dagster, as teams' remote sides have them: the external side of Dagster Pipes (a Databricks or
EMR job, with dagster-pipes), and a Spark cluster's executors (pandas, pyarrow, numpy).

Each is a virtual environment built by uv from the local source (a non-editable install: the
kernel is compiled into the venv, so nothing in it reads the repository) on the test
interpreter's Python version, once per content of rows/ and per flavour, in a cache folder, and
reused while rows/ is unchanged, by any checkout of the same sources. An entry unused for a week
is removed when another is built.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.metadata
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
ROWS_SOURCE = REPOSITORY / "rows"
#: An entry of the cache unused for this long is removed when another is built.
UNUSED_DAYS = 7


@dataclass(frozen=True)
class Flavour:
    """What one kind of external Python holds besides ubunye-rows."""

    #: ubunye-rows' extras to install.
    extras: str
    #: Distributions pinned to the test interpreter's versions (a driver and its executors
    #: exchange Arrow batches and pickles, so they run the same versions).
    pinned: tuple[str, ...] = ()

    def pins(self) -> list[str]:
        """The pinned distributions at the test interpreter's versions."""
        return [f"{name}=={importlib.metadata.version(name)}" for name in self.pinned]

    def requirements(self) -> list[str]:
        """The install's requirements: rows/ with the extras, then the pins."""
        return [f"{ROWS_SOURCE}[{self.extras}]", *self.pins()]

    def identity(self) -> list[str]:
        """What the venv holds besides rows/'s sources, wherever the checkout is (clones of the
        same sources share one venv)."""
        return [f"ubunye-rows[{self.extras}]", *self.pins()]


#: The external side of Dagster Pipes: pandas and Spark frames, and the Pipes client library.
PIPES = Flavour(extras="pandas,spark,pipes")
#: A Spark executor's Python: the hash and what Spark's Python workers import (pyspark itself
#: reaches them from the Spark installation, as on any cluster), nothing else.
EXECUTOR = Flavour(extras="pandas", pinned=("pyarrow", "pandas", "numpy"))


def sources_digest(salt: Sequence[str], owns: Callable[[str], bool]) -> str:
    """A digest of the interpreter's version, ``salt``, and each file git tracks or would track
    (not ignored) whose repository-relative name ``owns`` accepts: an edit, committed or not,
    changes it; where the checkout is does not."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=REPOSITORY, capture_output=True, text=True, check=True,
    ).stdout.split("\0")  # fmt: skip
    digest = hashlib.sha256("\0".join([sys.version, *salt]).encode())
    for name in sorted(filter(None, listed)):
        path = REPOSITORY / name
        if path.is_file() and owns(name):
            digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def cache_root() -> Path:
    """Where external Pythons are kept: ``$UBUNYE_TEST_CACHE``, else the user's cache folder."""
    configured = os.environ.get("UBUNYE_TEST_CACHE")
    base = Path(configured) if configured else Path.home() / ".cache" / "ubunye-dagster-tests"
    return base / "external-python"


def built_once(ready: Path, build: Callable[[Path], None]) -> Path:
    """``ready``, made by ``build(folder)`` into a sibling folder renamed into place on first use
    (a half-built one is never used; test workers wait for the first to finish). Each use dates
    it now; a build first removes the siblings unused for ``UNUSED_DAYS``."""
    if not ready.exists():
        ready.parent.mkdir(parents=True, exist_ok=True)
        with (ready.parent / "build.lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not ready.exists():
                remove_unused(ready.parent, time.time() - UNUSED_DAYS * 86400)
                building = Path(tempfile.mkdtemp(prefix="building-", dir=ready.parent))
                build(building)
                try:
                    building.rename(ready)
                except OSError:  # another session finished first: use its build
                    shutil.rmtree(building, ignore_errors=True)
    os.utime(ready)
    return ready


def remove_unused(folder: Path, before: float) -> list[Path]:
    """Remove the entries (folders) of a cache folder last used before ``before`` (a time);
    the removed ones. Each is a build of sources since changed, or a build left half-made."""
    stale = [e for e in folder.iterdir() if e.is_dir() and e.stat().st_mtime < before]
    for entry in stale:
        shutil.rmtree(entry, ignore_errors=True)
    return stale


def external_python(flavour: Flavour = PIPES) -> Path:
    """The interpreter of a virtual environment holding only ubunye-rows and ``flavour``'s extras
    and pins (built on first use)."""
    ready = built_once(cache_root() / venv_key(flavour), lambda building: _build(building, flavour))
    return ready / "bin" / "python"


def venv_key(flavour: Flavour) -> str:
    """The cache entry of ``flavour``'s venv: the content of rows/ and what the flavour adds."""
    return sources_digest(flavour.identity(), lambda name: name.startswith("rows/"))


def executor_python() -> Path:
    """The interpreter for a Spark cluster's executors: ubunye-rows[pandas], pyarrow, pandas and
    numpy at the test interpreter's versions; no dagster, no ubunye-dagster, no pyspark."""
    return external_python(EXECUTOR)


def _build(building: Path, flavour: Flavour) -> None:
    """Make the venv in ``building`` and install rows/ with ``flavour`` into it."""
    uv = [sys.executable, "-m", "uv"]
    # The test interpreter's Python: Spark refuses workers of another minor version.
    subprocess.run(
        [*uv, "venv", "--quiet", "--allow-existing", "--python", sys.executable, str(building)],
        check=True,
    )
    # The venv is built in place of its final name's sibling, so its scripts' paths differ;
    # only its interpreter is used, which does not care. The kernel's crates come from the
    # editable install's compiler cache (rows/target): the build compiles the crate alone.
    env = {**os.environ, "CARGO_TARGET_DIR": str(ROWS_SOURCE / "target")}
    subprocess.run(
        [*uv, "pip", "install", "--quiet", "--python", str(building / "bin" / "python"),
         *flavour.requirements()],
        check=True, timeout=1800, env=env,
    )  # fmt: skip
