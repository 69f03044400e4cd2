"""Judging one materialisation's receipt against the previous one of the same asset and partition.

Pure and engine neutral (no Dagster, no frame library): plain values or run records
(``RunRecord``) in, a `Judgement` out. The drift sensor (`ubunye_dagster.drift.sensor`) reads
receipts from the Dagster event log; `ubunye-dagster lineage compare` judges two run records
with the same rules.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from enum import Enum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, field_validator

from ubunye_core.records.model import RunRecord, StepRecord
from ubunye_core.records.vocabulary import (
    DEFAULT_FLAG_REASONS,
    DRIFT_REASONS,
    INPUTS_CHANGED,
    INPUTS_UNKNOWN,
    SAME_INPUTS,
)

#: A drift reason as a settings field's type, so a schema lists the values (`DRIFT_REASONS`).
FlagReason = Literal["same inputs", "inputs unknown", "inputs changed"]
#: The explanation of an asset that reads no asset at all (ingestion from an API, a database, ...).
SOURCE_EXPLANATION = "source: reads no asset"
#: Data versions Dagster writes for an upstream it knows nothing about (never observed).
_PLACEHOLDER_VERSIONS = frozenset({"INITIAL", "NULL", "UNKNOWN"})

#: Run record `variables` the drift judgement reads: each upstream's Dagster data version by
#: asset key, each input's asset key by input name, and the asset's determinism declaration.
UPSTREAM_VERSIONS_VARIABLE = "upstream_data_versions"
INPUT_ASSET_KEYS_VARIABLE = "input_asset_keys"
DETERMINISTIC_VARIABLE = "deterministic"

#: Every materialisation metadata key the IO manager writes starts with this.
METADATA_PREFIX = "ubunye/"


class JudgementVerdict(str, Enum):
    """What the comparison of two receipts found, before any configuration decides on a flag."""

    UNCHANGED = "unchanged"
    EXPLAINED = "explained"
    DRIFT = "drift"
    NOT_JUDGED = "not judged"


class InputDigest(BaseModel):
    """One input as a receipt records it: where it came from and the digest of what was read."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    asset_key: str | None = None
    data_hash: str | None = None
    row_count: int | None = None
    hash_error: str | None = None


class DriftEvidence(BaseModel):
    """The fields of one materialisation's receipt that decide whether its data drifted.

    `inputs` is None when the receipt does not say what was read (unknown), and an empty
    mapping when the asset read nothing.
    """

    model_config = ConfigDict(frozen=True)

    data_hash: str | None = None
    hash_method: str | None = None
    hash_error: str | None = None
    inputs: dict[str, InputDigest] | None = None
    code_hash: str | None = None
    environment_hash: str | None = None
    config_hash: str | None = None
    #: Each upstream's Dagster data version by asset key ("a/b"); None when not known.
    upstream_versions: dict[str, str | None] | None = None
    #: The asset declared itself deterministic (`ubunye/deterministic: True`).
    deterministic: bool = False
    record_path: str | None = None

    @field_validator("upstream_versions", mode="before")
    @classmethod
    def _placeholders_are_no_version(cls, value: Any) -> Any:
        return upstream_versions_from(value) if value is not None else None

    @classmethod
    def from_record(cls, record: RunRecord, output_name: str | None = None) -> DriftEvidence:
        """The evidence a run record gives for one of its outputs.

        `output_name` may be left out when the record has exactly one output.
        """
        step = _output_step(record.outputs, output_name)
        return cls(
            data_hash=_text_or_none(step.data_hash),
            hash_method=_text_or_none(step.hash_method),
            hash_error=_text_or_none(step.hash_error),
            code_hash=_text_or_none(record.code_hash),
            environment_hash=_text_or_none(record.environment_hash),
            config_hash=_text_or_none(record.config_hash),
            inputs=_record_inputs(record),
            upstream_versions=upstream_versions_from(
                record.variables.get(UPSTREAM_VERSIONS_VARIABLE)
            ),
            deterministic=record.variables.get(DETERMINISTIC_VARIABLE) is True,
        )

    @property
    def lacks_evidence(self) -> bool:
        """True when a run record could fill something this receipt is missing."""
        return (
            self.code_hash is None
            or self.environment_hash is None
            or self.config_hash is None
            or self.inputs is None
            or (self.data_hash is not None and self.hash_method is None)
        )

    def filled_from_record(
        self, record: RunRecord, output_name: str | None = None
    ) -> DriftEvidence:
        """Fill only the fields this receipt lacks from a run record.

        The data hash itself is never taken from the record: the materialisation's own
        metadata is the claim being judged.
        """
        updates: dict[str, Any] = {}
        if self.code_hash is None:
            updates["code_hash"] = _text_or_none(record.code_hash)
        if self.environment_hash is None:
            updates["environment_hash"] = _text_or_none(record.environment_hash)
        if self.config_hash is None:
            updates["config_hash"] = _text_or_none(record.config_hash)
        if self.inputs is None:
            updates["inputs"] = _record_inputs(record)
        if self.upstream_versions is None:
            updates["upstream_versions"] = upstream_versions_from(
                record.variables.get(UPSTREAM_VERSIONS_VARIABLE)
            )
        if not self.deterministic:
            updates["deterministic"] = record.variables.get(DETERMINISTIC_VARIABLE) is True
        if self.hash_method is None and self.data_hash is not None:
            step = _matching_output(record.outputs, self.data_hash, output_name)
            if step is not None:
                updates["hash_method"] = _text_or_none(step.hash_method)
        return self.model_copy(update=updates)


class Judgement(BaseModel):
    """The outcome of comparing a receipt with its predecessor, with the words that explain it.

    `verdict` and `reason` never depend on configuration; `is_flagged` and `outcome` apply the
    flag reasons.
    """

    model_config = ConfigDict(frozen=True)

    verdict: JudgementVerdict
    reason: str
    moved_inputs: tuple[str, ...] = ()
    unknown_inputs: tuple[str, ...] = ()

    @property
    def drift_reason(self) -> str | None:
        """One of `DRIFT_REASONS` when the change can raise a flag, else None."""
        return self.reason if self.reason in DRIFT_REASONS else None

    def is_flagged(self, flag_reasons: Iterable[str] = DEFAULT_FLAG_REASONS) -> bool:
        """Whether this judgement raises a flag under the configured drift reasons."""
        return self.drift_reason is not None and self.reason in set(flag_reasons)

    @property
    def detail(self) -> str:
        """The reason with the upstreams it names: `inputs changed: raw/orders`."""
        names = self.moved_inputs if self.reason == INPUTS_CHANGED else self.unknown_inputs
        if self.reason in (INPUTS_CHANGED, INPUTS_UNKNOWN) and names:
            return f"{self.reason}: {', '.join(names)}"
        return self.reason

    def outcome(self, flag_reasons: Iterable[str] = DEFAULT_FLAG_REASONS) -> str:
        """The verdict in one phrase, as the docs, the CLI and the sensor show it:
        `explained (inputs changed: raw/orders)`, `drift (same inputs)`, `unchanged`."""
        if self.verdict is JudgementVerdict.UNCHANGED:
            return JudgementVerdict.UNCHANGED.value
        if self.is_flagged(flag_reasons):
            return f"drift ({self.detail})"
        if self.verdict is JudgementVerdict.DRIFT:
            return f"drift, not flagged ({self.detail})"
        return f"{self.verdict.value} ({self.detail})"


def carries_ubunye_metadata(values: Mapping[str, Any]) -> bool:
    """True when a materialisation was written with an Ubunye receipt."""
    return any(key.startswith(METADATA_PREFIX) for key in values)


def validate_flag_reasons(flag_reasons: Iterable[str]) -> tuple[str, ...]:
    """Return the reasons as a tuple, refusing any word that is not a drift reason."""
    reasons = tuple(flag_reasons)
    unknown = [reason for reason in reasons if reason not in DRIFT_REASONS]
    if unknown:
        raise ValueError(
            f"unknown drift reason(s) {unknown!r}: "
            f"flag_reasons takes any of {list(DRIFT_REASONS)!r}"
        )
    return reasons


def strongest_reason(reasons: Iterable[str]) -> str:
    """The strongest of several drift reasons (same inputs > inputs unknown > inputs changed)."""
    present = set(reasons)
    for reason in DRIFT_REASONS:
        if reason in present:
            return reason
    raise ValueError(f"no drift reason among {sorted(present)!r}")


def judge(
    current: DriftEvidence, previous: DriftEvidence | None, *, strict_sources: bool = False
) -> Judgement:
    """Compare a materialisation's receipt with the previous one of the same asset and partition.

    The one place the verdict is decided: the sensor, the asset check and `lineage compare` call
    it. `strict_sources` (or the asset's own `deterministic`) judges an asset that reads no
    asset strictly: changed data with nothing else changed is `same inputs`.
    """
    if previous is None:
        return Judgement(
            verdict=JudgementVerdict.NOT_JUDGED,
            reason="no previous materialisation of this asset and partition",
        )
    missing = _missing_data_hash(current, "this materialisation") or _missing_data_hash(
        previous, "the previous materialisation"
    )
    if missing:
        return Judgement(verdict=JudgementVerdict.NOT_JUDGED, reason=missing)
    if current.hash_method != previous.hash_method:
        return Judgement(
            verdict=JudgementVerdict.NOT_JUDGED,
            reason=(
                f"not comparable: hash methods differ ({previous.hash_method or 'none'} before, "
                f"{current.hash_method or 'none'} now)"
            ),
        )
    if current.data_hash == previous.data_hash:
        return Judgement(verdict=JudgementVerdict.UNCHANGED, reason="data unchanged")
    states = {
        "code": _state(previous.code_hash, current.code_hash),
        "environment": _state(previous.environment_hash, current.environment_hash),
        # A config hash missing on either side (a receipt from before it was kept) explains
        # nothing, and does not stop the judgement either.
        "config": _state(previous.config_hash, current.config_hash) or False,
    }
    moved = [name for name, state in states.items() if state]
    if moved:
        return Judgement(
            verdict=JudgementVerdict.EXPLAINED, reason=f"{' and '.join(moved)} changed"
        )
    unknown = [name for name, state in states.items() if state is None]
    if unknown:
        return Judgement(
            verdict=JudgementVerdict.NOT_JUDGED,
            reason=f"data changed but the {' and '.join(unknown)} hash is missing, so the "
            "change cannot be attributed",
        )
    strict = strict_sources or current.deterministic
    return _judge_upstreams(current, previous, strict=strict)


def judge_records(
    previous: RunRecord, current: RunRecord, *, strict_sources: bool = False
) -> dict[str, Judgement]:
    """Judge each output present in both run records, current against previous.

    The rules are `judge`'s; two records of different partitions are never compared, as the
    sensor never compares them.
    """
    shared = [name for name in current.output_names if name in set(previous.output_names)]
    before, now = previous.partition_key, current.partition_key
    if before != now:
        apart = Judgement(
            verdict=JudgementVerdict.NOT_JUDGED,
            reason=(
                f"different partitions ({before or 'unpartitioned'} before, "
                f"{now or 'unpartitioned'} now): a partition is only compared with itself"
            ),
        )
        return dict.fromkeys(shared, apart)
    return {
        name: judge(
            DriftEvidence.from_record(current, name),
            DriftEvidence.from_record(previous, name),
            strict_sources=strict_sources,
        )
        for name in shared
    }


class _Upstream(BaseModel):
    """One upstream as a receipt saw it: the digest read through the IO manager and/or the data
    version Dagster recorded for it."""

    model_config = ConfigDict(frozen=True)

    data_hash: str | None = None
    data_version: str | None = None
    loaded: bool = False


def _upstreams(receipt: DriftEvidence) -> dict[str, _Upstream] | None:
    """Every upstream of a receipt by asset key (by input name for an op input); None when the
    receipt says nothing about what it read."""
    if receipt.inputs is None and receipt.upstream_versions is None:
        return None
    view: dict[str, _Upstream] = {}
    for name, entry in (receipt.inputs or {}).items():
        view[entry.asset_key or name] = _Upstream(data_hash=entry.data_hash, loaded=True)
    for key, version in (receipt.upstream_versions or {}).items():
        known = view.get(key, _Upstream())
        view[key] = known.model_copy(update={"data_version": version})
    return view


def _upstream_moved(before: _Upstream, now: _Upstream) -> bool | None:
    """True when an upstream moved, False when it held, None when it cannot be told."""
    if before.data_hash is not None and now.data_hash is not None:
        return before.data_hash != now.data_hash
    if before.data_version is not None and now.data_version is not None:
        return before.data_version != now.data_version
    return None


def _appeared_or_disappeared(
    key: str,
    now: Mapping[str, _Upstream],
    before: Mapping[str, _Upstream],
    current: DriftEvidence,
    previous: DriftEvidence,
) -> bool | None:
    """An upstream on one side only moved, unless the other side could not have listed it."""
    seen = now.get(key) or before[key]
    other = previous if key in now else current
    listed = other.inputs is not None if seen.loaded else other.upstream_versions is not None
    return True if listed else None


def _judge_upstreams(current: DriftEvidence, previous: DriftEvidence, *, strict: bool) -> Judgement:
    """Data moved under the same code, environment and config: the upstreams decide the reason."""
    now, before = _upstreams(current), _upstreams(previous)
    if now is None or before is None:
        return Judgement(verdict=JudgementVerdict.DRIFT, reason=INPUTS_UNKNOWN)
    if not now and not before and not strict:
        return Judgement(verdict=JudgementVerdict.EXPLAINED, reason=SOURCE_EXPLANATION)
    moved: list[str] = []
    unknown: list[str] = []
    for key in sorted(set(now) | set(before)):
        if key in now and key in before:
            state = _upstream_moved(before[key], now[key])
        else:
            state = _appeared_or_disappeared(key, now, before, current, previous)
        if state:
            moved.append(key)
        elif state is None:
            unknown.append(key)
    if moved:
        return Judgement(
            verdict=JudgementVerdict.EXPLAINED,
            reason=INPUTS_CHANGED,
            moved_inputs=tuple(moved),
            unknown_inputs=tuple(unknown),
        )
    if unknown:
        return Judgement(
            verdict=JudgementVerdict.DRIFT, reason=INPUTS_UNKNOWN, unknown_inputs=tuple(unknown)
        )
    return Judgement(verdict=JudgementVerdict.DRIFT, reason=SAME_INPUTS)


def _state(before: str | None, now: str | None) -> bool | None:
    """True when a hash moved, False when it held, None when either side lacks it."""
    if before is None or now is None:
        return None
    return before != now


def _missing_data_hash(receipt: DriftEvidence, which: str) -> str | None:
    if receipt.data_hash is not None:
        return None
    why = f": {receipt.hash_error}" if receipt.hash_error else ""
    return f"{which} has no data hash{why}"


def _text_or_none(value: Any) -> str | None:
    if value is None:
        return None
    text = str(value)
    return text or None


def _mapping_or_json(value: Any) -> Mapping[str, Any] | None:
    """A mapping given as itself or as its JSON text; None for anything else."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return None
    return value if isinstance(value, Mapping) else None


def inputs_from_document(value: Any) -> dict[str, InputDigest] | None:
    """Parse an inputs document `{name: {asset_key, data_hash, row_count, hash_error}}` (a
    mapping or its JSON text); None when absent or unreadable."""
    value = _mapping_or_json(value)
    if value is None:
        return None
    inputs: dict[str, InputDigest] = {}
    for name, entry in value.items():
        inputs[str(name)] = (
            InputDigest.model_validate(entry) if isinstance(entry, Mapping) else InputDigest()
        )
    return inputs


def upstream_versions_from(value: Any) -> dict[str, str | None] | None:
    """Upstream data versions `{asset key: version}` (a mapping or its JSON text); a version
    Dagster writes for an upstream it knows nothing about (`INITIAL`, `NULL`, `UNKNOWN`) counts
    as none. None when absent or unreadable."""
    value = _mapping_or_json(value)
    if value is None:
        return None
    return {
        str(key): None if version is None or str(version) in _PLACEHOLDER_VERSIONS else str(version)
        for key, version in value.items()
    }


def _record_inputs(record: RunRecord) -> dict[str, InputDigest]:
    """A run record's input steps, with the asset each came from when the record names it."""
    asset_keys = record.variables.get(INPUT_ASSET_KEYS_VARIABLE)
    asset_keys = asset_keys if isinstance(asset_keys, Mapping) else {}
    return {
        step.name: InputDigest(
            asset_key=_text_or_none(asset_keys.get(step.name)),
            data_hash=_text_or_none(step.data_hash),
            row_count=step.row_count,
            hash_error=_text_or_none(step.hash_error),
        )
        for step in record.inputs
        if step.name
    }


def _matching_output(
    steps: list[StepRecord], data_hash: str, output_name: str | None
) -> StepRecord | None:
    """The record's output step that this materialisation describes (by digest, else by name)."""
    for step in steps:
        if step.data_hash == data_hash:
            return step
    for step in steps:
        if output_name is not None and step.name == output_name:
            return step
    return steps[0] if len(steps) == 1 else None


def _output_step(steps: list[StepRecord], output_name: str | None) -> StepRecord:
    """The named output step of a record, or its only one; a clear error otherwise."""
    names = [step.name for step in steps]
    if output_name is not None:
        for step in steps:
            if step.name == output_name:
                return step
        raise ValueError(f"the record has no output {output_name!r} (outputs: {names})")
    if len(steps) != 1:
        raise ValueError(f"the record has {len(steps)} outputs {names}: name the one to judge")
    return steps[0]
