"""How a store's locations are opened: the fsspec options (credentials, endpoint) that every
reader and writer of one project's data and records is given, from the one place they are set.

``StoreAccess(storage_options={...}).path("s3://bucket/x")`` is that URL as a ``UPath`` carrying
the options; a local path takes none. The CLI reads the same options from ``--storage-options``
or the ``UBUNYE_STORAGE_OPTIONS`` environment variable, as JSON.
"""

from __future__ import annotations

from os import PathLike
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from upath import UPath

from ubunye_core.paths import is_local
from ubunye_core.storage_options import STORAGE_OPTIONS_ENV as STORAGE_OPTIONS_ENV
from ubunye_core.storage_options import storage_options_from_env as storage_options_from_env
from ubunye_core.storage_options import storage_options_from_json as storage_options_from_json


class StoreAccess(BaseModel):
    """The fsspec options of the object store a project's data and records are on."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # Credentials: never shown in a repr, a log line or a check's metadata.
    storage_options: dict[str, Any] = Field(default_factory=dict, repr=False)

    def path(self, location: str | PathLike[str] | UPath) -> UPath:
        """``location`` as a ``UPath`` with these options when it is on an object store; a
        ``UPath`` that already has options, and a local path, are kept as they are."""
        if isinstance(location, UPath) and (location.storage_options or is_local(location)):
            return location
        text = str(location)
        if not self.storage_options or "://" not in text or is_local(UPath(text)):
            return UPath(location)
        return UPath(text, **self.storage_options)
