"""Where a path is: the one test of whether a path (a UPath, or a plain local path) is local."""

from __future__ import annotations

from typing import Any

#: The fsspec protocols of the local file system ("" is a plain path).
LOCAL_PROTOCOLS = ("", "file", "local")


def is_local(path: Any) -> bool:
    """True when ``path`` (a UPath, or a ``pathlib`` path) is on the local file system."""
    return getattr(path, "protocol", "") in LOCAL_PROTOCOLS
