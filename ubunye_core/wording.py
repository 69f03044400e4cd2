"""Counts said in words, the noun agreeing with the number: ``1 run``, ``2 runs``, ``3 rows``."""

from __future__ import annotations


def counted(count: int, singular: str, plural: str | None = None) -> str:
    """``count`` with thousands separators and the noun that agrees with it (``plural``, by
    default ``singular`` + ``s``, for any count but 1)."""
    noun = singular if count == 1 else (plural or singular + "s")
    return f"{count:,} {noun}"
