"""Two run records side by side: what changed, what did not, and what cannot be said (ADR 006).

A data hash verdict is one of ``unchanged``, ``changed``, ``unknown`` (a hash is missing on either
side, or a step says its source moved between the read and the hash) or ``not comparable`` (the
two hashes were made by different methods, such as a pre-rows-v1 record against a new one). Two
missing hashes are ``unknown``, never ``unchanged``. The JSON form has the keys the reference's
``ubunye lineage compare --json`` prints, so a script can read either.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, model_serializer

from ubunye_core.records.model import RunRecord, StepRecord

#: What ``compare`` says of a step's two data hashes (the ``state`` of a ``DataHashVerdict``).
DataHashState = Literal["changed", "unchanged", "unknown", "not comparable"]

#: Environment entries outside ``packages`` whose change is named beside the packages.
ENVIRONMENT_KEYS = ("python", "platform")


class FieldChange(BaseModel):
    """One value in run A and run B, and whether it moved."""

    a: Any = None
    b: Any = None
    changed: bool

    @classmethod
    def of(cls, a: Any, b: Any) -> FieldChange:
        """The pair, ``changed`` when the values differ."""
        return cls(a=a, b=b, changed=a != b)


class RunSide(BaseModel):
    """Which run a side of the comparison is."""

    run_id: str
    started_at: str
    status: str


class DataHashVerdict(BaseModel):
    """The two data hashes and methods, the verdict, and why when it is ``unknown``."""

    a: str | None = None
    b: str | None = None
    method_a: str | None = None
    method_b: str | None = None
    state: DataHashState
    why: str | None = None

    @model_serializer(mode="wrap")
    def _without_empty_why(self, handler: Any) -> dict[str, Any]:
        data = handler(self)
        if data.get("why") is None:
            data.pop("why", None)
        return data


class StepComparison(BaseModel):
    """One input or output, by name, in both runs."""

    row_count: FieldChange
    schema_hash: FieldChange
    data_hash: DataHashVerdict


class VersionMove(BaseModel):
    """A package (or python, platform) version in run A and in run B."""

    a: Any = None
    b: Any = None


class Comparison(BaseModel):
    """Everything ``compare`` found, as data."""

    task: str
    a: RunSide
    b: RunSide
    status: FieldChange
    duration_sec: FieldChange
    config_hash: FieldChange
    code_hash: FieldChange
    environment_hash: FieldChange
    environment_changes: dict[str, VersionMove]
    inputs: dict[str, StepComparison]
    outputs: dict[str, StepComparison]

    def to_dict(self) -> dict[str, Any]:
        """The comparison as plain JSON values, keyed as the reference's ``--json`` keys it."""
        return self.model_dump(mode="json")

    def changed_outputs(self) -> list[str]:
        """Outputs whose data hash verdict is ``changed``."""
        return [name for name, step in self.outputs.items() if step.data_hash.state == "changed"]

    def moved_causes(self) -> list[str]:
        """What could explain changed data: config, code, environment, or an input's data."""
        causes = [
            field
            for field in ("config_hash", "code_hash", "environment_hash")
            if getattr(self, field).changed
        ]
        for name, step in self.inputs.items():
            if step.data_hash.state != "unchanged":
                causes.append(f"input:{name}:{step.data_hash.state}")
        return causes


def data_hash_verdict(a: StepRecord | None, b: StepRecord | None) -> DataHashVerdict:
    """The verdict on two steps' data hashes (either step may be absent)."""
    hash_a = a.data_hash if a else None
    hash_b = b.data_hash if b else None
    method_a = a.hash_method if a else None
    method_b = b.hash_method if b else None
    sides = dict(a=hash_a, b=hash_b, method_a=method_a, method_b=method_b)
    if hash_a is None or hash_b is None:
        reasons = dict.fromkeys(s.hash_error for s in (a, b) if s is not None and s.hash_error)
        return DataHashVerdict(
            **sides, state="unknown", why="; ".join(reasons) or "no data hash recorded"
        )
    if any(s.source_changed for s in (a, b) if s is not None):
        return DataHashVerdict(
            **sides,
            state="unknown",
            why="the source moved between the read and the hash, so the hash is not of the read",
        )
    if method_a != method_b:
        return DataHashVerdict(**sides, state="not comparable")
    return DataHashVerdict(**sides, state="unchanged" if hash_a == hash_b else "changed")


def _compare_steps(
    steps_a: list[StepRecord], steps_b: list[StepRecord]
) -> dict[str, StepComparison]:
    by_name_a = {step.name: step for step in steps_a}
    by_name_b = {step.name: step for step in steps_b}
    found = {}
    for name in sorted(set(by_name_a) | set(by_name_b)):
        a, b = by_name_a.get(name), by_name_b.get(name)
        found[name] = StepComparison(
            row_count=FieldChange.of(a.row_count if a else None, b.row_count if b else None),
            schema_hash=FieldChange.of(a.schema_hash if a else None, b.schema_hash if b else None),
            data_hash=data_hash_verdict(a, b),
        )
    return found


def environment_changes(a: RunRecord, b: RunRecord) -> dict[str, VersionMove]:
    """Each package whose version differs (or is on one side only), then python and platform."""
    packages_a = (a.environment or {}).get("packages") or {}
    packages_b = (b.environment or {}).get("packages") or {}
    moves = {
        name: VersionMove(a=packages_a.get(name), b=packages_b.get(name))
        for name in sorted(set(packages_a) | set(packages_b))
        if packages_a.get(name) != packages_b.get(name)
    }
    for key in ENVIRONMENT_KEYS:
        value_a, value_b = (a.environment or {}).get(key), (b.environment or {}).get(key)
        if value_a != value_b:
            moves[key] = VersionMove(a=value_a, b=value_b)
    return moves


def compare(a: RunRecord, b: RunRecord) -> Comparison:
    """Run ``a`` against run ``b``: run facts, evidence hashes, moved packages, each step's data."""
    return Comparison(
        task=a.task_path,
        a=RunSide(run_id=a.run_id, started_at=a.started_at, status=a.status),
        b=RunSide(run_id=b.run_id, started_at=b.started_at, status=b.status),
        status=FieldChange.of(a.status, b.status),
        duration_sec=FieldChange.of(a.duration_sec, b.duration_sec),
        config_hash=FieldChange.of(a.config_hash, b.config_hash),
        code_hash=FieldChange.of(a.code_hash, b.code_hash),
        environment_hash=FieldChange.of(a.environment_hash, b.environment_hash),
        environment_changes=environment_changes(a, b),
        inputs=_compare_steps(a.inputs, b.inputs),
        outputs=_compare_steps(a.outputs, b.outputs),
    )
