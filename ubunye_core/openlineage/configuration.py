"""Whether OpenLineage is configured where its client looks, answered without importing the
client (importing it costs every process about a quarter of a second of CPU)."""

from __future__ import annotations

import os


def configuration_offered() -> bool:
    """Whether anything the client reads its configuration from is there: an ``OPENLINEAGE``
    variable (``OPENLINEAGE_CONFIG`` and ``OPENLINEAGE_URL`` among them) or an
    ``openlineage.yml`` where it looks. Without one, no client is built (a probe costs a small
    asset more than its record's file write)."""
    if any(name.startswith("OPENLINEAGE") for name in os.environ):
        return True
    folders = (os.getcwd(), os.path.expanduser(os.path.join("~", ".openlineage")))
    return any(os.path.isfile(os.path.join(folder, "openlineage.yml")) for folder in folders)
