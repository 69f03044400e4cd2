"""The example shop's assets, one module per frame library."""

from __future__ import annotations

import dagster as dg


def upstream(**keys: str) -> dict[str, dg.AssetIn]:
    """An asset's ``ins``: each parameter name with the key it reads, written ``"group/name"``."""
    return {name: dg.AssetIn(key=dg.AssetKey.from_user_string(key)) for name, key in keys.items()}
