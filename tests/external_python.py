"""A Python for the external side of Dagster Pipes: ubunye-rows (from this repository's rows/)
and dagster-pipes, and never dagster, as a Databricks or EMR job would have.

Built once per content of rows/ into a cache folder (a virtual environment, by uv from the local
source), and reused while rows/ is unchanged.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROWS_SOURCE = Path(__file__).resolve().parents[1] / "rows"
#: The extras the external side installs: pandas and Spark frames, and the Pipes client library.
EXTRAS = "pandas,spark,pipes"


def _source_digest(root: Path) -> str:
    """A digest of rows/'s sources (Python, Rust and build files), so an edit rebuilds."""
    digest = hashlib.sha256(EXTRAS.encode())
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        skipped = {"__pycache__", "target", "build"} & set(relative.parts)
        if (
            path.is_file()
            and not skipped
            and not any(p.endswith(".egg-info") for p in relative.parts)
        ):
            digest.update(relative.as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def cache_root() -> Path:
    """Where external Pythons are kept: ``$UBUNYE_TEST_CACHE``, else the user's cache folder."""
    configured = os.environ.get("UBUNYE_TEST_CACHE")
    base = Path(configured) if configured else Path.home() / ".cache" / "ubunye-dagster-tests"
    return base / "external-python"


def external_python() -> Path:
    """The interpreter of a virtual environment holding only ubunye-rows[pandas,spark,pipes]
    (built on first use, atomically: a half-built one is never used)."""
    root = cache_root()
    ready = root / _source_digest(ROWS_SOURCE)
    python = ready / "bin" / "python"
    if python.exists():
        return python
    root.mkdir(parents=True, exist_ok=True)
    # Test workers (pytest -n) wait for one another here: the first builds, the rest reuse it.
    with (root / "build.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not python.exists():
            _build(ready)
    return python


def _build(ready: Path) -> None:
    """Build the venv beside ``ready``, then rename it into place."""
    building = Path(tempfile.mkdtemp(prefix="building-", dir=ready.parent))
    uv = [sys.executable, "-m", "uv"]
    subprocess.run([*uv, "venv", "--quiet", "--allow-existing", str(building)], check=True)
    # The venv is built in place of its final name's sibling, so its scripts' paths differ;
    # only its interpreter is used, which does not care. The kernel's crates come from the
    # editable install's compiler cache (rows/target): the build compiles the crate alone.
    env = {**os.environ, "CARGO_TARGET_DIR": str(ROWS_SOURCE / "target")}
    subprocess.run(
        [*uv, "pip", "install", "--quiet", "--python", str(building / "bin" / "python"),
         f"{ROWS_SOURCE}[{EXTRAS}]"],
        check=True, timeout=1800, env=env,
    )  # fmt: skip
    try:
        building.rename(ready)
    except OSError:  # another session finished first: use its build
        shutil.rmtree(building, ignore_errors=True)
