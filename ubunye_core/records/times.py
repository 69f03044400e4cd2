"""Times as records and listings write them: ISO-8601 text read back as an aware datetime.

The one reader of record times: the store's order and ``--since``, ``lineage compare``'s
earlier-first, OpenLineage event times and a closing record's duration all read through it.
"""

from __future__ import annotations

from datetime import date, datetime, timezone
from typing import Any


def instant(value: Any) -> datetime | None:
    """An aware datetime for ISO text, a datetime or a date (naive ones taken as UTC); else None."""
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, date):
        moment = datetime(value.year, value.month, value.day)
    elif isinstance(value, str):
        text = value.strip()
        # Python 3.10 reads no "Z" suffix; the reference writes "+00:00", Dagster users write "Z".
        text = text[:-1] + "+00:00" if text[-1:] in ("Z", "z") else text
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            return None
    else:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def required_instant(text: str) -> datetime:
    """``instant`` of ISO text that must be one; a ValueError naming the text otherwise."""
    moment = instant(text)
    if moment is None:
        raise ValueError(f"not an ISO-8601 time: {text!r}")
    return moment
