"""Judging one materialisation's receipt against the previous one of the same asset and partition.

Pure and engine neutral (no Dagster, no frame library): plain values or run records in, a
`Judgement` out. The drift sensor (`ubunye_dagster.sensor`) reads receipts from the Dagster event
log; `ubunye-dagster lineage compare` judges two run records with the same rules.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from enum import Enum
from typing import Any

from pydantic import BaseModel, ConfigDict

#: The data moved while code, environment and every input digest stayed put: non-determinism.
SAME_INPUTS = "same inputs"
#: The data moved under the same code and environment, and at least one input digest moved.
INPUTS_CHANGED = "inputs changed"
#: The data moved under the same code and environment, and the inputs cannot be compared.
INPUTS_UNKNOWN = "inputs unknown"
#: Every drift reason, strongest signal first.
DRIFT_REASONS: tuple[str, ...] = (SAME_INPUTS, INPUTS_UNKNOWN, INPUTS_CHANGED)

#: Every materialisation metadata key the IO manager writes starts with this.
METADATA_PREFIX = "ubunye/"


class Verdict(str, Enum):
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
    record_path: str | None = None

    @classmethod
    def from_record(
        cls, record: Mapping[str, Any], output_name: str | None = None
    ) -> DriftEvidence:
        """The evidence a run record (v2 JSON as a dict) gives for one of its outputs.

        `output_name` may be left out when the record has exactly one output.
        """
        step = _output_step(record.get("outputs"), output_name)
        inputs = record.get("inputs")
        return cls(
            data_hash=_text_or_none(step.get("data_hash")),
            hash_method=_text_or_none(step.get("hash_method")),
            hash_error=_text_or_none(step.get("hash_error")),
            code_hash=_text_or_none(record.get("code_hash")),
            environment_hash=_text_or_none(record.get("environment_hash")),
            inputs=_inputs_from_record_steps(inputs) if isinstance(inputs, list) else None,
        )

    @property
    def lacks_evidence(self) -> bool:
        """True when a run record could fill something this receipt is missing."""
        return (
            self.code_hash is None
            or self.environment_hash is None
            or self.inputs is None
            or (self.data_hash is not None and self.hash_method is None)
        )

    def filled_from_record(
        self, record: Mapping[str, Any], output_name: str | None = None
    ) -> DriftEvidence:
        """Fill only the fields this receipt lacks from a run record (v2 JSON as a dict).

        The data hash itself is never taken from the record: the materialisation's own
        metadata is the claim being judged.
        """
        updates: dict[str, Any] = {}
        if self.code_hash is None:
            updates["code_hash"] = _text_or_none(record.get("code_hash"))
        if self.environment_hash is None:
            updates["environment_hash"] = _text_or_none(record.get("environment_hash"))
        if self.inputs is None and isinstance(record.get("inputs"), list):
            updates["inputs"] = _inputs_from_record_steps(record["inputs"])
        if self.hash_method is None and self.data_hash is not None:
            step = _matching_output(record.get("outputs"), self.data_hash, output_name)
            if step is not None:
                updates["hash_method"] = _text_or_none(step.get("hash_method"))
        return self.model_copy(update=updates)


class Judgement(BaseModel):
    """The outcome of comparing a receipt with its predecessor, with the words that explain it."""

    model_config = ConfigDict(frozen=True)

    verdict: Verdict
    reason: str
    moved_inputs: tuple[str, ...] = ()
    unknown_inputs: tuple[str, ...] = ()

    @property
    def drift_reason(self) -> str | None:
        """One of `DRIFT_REASONS` when the data drifted, else None."""
        return self.reason if self.verdict is Verdict.DRIFT else None

    def is_flagged(self, flag_reasons: Iterable[str] = DRIFT_REASONS) -> bool:
        """Whether this judgement raises a flag under the configured drift reasons."""
        return self.verdict is Verdict.DRIFT and self.reason in set(flag_reasons)


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


def judge(current: DriftEvidence, previous: DriftEvidence | None) -> Judgement:
    """Compare a materialisation's receipt with the previous one of the same asset and partition."""
    if previous is None:
        return Judgement(
            verdict=Verdict.NOT_JUDGED,
            reason="no previous materialisation of this asset and partition",
        )
    missing = _missing_data_hash(current, "this materialisation") or _missing_data_hash(
        previous, "the previous materialisation"
    )
    if missing:
        return Judgement(verdict=Verdict.NOT_JUDGED, reason=missing)
    if current.hash_method != previous.hash_method:
        return Judgement(
            verdict=Verdict.NOT_JUDGED,
            reason=(
                f"not comparable: hash methods differ ({previous.hash_method or 'none'} before, "
                f"{current.hash_method or 'none'} now)"
            ),
        )
    if current.data_hash == previous.data_hash:
        return Judgement(verdict=Verdict.UNCHANGED, reason="data unchanged")

    code = _state(previous.code_hash, current.code_hash)
    environment = _state(previous.environment_hash, current.environment_hash)
    moved = [name for name, state in (("code", code), ("environment", environment)) if state]
    if moved:
        return Judgement(verdict=Verdict.EXPLAINED, reason=f"{' and '.join(moved)} changed")
    unknown = [
        name for name, state in (("code", code), ("environment", environment)) if state is None
    ]
    if unknown:
        return Judgement(
            verdict=Verdict.NOT_JUDGED,
            reason=f"data changed but the {' and '.join(unknown)} hash is missing, so the "
            "change cannot be attributed",
        )
    return _judge_inputs(current.inputs, previous.inputs)


def partition_of(record: Mapping[str, Any]) -> str | None:
    """The partition a run record (v2 JSON as a dict) wrote, None when unpartitioned."""
    variables = record.get("variables")
    if not isinstance(variables, Mapping):
        return None
    return _text_or_none(variables.get("partition_key"))


def judge_records(previous: Mapping[str, Any], current: Mapping[str, Any]) -> dict[str, Judgement]:
    """Judge each output present in both run records (v2 JSON as dicts), current against previous.

    The rules are `judge`'s; two records of different partitions are never compared, as the
    sensor never compares them.
    """
    names = _output_names(current)
    shared = [name for name in names if name in set(_output_names(previous))]
    before, now = partition_of(previous), partition_of(current)
    if before != now:
        apart = Judgement(
            verdict=Verdict.NOT_JUDGED,
            reason=(
                f"different partitions ({before or 'unpartitioned'} before, "
                f"{now or 'unpartitioned'} now): a partition is only compared with itself"
            ),
        )
        return dict.fromkeys(shared, apart)
    return {
        name: judge(
            DriftEvidence.from_record(current, name), DriftEvidence.from_record(previous, name)
        )
        for name in shared
    }


def _output_names(record: Mapping[str, Any]) -> list[str]:
    steps = record.get("outputs")
    if not isinstance(steps, list):
        return []
    names = [str(step["name"]) for step in steps if isinstance(step, Mapping) and step.get("name")]
    return list(dict.fromkeys(names))


def _judge_inputs(
    current: Mapping[str, InputDigest] | None, previous: Mapping[str, InputDigest] | None
) -> Judgement:
    """Data moved under the same code and environment: say which of the three reasons holds."""
    if current is None or previous is None:
        return Judgement(verdict=Verdict.DRIFT, reason=INPUTS_UNKNOWN)
    moved: list[str] = []
    unknown: list[str] = []
    for name in sorted(set(current) | set(previous)):
        before, now = previous.get(name), current.get(name)
        if before is None or now is None:
            moved.append(name)  # an input appeared or disappeared
        elif before.asset_key and now.asset_key and before.asset_key != now.asset_key:
            moved.append(name)
        elif before.data_hash is None or now.data_hash is None:
            unknown.append(name)
        elif before.data_hash != now.data_hash:
            moved.append(name)
    if moved:
        return Judgement(
            verdict=Verdict.DRIFT,
            reason=INPUTS_CHANGED,
            moved_inputs=tuple(moved),
            unknown_inputs=tuple(unknown),
        )
    if unknown:
        return Judgement(
            verdict=Verdict.DRIFT, reason=INPUTS_UNKNOWN, unknown_inputs=tuple(unknown)
        )
    return Judgement(verdict=Verdict.DRIFT, reason=SAME_INPUTS)


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


def inputs_from_document(value: Any) -> dict[str, InputDigest] | None:
    """Parse an inputs document `{name: {asset_key, data_hash, row_count, hash_error}}` (a
    mapping or its JSON text); None when absent or unreadable."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return None
    if not isinstance(value, Mapping):
        return None
    inputs: dict[str, InputDigest] = {}
    for name, entry in value.items():
        inputs[str(name)] = (
            InputDigest.model_validate(entry) if isinstance(entry, Mapping) else InputDigest()
        )
    return inputs


def _inputs_from_record_steps(steps: Sequence[Any]) -> dict[str, InputDigest]:
    inputs: dict[str, InputDigest] = {}
    for step in steps:
        if isinstance(step, Mapping) and step.get("name"):
            inputs[str(step["name"])] = InputDigest(
                data_hash=_text_or_none(step.get("data_hash")),
                row_count=step.get("row_count") if isinstance(step.get("row_count"), int) else None,
                hash_error=_text_or_none(step.get("hash_error")),
            )
    return inputs


def _matching_output(
    steps: Any, data_hash: str, output_name: str | None
) -> Mapping[str, Any] | None:
    """The record's output step that this materialisation describes (by digest, else by name)."""
    if not isinstance(steps, list):
        return None
    candidates = [step for step in steps if isinstance(step, Mapping)]
    for step in candidates:
        if step.get("data_hash") == data_hash:
            return step
    for step in candidates:
        if output_name is not None and step.get("name") == output_name:
            return step
    return candidates[0] if len(candidates) == 1 else None


def _output_step(steps: Any, output_name: str | None) -> Mapping[str, Any]:
    """The named output step of a record, or its only one; a clear error otherwise."""
    outputs = (
        [step for step in steps if isinstance(step, Mapping)] if isinstance(steps, list) else []
    )
    names = [str(step.get("name")) for step in outputs]
    if output_name is not None:
        for step in outputs:
            if step.get("name") == output_name:
                return step
        raise ValueError(f"the record has no output {output_name!r} (outputs: {names})")
    if len(outputs) != 1:
        raise ValueError(f"the record has {len(outputs)} outputs {names}: name the one to judge")
    return outputs[0]
