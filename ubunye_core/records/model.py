"""The run record v2 (ADR 006): one JSON document per run, field for field the reference's.

``RunRecord`` is the run; ``StepRecord`` is one of its inputs or outputs. Field names and JSON types
are the reference's, so either tool reads the other's records. A document without
``record_version`` is a version 1 record and loads with the v2 fields empty; fields this version
does not know (written by a newer one) are kept and written back unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ubunye_core.records.vocabulary import RUN_STATUSES as RUN_STATUSES

if TYPE_CHECKING:
    from ubunye_rows.hashing.digest import Fingerprint

#: The layout this package writes.
RECORD_VERSION = 2

#: Where a step's data hash came from: the rows that were written, the frame computed again, or
#: (an input) the digest recorded at write time, taken because the stored bytes still hash to the
#: byte digest recorded with it.
HASH_BASES = ("materialised", "recomputed", "stored-bytes")
#: A step field the reference does not have (its reader drops it): the digest of the stored
#: bytes (``ubunye_core.materialisations.byte_digest``), written only when known.
BYTES_HASH_FIELD = "bytes_hash"
#: A step field the reference does not have: where a database's rows were hashed, ``database``
#: (one aggregation in it, no row left it) or ``stream`` (streamed to the kernel); absent for
#: rows hashed in the memory of the process that held them.
HASHED_IN_FIELD = "hashed_in"
#: A step field the reference does not have (its reader drops it): the rows-v1 sketch
#: (``ubunye_rows.hashing.sketch``), written only when the hash kept one.
SKETCH_FIELD = "sketch"
#: The ``variables`` entry naming the partition a run wrote (absent when unpartitioned).
PARTITION_KEY_VARIABLE = "partition_key"

_LIST_FIELDS = ("inputs", "outputs", "timings", "expectations", "llm_calls")
_DICT_FIELDS = ("variables", "environment", "llm_budget")


def _parse_object(text: str | bytes | bytearray) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not a JSON document: {exc}") from exc
    if not isinstance(data, dict):
        raise ValueError(f"a run record is a JSON object, not {type(data).__name__}")
    return data


class StepRecord(BaseModel):
    """One input or output of a run: where it is and what its rows hash to (rows-v1)."""

    model_config = ConfigDict(extra="allow", validate_assignment=True)

    name: str
    direction: Literal["input", "output"]
    format: str = ""
    location: str = ""
    row_count: int | None = None
    schema_hash: str | None = None
    data_hash: str | None = None
    hash_method: str | None = None
    hash_error: str | None = None
    hash_seconds: float | None = None
    hash_reused_from: str | None = None
    hash_basis: str | None = None
    source_version: dict[str, Any] | None = None
    source_version_at_hash: dict[str, Any] | None = None
    source_changed: bool | None = None
    source_note: str | None = None

    @classmethod
    def from_fingerprint(
        cls,
        fp: Fingerprint,
        *,
        name: str,
        direction: Literal["input", "output"],
        format: str = "",
        location: str = "",
        hash_seconds: float | None = None,
        hash_basis: str | None = None,
        bytes_hash: str | None = None,
    ) -> StepRecord:
        """A step carrying ``fp``'s hashes, row count, method and error (a failure stays one),
        the stored bytes' digest when given, and the sketch as the extension field ``sketch``
        when the hash kept one."""
        if hash_basis is not None and hash_basis not in HASH_BASES:
            raise ValueError(f"hash_basis must be one of {HASH_BASES} or None, not {hash_basis!r}")
        return cls(
            name=name,
            direction=direction,
            format=format,
            location=location,
            row_count=fp.row_count,
            schema_hash=fp.schema_hash,
            data_hash=fp.data_hash,
            hash_method=fp.method,
            hash_error=fp.error,
            hash_seconds=hash_seconds,
            hash_basis=hash_basis,
            **({BYTES_HASH_FIELD: bytes_hash} if bytes_hash is not None else {}),
            **({SKETCH_FIELD: fp.sketch.to_record()} if fp.sketch is not None else {}),
            **({HASHED_IN_FIELD: fp.hashed_in} if fp.hashed_in is not None else {}),
        )

    def hashed_in(self) -> str | None:
        """Where a database's rows were hashed (``database`` or ``stream``), when they were."""
        return (self.model_extra or {}).get(HASHED_IN_FIELD)

    def stored_bytes_hash(self) -> str | None:
        """The stored bytes' digest recorded with this step, when there is one."""
        return (self.model_extra or {}).get(BYTES_HASH_FIELD)


class RunRecord(BaseModel):
    """One run of one task (``usecase/package/task``): identity, status, steps and evidence."""

    model_config = ConfigDict(extra="allow", validate_assignment=True)

    run_id: str
    task_path: str
    usecase: str
    package: str
    task_name: str
    profile: str = ""
    model: str = ""
    version: str = ""
    config_hash: str | None = ""
    started_at: str
    ended_at: str | None = None
    duration_sec: float | None = None
    status: str = "running"
    inputs: list[StepRecord] = Field(default_factory=list)
    outputs: list[StepRecord] = Field(default_factory=list)
    error: str | None = None
    engine_version: str = ""
    backend: str = ""
    variables: dict[str, Any] = Field(default_factory=dict)
    record_version: int = RECORD_VERSION
    code_hash: str | None = None
    environment: dict[str, Any] = Field(default_factory=dict)
    environment_hash: str | None = None
    timings: list[dict[str, Any]] = Field(default_factory=list)
    expectations: list[dict[str, Any]] = Field(default_factory=list)
    llm_calls: list[dict[str, Any]] = Field(default_factory=list)
    llm_budget: dict[str, Any] = Field(default_factory=dict)
    time_zone: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _fill_gaps(cls, data: Any) -> Any:
        """null collections read as empty; a missing task_path is built from its three parts."""
        if not isinstance(data, Mapping):
            return data
        data = dict(data)
        for key in _LIST_FIELDS:
            if key in data and data[key] is None:
                data[key] = []
        for key in _DICT_FIELDS:
            if key in data and data[key] is None:
                data[key] = {}
        if data.get("record_version", 0) is None:
            data["record_version"] = 1
        if data.get("task_path") is None and all(
            k in data for k in ("usecase", "package", "task_name")
        ):
            data["task_path"] = f"{data['usecase']}/{data['package']}/{data['task_name']}"
        return data

    @classmethod
    def model_validate(cls, obj: Any, **kwargs: Any) -> RunRecord:  # type: ignore[override]
        """Load a record document; one without ``record_version`` is version 1."""
        if isinstance(obj, Mapping) and obj.get("record_version") is None:
            obj = {**obj, "record_version": 1}
        return super().model_validate(obj, **kwargs)

    @classmethod
    def model_validate_json(cls, json_data: str | bytes | bytearray, **kwargs: Any) -> RunRecord:  # type: ignore[override]
        """Load a record from JSON text, with the version 1 rule of ``model_validate``."""
        return cls.model_validate(_parse_object(json_data), **kwargs)

    @classmethod
    def from_json(cls, text: str | bytes | bytearray) -> RunRecord:
        """Parse one record document; anything but a JSON object is a ValueError saying so."""
        return cls.model_validate(_parse_object(text))

    def to_dict(self) -> dict[str, Any]:
        """The record as plain JSON values, unknown fields included."""
        return self.model_dump(mode="json")

    def to_json(self) -> str:
        """The record document: ``indent=2``, non-ASCII text written as is."""
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False)

    @property
    def partition_key(self) -> str | None:
        """The partition this run wrote, as text; None when unpartitioned (absent or empty)."""
        value = self.variables.get(PARTITION_KEY_VARIABLE)
        if value is None:
            return None
        return str(value) or None

    @property
    def output_names(self) -> list[str]:
        """The names of the outputs, each once, in the record's order (unnamed steps left out)."""
        return list(dict.fromkeys(step.name for step in self.outputs if step.name))

    def step(self, name: str, direction: Literal["input", "output"] = "output") -> StepRecord:
        """The input or output called ``name``; KeyError naming what exists when there is none."""
        steps = self.inputs if direction == "input" else self.outputs
        for step in steps:
            if step.name == name:
                return step
        known = ", ".join(s.name for s in steps) or "none"
        raise KeyError(f"no {direction} named {name!r} in run {self.run_id} (has: {known})")
