"""OpenLineage's gate: a record's events sent only where the client is configured, the client
imported only then."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from ubunye_core.openlineage.configuration import configuration_offered
from ubunye_core.records.model import RunRecord


def emit_if_configured(
    record: RunRecord,
    *,
    record_path: str,
    schemas: Mapping[tuple[str, str], Sequence[tuple[str, str]]] | None,
    warn: Callable[[str], None],
) -> int:
    """The record's events sent by ``events.emit_run_events`` when a configuration is offered;
    0, the client never imported, when none is or the ``openlineage`` extra is not installed."""
    if not configuration_offered():
        return 0
    try:
        from ubunye_core.openlineage import events
    except ImportError:  # the extra is not installed: no events, nothing to configure
        return 0
    return events.emit_run_events(record, record_path=record_path, schemas=schemas, warn=warn)
