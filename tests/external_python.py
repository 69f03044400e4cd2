"""A Python for the external side of Dagster Pipes: ubunye-rows (from this repository's rows/)
and dagster-pipes, and never dagster, as a Databricks or EMR job would have.

Built once per content of rows/ into a cache folder (a virtual environment, by pip from the
local source; pip's own cache makes a rebuild quick), and reused while rows/ is unchanged.
"""

from __future__ import annotations

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
    building = Path(tempfile.mkdtemp(prefix="building-", dir=root))
    subprocess.run([sys.executable, "-m", "venv", str(building)], check=True)
    # The venv is built in place of its final name's sibling, so its scripts' paths differ;
    # only its interpreter is used, which does not care.
    subprocess.run(
        [str(building / "bin" / "python"), "-m", "pip", "install", "-q",
         f"{ROWS_SOURCE}[{EXTRAS}]"],
        check=True, timeout=1800,
    )  # fmt: skip
    try:
        building.rename(ready)
    except OSError:  # another session finished first: use its build
        shutil.rmtree(building, ignore_errors=True)
    return python
