"""OpenLineage events for each finished run record, when the OpenLineage client is installed
(extra ``openlineage``) and configured; see ``ubunye_core.openlineage.events`` and
docs/openlineage.md. The client is imported at the first record that finds a configuration."""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping, Sequence
from types import ModuleType

from ubunye_core.openlineage.configuration import configuration_offered
from ubunye_core.records.model import RunRecord

log = logging.getLogger(__name__)


@functools.cache
def _events_module() -> ModuleType | None:
    """``ubunye_core.openlineage.events``, or None when the openlineage extra is not installed."""
    try:
        from ubunye_core.openlineage import events
    except ImportError:  # the extra is not installed: no events, nothing to configure
        return None
    return events


def send_finished_record(
    record: RunRecord,
    record_path: str,
    schemas: Mapping[tuple[str, str], Sequence[tuple[str, str]]] | None = None,
) -> int:
    """Emit the record's START and COMPLETE/FAIL events; 0 when the client is not installed or
    not configured. A backend that cannot be reached is logged as a warning, never raised."""
    if not configuration_offered():
        return 0
    events = _events_module()
    if events is None:
        return 0
    return events.emit_run_events(
        record, record_path=record_path, schemas=schemas, warn=log.warning
    )
