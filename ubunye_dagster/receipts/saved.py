"""An output's receipt once its record is saved: what the judgements made in its step read."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ubunye_core.records.model import RunRecord, StepRecord


@dataclass(frozen=True)
class SavedReceipt:
    """A saved asset output: its record, the output's step, where the record is, the keys of
    its inputs, and the receipt's metadata about to be added to the materialisation."""

    partition_key: str | None
    record: RunRecord
    output: StepRecord
    record_path: str
    input_asset_keys: Mapping[str, str | None]
    metadata: Mapping[str, Any]


@dataclass(frozen=True)
class Judged:
    """A saved receipt's judgement in its step: metadata shown first in the UI, and what to
    report once the materialisation's metadata is added."""

    metadata: Mapping[str, Any]
    report: Callable[[], None]
