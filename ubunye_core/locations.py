"""How a store's locations are opened: the fsspec options (credentials, endpoint) that every
reader and writer of one project's data and records is given, from the one place they are set.

``StoreAccess(storage_options={...}).path("s3://bucket/x")`` is that URL as a ``UPath`` carrying
the options; a local path takes none. The CLI reads the same options from ``--storage-options``
or the ``UBUNYE_STORAGE_OPTIONS`` environment variable, as JSON.
"""

from __future__ import annotations

import json
import os
from os import PathLike
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from upath import UPath

#: The environment variable holding the store's fsspec options as a JSON object.
STORAGE_OPTIONS_ENV = "UBUNYE_STORAGE_OPTIONS"

_LOCAL_PROTOCOLS = frozenset({"", "file", "local"})


class StoreAccess(BaseModel):
    """The fsspec options of the object store a project's data and records are on."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # Credentials: never shown in a repr, a log line or a check's metadata.
    storage_options: dict[str, Any] = Field(default_factory=dict, repr=False)

    def path(self, location: str | PathLike[str] | UPath) -> UPath:
        """``location`` as a ``UPath`` with these options when it is on an object store; a
        ``UPath`` that already has options, and a local path, are kept as they are."""
        if isinstance(location, UPath) and (location.storage_options or _is_local(location)):
            return location
        text = str(location)
        if not self.storage_options or "://" not in text or _is_local(UPath(text)):
            return UPath(location)
        return UPath(text, **self.storage_options)


def _is_local(path: UPath) -> bool:
    return path.protocol in _LOCAL_PROTOCOLS


def storage_options_from_json(text: str | None, source: str) -> dict[str, Any]:
    """The JSON object ``text`` read as fsspec options (``{}`` for none or empty); ValueError
    naming ``source`` (the flag or variable it came from) when it is not a JSON object."""
    if text is None or not text.strip():
        return {}
    try:
        options = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{source} is not JSON: {exc}") from exc
    if isinstance(options, dict):
        return options
    raise ValueError(f"{source} is not a JSON object ({{...}}): {text[:60]!r}")


def storage_options_from_env() -> dict[str, Any]:
    """The options in ``$UBUNYE_STORAGE_OPTIONS`` (``{}`` when it is unset)."""
    return storage_options_from_json(os.environ.get(STORAGE_OPTIONS_ENV), STORAGE_OPTIONS_ENV)
