"""OpenLineage events for each finished run record, when the OpenLineage client is installed
(extra ``openlineage``) and configured; see ``ubunye_core.openlineage`` and
docs/openlineage.md."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from ubunye_core.openlineage.gate import emit_if_configured
from ubunye_core.records.model import RunRecord

log = logging.getLogger(__name__)


def send_finished_record(
    record: RunRecord,
    record_path: str,
    schemas: Mapping[tuple[str, str], Sequence[tuple[str, str]]] | None = None,
) -> int:
    """Emit the record's START and COMPLETE/FAIL events; 0 when the client is not installed or
    not configured. A backend that cannot be reached is logged as a warning, never raised."""
    return emit_if_configured(record, record_path=record_path, schemas=schemas, warn=log.warning)
