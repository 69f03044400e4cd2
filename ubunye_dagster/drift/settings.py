"""The drift settings, each field with its default and its bounds declared once: how a
materialisation is judged (`DriftJudging`, what the check's spec shows), how much one sensor tick
may do (`DriftTerms`), the sensor's definition (`DriftSensorSettings`, ``build_drift_sensor``'s
arguments and ``ReceiptSettings.drift_sensor``), and what the sensor, the checks and the write
path's verdict judge with (`DriftSettings`: the terms, the assets declared deterministic and how
the store is read)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from pydantic import Field, TypeAdapter, field_validator

from ubunye_core.locations import StoreAccess
from ubunye_core.records import drift
from ubunye_dagster.drift.hooks import DEFAULT_HOOK_TIMEOUT_SECONDS
from ubunye_dagster.strict_fields import StrictSettings

#: The entry of a check's settings (its spec's metadata) that says the asset declares
#: ``ubunye/deterministic``: judged strictly whatever it reads.
DETERMINISTIC_ENTRY = "deterministic"
#: Dagster refuses to fetch more than this many event records in one query.
MAX_EVENTS_PER_QUERY = 10_000


class DriftJudging(StrictSettings):
    """How a materialisation is judged against its predecessor: the settings a
    ``ubunye_reproducible`` check's spec shows (its metadata, in the UI)."""

    # A sequence, not a tuple: the dg component model takes no `tuple[T, ...]` in a settings
    # object; the validator makes it a tuple all the same.
    flag_reasons: Sequence[drift.FlagReason] = drift.DEFAULT_FLAG_REASONS
    strict_sources: bool = False
    use_lineage_store: bool = True

    @field_validator("flag_reasons", mode="before")
    @classmethod
    def _known_reasons(cls, value: Iterable[str]) -> tuple[str, ...]:
        if isinstance(value, str):
            value = (value,)
        return drift.validate_flag_reasons(value)


class DriftTerms(DriftJudging):
    """How drift is judged and how much work one sensor tick may do."""

    # Bounds in validators, not `Field(ge=...)`: the dg component model takes no constrained
    # type in a settings object.
    max_events_per_tick: int = 200
    tick_time_budget_seconds: float | None = 30.0
    on_drift_timeout_seconds: float = Field(
        default=DEFAULT_HOOK_TIMEOUT_SECONDS,
        description="Seconds a tick waits for its on_drift calls, all together.",
    )

    @field_validator("max_events_per_tick")
    @classmethod
    def _what_dagster_fetches(cls, value: int) -> int:
        if not 1 <= value <= MAX_EVENTS_PER_QUERY:
            raise ValueError(f"must be from 1 to {MAX_EVENTS_PER_QUERY:,}, not {value}")
        return value

    @field_validator("tick_time_budget_seconds")
    @classmethod
    def _not_negative(cls, value: float | None) -> float | None:
        if value is not None and value < 0:
            raise ValueError(f"must be 0 or more seconds (None: no limit), not {value}")
        return value

    @field_validator("on_drift_timeout_seconds")
    @classmethod
    def _positive(cls, value: float) -> float:
        if value <= 0:
            raise ValueError(f"must be more than 0 seconds, not {value}")
        return value


class DriftSensorSettings(DriftTerms):
    """The arguments of ``build_drift_sensor`` that are settings (the watched assets, the
    ``on_drift`` hook and the store's options aside)."""

    name: str = "ubunye_drift_sensor"
    alert_job: str | None = Field(default=None, description="Name of a job run on each flag.")
    minimum_interval_seconds: int = 60
    default_status: Literal["STOPPED", "RUNNING"] = "STOPPED"


class DriftSettings(DriftTerms):
    """What the drift sensor, the reproducibility checks and the write path's verdict judge with:
    the terms, the assets declared deterministic, and how records are read."""

    #: Asset keys ("a/b") whose definitions declare `ubunye/deterministic: True`.
    deterministic_keys: frozenset[str] = frozenset()
    #: How record files and stored data are read: the store's options, where the IO manager's
    #: are set (kept out of the check's spec metadata, which the UI shows).
    access: StoreAccess = Field(default_factory=StoreAccess, repr=False)

    @classmethod
    def of_terms(
        cls,
        terms: DriftJudging,
        deterministic_keys: Iterable[str] = (),
        storage_options: Mapping[str, Any] | None = None,
    ) -> DriftSettings:
        """``terms`` (the judging ones, or every term) judging the assets declared
        deterministic, reading records with ``storage_options``."""
        shared = set(DriftTerms.model_fields) & set(type(terms).model_fields)
        return cls(
            **{name: getattr(terms, name) for name in sorted(shared)},
            deterministic_keys=frozenset(deterministic_keys),
            access=StoreAccess(storage_options=dict(storage_options or {})),
        )

    def check_metadata(self, asset_key: str) -> dict[str, Any]:
        """How the check of asset ``asset_key`` ("a/b") judges it, as its spec's metadata holds
        it: the judging settings, and whether the asset declares itself deterministic."""
        shown = self.model_dump(include=set(DriftJudging.model_fields), mode="json")
        return {**shown, DETERMINISTIC_ENTRY: asset_key in self.deterministic_keys}

    @classmethod
    def of_check_metadata(cls, shown: Mapping[str, Any], asset_key: str) -> DriftSettings:
        """The settings a check declared with ``check_metadata`` judges asset ``asset_key``
        with (an entry that is not a judging setting is refused)."""
        judging = dict(shown)
        deterministic = TypeAdapter(bool).validate_python(judging.pop(DETERMINISTIC_ENTRY, False))
        declared = DriftJudging.model_validate(judging)
        return cls.of_terms(declared, {asset_key} if deterministic else ())
