"""The store's fsspec options as the command line and the environment give them: JSON text read
as an object. Free of heavy imports, so the CLI can parse its options before it opens anything."""

from __future__ import annotations

import json
import os
from typing import Any

#: The environment variable holding the store's fsspec options as a JSON object.
STORAGE_OPTIONS_ENV = "UBUNYE_STORAGE_OPTIONS"


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
