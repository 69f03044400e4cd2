"""How the drift judgement is made and how much work one sensor tick may do: the settings the
drift sensor, the reproducibility checks and the write path's verdict share."""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ubunye_core.locations import StoreAccess
from ubunye_core.records import drift
from ubunye_dagster.drift.hooks import DEFAULT_HOOK_TIMEOUT_SECONDS


class DriftSettings(BaseModel):
    """How the drift sensor judges and how much work one tick may do."""

    model_config = ConfigDict(frozen=True)

    flag_reasons: tuple[str, ...] = drift.DEFAULT_FLAG_REASONS
    strict_sources: bool = False
    #: Asset keys ("a/b") whose definitions declare `ubunye/deterministic: True`.
    deterministic_keys: frozenset[str] = frozenset()
    # Dagster refuses to fetch more than 10,000 event records in one query.
    max_events_per_tick: int = Field(default=200, ge=1, le=10_000)
    tick_time_budget_seconds: float | None = Field(default=30.0, ge=0)
    use_lineage_store: bool = True
    #: Time a tick gives its `on_drift` calls, all together.
    on_drift_timeout_seconds: float = Field(default=DEFAULT_HOOK_TIMEOUT_SECONDS, gt=0)
    #: How record files and stored data are read: the store's options, where the IO manager's
    #: are set (kept out of the check's spec metadata, which the UI shows).
    access: StoreAccess = Field(default_factory=StoreAccess, repr=False)

    @field_validator("flag_reasons", mode="before")
    @classmethod
    def _known_reasons(cls, value: Iterable[str]) -> tuple[str, ...]:
        if isinstance(value, str):
            value = (value,)
        return drift.validate_flag_reasons(value)
