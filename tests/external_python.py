"""Pythons beside the test interpreter that hold ubunye-rows (this repository's rows/) and never
dagster, as teams' remote sides have them: the external side of Dagster Pipes (a Databricks or
EMR job, with dagster-pipes), and a Spark cluster's executors (pandas, pyarrow, numpy).

Each is a virtual environment built by uv from the local source (a non-editable install: the
kernel is compiled into the venv, so nothing in it reads the repository) on the test
interpreter's Python version, once per content of rows/ and per flavour, in a cache folder, and
reused while rows/ is unchanged.
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
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROWS_SOURCE = Path(__file__).resolve().parents[1] / "rows"


@dataclass(frozen=True)
class Flavour:
    """What one kind of external Python holds besides ubunye-rows."""

    #: ubunye-rows' extras to install.
    extras: str
    #: Distributions pinned to the test interpreter's versions (a driver and its executors
    #: exchange Arrow batches and pickles, so they run the same versions).
    pinned: tuple[str, ...] = ()

    def requirements(self) -> list[str]:
        """The install's requirements: rows/ with the extras, then the pins."""
        pins = [f"{name}=={importlib.metadata.version(name)}" for name in self.pinned]
        return [f"{ROWS_SOURCE}[{self.extras}]", *pins]


#: The external side of Dagster Pipes: pandas and Spark frames, and the Pipes client library.
PIPES = Flavour(extras="pandas,spark,pipes")
#: A Spark executor's Python: the hash and what Spark's Python workers import (pyspark itself
#: reaches them from the Spark installation, as on any cluster), nothing else.
EXECUTOR = Flavour(extras="pandas", pinned=("pyarrow", "pandas", "numpy"))


def _source_digest(root: Path, flavour: Flavour) -> str:
    """A digest of rows/'s sources (Python, Rust and build files) and of the flavour, so an edit
    or another flavour builds anew."""
    digest = hashlib.sha256("\0".join([sys.version, *flavour.requirements()]).encode())
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        skipped = {"__pycache__", "target", "build"} & set(relative.parts)
        if (
            path.is_file()
            and not skipped
            and not any(p.endswith(".egg-info") for p in relative.parts)
            and path.suffix != ".so"
        ):
            digest.update(relative.as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def cache_root() -> Path:
    """Where external Pythons are kept: ``$UBUNYE_TEST_CACHE``, else the user's cache folder."""
    configured = os.environ.get("UBUNYE_TEST_CACHE")
    base = Path(configured) if configured else Path.home() / ".cache" / "ubunye-dagster-tests"
    return base / "external-python"


def built_once(ready: Path, build: Callable[[Path], None]) -> Path:
    """``ready``, made by ``build(folder)`` into a sibling folder renamed into place on first use
    (a half-built one is never used; test workers wait for the first to finish)."""
    if ready.exists():
        return ready
    ready.parent.mkdir(parents=True, exist_ok=True)
    with (ready.parent / "build.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not ready.exists():
            building = Path(tempfile.mkdtemp(prefix="building-", dir=ready.parent))
            build(building)
            try:
                building.rename(ready)
            except OSError:  # another session finished first: use its build
                shutil.rmtree(building, ignore_errors=True)
    return ready


def external_python(flavour: Flavour = PIPES) -> Path:
    """The interpreter of a virtual environment holding only ubunye-rows and ``flavour``'s extras
    and pins (built on first use)."""
    ready = cache_root() / _source_digest(ROWS_SOURCE, flavour)
    return built_once(ready, lambda building: _build(building, flavour)) / "bin" / "python"


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
