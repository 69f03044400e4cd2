"""The sketches run records carry: read back from a step or a stored record, and several
partitions' recorded digests combined into one input step without hashing a row again."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

from ubunye_core.locations import StoreAccess
from ubunye_core.records.model import SKETCH_FIELD, RunRecord, StepRecord
from ubunye_rows.hashing.digest import Fingerprint
from ubunye_rows.hashing.sketch import Sketch, combine
from ubunye_rows.latest import Latest


def step_sketch(step: Any) -> Sketch | None:
    """The sketch a run record's step (a ``StepRecord`` or its dict) carries; None when it has
    none, or when it does not add up to the step's data hash (never trusted then)."""
    document = (
        step.get(SKETCH_FIELD) if isinstance(step, Mapping) else getattr(step, SKETCH_FIELD, None)
    )
    digest = (
        step.get("data_hash") if isinstance(step, Mapping) else getattr(step, "data_hash", None)
    )
    if document is None or digest is None:
        return None
    try:
        sketch = Sketch.from_record(document)
    except ValueError:
        return None
    return sketch if sketch.data_hash() == digest else None


def recorded_sketch(
    record_path: str | None, data_hash: str, access: StoreAccess | None = None
) -> dict[str, Any] | None:
    """The stored form of the sketch a run record (a local path or fsspec URL, opened through
    ``access``) kept for its output of digest ``data_hash``; None when the record, the output or
    the sketch is missing. A record this process saved, unchanged since, is not read again."""
    if not record_path:
        return None
    outputs = _SAVED.outputs(str(record_path))
    if outputs is None:
        try:
            path = (access or StoreAccess()).path(str(record_path))
            document = json.loads(path.read_text(encoding="utf-8"))
        except Exception:  # unreadable here (another store's credentials, say): no sketch, no harm
            return None
        outputs = document.get("outputs") or []
    for step in outputs:
        mine = isinstance(step, Mapping) and step.get("data_hash") == data_hash
        if mine and step_sketch(step) is not None:
            return _copied(step[SKETCH_FIELD])
    return None


def remember_saved(record_path: str, native_path: str, record: RunRecord) -> None:
    """Keep the sketches of a record this process just saved at ``native_path`` (a local file,
    shown as ``record_path``), for ``recorded_sketch`` while the file stays as saved."""
    outputs = [
        {"data_hash": step.data_hash, SKETCH_FIELD: _copied(sketch)}
        for step in record.outputs
        if isinstance(sketch := getattr(step, SKETCH_FIELD, None), Mapping)
    ]
    _SAVED.keep(record_path, native_path, outputs)


def _copied(sketch: Mapping[str, Any]) -> dict[str, Any]:
    """A sketch document of its own (its schema's pairs too), to be kept or handed out."""
    copy = dict(sketch)
    if isinstance(copy.get("schema"), list):
        copy["schema"] = [list(pair) if isinstance(pair, list) else pair for pair in copy["schema"]]
    return copy


class _SavedSketches:
    """The output sketches of the records this process saved last, by record path, each with
    the signature its file had once saved: a file replaced, changed or removed since (another
    signature, or none) is read from the store again."""

    def __init__(self, size: int = 256):
        self._kept: Latest[str, tuple[str, tuple[int, ...], list[dict[str, Any]]]] = Latest(size)

    def keep(self, record_path: str, native_path: str, outputs: list[dict[str, Any]]) -> None:
        signature = _signature(native_path)
        if signature is None or not outputs:
            self._kept.forget(record_path)
        else:
            self._kept.put(record_path, (native_path, signature, outputs))

    def outputs(self, record_path: str) -> list[dict[str, Any]] | None:
        kept = self._kept.get(record_path)
        if kept is None:
            return None
        native_path, signature, outputs = kept
        return outputs if _signature(native_path) == signature else None


def _signature(native_path: str) -> tuple[int, ...] | None:
    """What changes whenever the file does (a replaced file has another inode); None when it is
    not there."""
    try:
        stat = os.stat(native_path)
    except OSError:
        return None
    return (stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)


_SAVED = _SavedSketches()


def combined_input_step(
    name: str, steps: Sequence[StepRecord], partitions: Sequence[str]
) -> StepRecord:
    """One input step for several loaded partitions: their recorded digests combined (no row is
    hashed again), or, when one cannot be combined, no digest and the reason as ``hash_error``.

    ``steps`` are the partitions' ``StepRecord``s, in the order of ``partitions``.
    """
    note = f"combined from the digests of {len(steps)} partitions: {', '.join(partitions)}"
    fingerprints = [
        Fingerprint(
            step.schema_hash or "", step.data_hash, step.row_count, sketch=step_sketch(step)
        )
        for step in steps
    ]
    try:
        combined = combine(fingerprints)
    except ValueError as exc:
        combined = Fingerprint(
            schema_hash=steps[0].schema_hash if steps else "",
            data_hash=None,
            row_count=None,
            error=f"ValueError: {exc}",
        )
    step = StepRecord.from_fingerprint(
        combined,
        name=name,
        direction="input",
        format=steps[0].format if steps else "",
        location=_common_location([step.location for step in steps]),
        hash_seconds=0.0,
        hash_basis="materialised",
    )
    step.source_note = note
    return step


def _common_location(locations: Sequence[str]) -> str:
    """The folder (or table) the partitions' locations share; the first one when they share
    none."""
    if len(set(locations)) <= 1:
        return locations[0] if locations else ""
    try:
        return os.path.commonpath(locations)
    except ValueError:  # URLs of different stores, or relative beside absolute paths
        return locations[0]
