"""Sample evidence shared by the compare and CLI tests (not a test module)."""

from __future__ import annotations

from typing import Any


def sample_environment(**packages: str) -> dict[str, Any]:
    """An ``environment`` as a record carries it: a Linux CPython 3.11 with ``packages``."""
    return {
        "python": "3.11.7",
        "implementation": "CPython",
        "platform": "linux",
        "machine": "x86_64",
        "packages": dict(packages),
    }
