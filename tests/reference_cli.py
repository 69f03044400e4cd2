"""The reference implementation's command line, as the tests run it: the ``ubunye`` console
script of ubunye-engine (a dev dependency) installed beside the interpreter running the tests."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path


def reference_cli() -> str:
    """The `ubunye` console script next to this Python first (a venv need not be on PATH),
    else the one PATH finds."""
    beside = Path(sys.executable).with_name("ubunye")
    found = str(beside) if beside.exists() else shutil.which("ubunye")
    assert found, "the reference CLI `ubunye` (ubunye-engine, a dev dependency) is not installed"
    return found
