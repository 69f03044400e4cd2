"""What ``lineage diff`` and ``lineage digest`` report, from run records and stored versions.

``diff``: two recorded outputs (or two stored paths) compared row by row, reading only the rows
of the buckets where their sketches differ. ``digest``: the digest of a whole partitioned asset,
the newest run of each partition combined from the records alone.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ubunye_core.diff.rows import RowDiff, diff_tables, sketch_of_digests, table_row_digests
from ubunye_core.materialisations.stored import STORED_FORMATS, read_stored
from ubunye_core.records.model import RunRecord, StepRecord
from ubunye_core.records.sketches import step_sketch
from ubunye_core.store import LineageStore
from ubunye_core.wording import counted
from ubunye_rows.hashing.digest import Fingerprint
from ubunye_rows.hashing.sketch import BUCKETS, Sketch, combine


class ReportError(Exception):
    """What the records or the stored data cannot answer, said in one line."""


@dataclass(frozen=True)
class Version:
    """One side of a diff: a label, where its rows are stored and the sketch recorded for them."""

    label: str
    location: str
    format: str = "parquet"
    version: int | None = None
    #: The rows of the table that are this version's (a Delta partition's predicate).
    predicate: str | None = None
    sketch: Sketch | None = None
    #: The digest recorded for these rows (checked when there is no sketch).
    data_hash: str | None = None
    #: A run record's output (stored once, so missing now means gone), not a path given.
    recorded: bool = False

    def where(self) -> str:
        """The location, with ``@v<version>`` for a Delta table version."""
        return self.location + (f"@v{self.version}" if self.version is not None else "")

    def describe(self) -> str:
        """The label and, when it does not say it already, where the rows are."""
        return self.label if self.label == self.where() else f"{self.label}  {self.where()}"


@dataclass
class DiffReport:
    """A diff between two versions, and what could not be read."""

    before: Version
    after: Version
    buckets: list[int]
    diff: RowDiff | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def equal(self) -> bool:
        """True when both versions hold the same rows (by the rows, else by the sketches)."""
        return not self.buckets if self.diff is None else self.diff.equal

    def most_changed(self) -> tuple[int, int]:
        """Rows removed and added at most, from the sketches: the differing buckets' counts."""
        sketches = [self.before.sketch, self.after.sketch]
        if self.diff is not None and self.diff.sketches is not None:
            sketches = list(self.diff.sketches)  # the rows as stored now
        removed, added = (
            sum(sketch.counts[b] for b in self.buckets) if sketch else 0 for sketch in sketches
        )
        return removed, added

    def to_dict(self, limit: int | None) -> dict[str, Any]:
        """The ``--json`` document: both sides, buckets, notes, counts, at most ``limit`` rows."""
        removed, added = self.most_changed()
        document: dict[str, Any] = {
            "equal": self.equal,
            "before": {"label": self.before.label, "location": self.before.where()},
            "after": {"label": self.after.label, "location": self.after.where()},
            "buckets_differing": len(self.buckets),
            "at_most": {"removed": removed, "added": added},
            "notes": self.notes,
        }
        if self.diff is not None:
            document.update(
                {k: v for k, v in self.diff.to_dict(limit).items() if k not in document}
            )
        return document

    def lines(self, limit: int | None) -> list[str]:
        """The report as text: both sides, the buckets, then the rows (at most ``limit``)."""
        out = [f"{tag}: {side.describe()}" for tag, side in (("A", self.before), ("B", self.after))]
        removed, added = self.most_changed()
        buckets = f"buckets differing: {len(self.buckets)} of {BUCKETS}"
        if self.buckets:
            buckets += f" (at most {counted(removed, 'row')} removed, {added:,} added)"
        out.append(buckets)
        out += [f"note: {note}" for note in self.notes]
        if self.diff is None:
            out.append("rows equal" if self.equal else "rows differ (not compared row by row)")
            return out
        return out + _diff_lines(self.diff, limit)


def _diff_lines(diff: RowDiff, limit: int | None) -> list[str]:
    out = [
        f"rows compared: {diff.compared_before:,} of {diff.rows_before:,} in A, "
        f"{diff.compared_after:,} of {diff.rows_after:,} in B",
    ]
    if diff.equal:
        return [*out, "rows equal"]
    summary = f"removed {len(diff.removed)}, added {len(diff.added)}"
    if diff.key:
        summary = f"changed {len(diff.changed)} (key {', '.join(diff.key)}), " + summary
    out.append(summary)
    for row in diff.changed[:limit]:
        key = ", ".join(f"{k}={_text(v)}" for k, v in row.key.items())
        moves = "; ".join(
            f"{c}: {_text(row.before.get(c))} -> {_text(row.after.get(c))}" for c in row.columns
        )
        out.append(f"~ {key}: {moves}")
    out += [f"- {_text(row)}" for row in diff.removed[:limit]]
    out += [f"+ {_text(row)}" for row in diff.added[:limit]]
    kinds = (diff.changed, diff.removed, diff.added)
    hidden = sum(len(rows) - len(rows[:limit]) for rows in kinds)
    if hidden:
        out.append(f"... {hidden} more (--limit)")
    return out


def _text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def output_step(record: RunRecord, name: str | None) -> StepRecord:
    """The output called ``name``, or the record's only output."""
    if name is not None:
        try:
            return record.step(name, "output")
        except KeyError as exc:
            raise ReportError(str(exc.args[0])) from exc
    if len(record.outputs) != 1:
        names = ", ".join(step.name for step in record.outputs) or "none"
        raise ReportError(f"run {record.run_id} has outputs {names}: name one with --output")
    return record.outputs[0]


def recorded_version(record: RunRecord, step: StepRecord) -> Version:
    """Where a recorded output's rows are stored, with the sketch recorded for them."""
    if not step.location:
        raise ReportError(f"run {record.run_id} does not say where output {step.name} is stored")
    delta = (step.source_version or {}) if step.format == "delta" else {}
    version = delta.get("version")
    return Version(
        label=f"run {record.run_id} ({record.started_at[:19]})",
        location=step.location,
        format=step.format or "parquet",
        version=int(version) if version is not None else None,
        predicate=delta.get("predicate"),
        sketch=step_sketch(step),
        data_hash=step.data_hash,
        recorded=True,
    )


def path_version(path: str) -> Version:
    """A stored path given on the command line (``PATH`` or ``PATH@vN`` for a Delta version)."""
    location, version = path, None
    head, marker, tail = path.rpartition("@v")
    if marker and tail.isdigit():
        location, version = head, int(tail)
    fmt = "delta" if os.path.isdir(os.path.join(location, "_delta_log")) else "parquet"
    if version is not None and fmt != "delta":
        raise ReportError(
            f"{path}: @v{version} names a version of a Delta table, and {location} is not one "
            "(no _delta_log folder)"
        )
    return Version(label=path, location=location, format=fmt, version=version)


def diff_versions(
    before: Version,
    after: Version,
    *,
    key: Sequence[str] | None = None,
    storage_options: dict[str, Any] | None = None,
) -> DiffReport:
    """Compare two versions row by row, reading only the differing buckets' rows.

    When both sketches are recorded and equal nothing is read. A version no longer stored (a
    Parquet file rewritten since, a vacuumed Delta version) is left out with a note saying so,
    and the report keeps to the sketches.
    """
    buckets = None
    if before.sketch is not None and after.sketch is not None:
        buckets = before.sketch.differing_buckets(after.sketch)
        if not buckets:
            return DiffReport(before, after, [])
    notes: list[str] = []
    sides = [_stored_rows(side, notes, storage_options) for side in (before, after)]
    if sides[0] is None or sides[1] is None:
        if buckets is None:
            recorded = before.recorded or after.recorded
            raise ReportError(
                "; ".join(notes) + (" (and no recorded sketches to compare)" if recorded else "")
            )
        return DiffReport(before, after, buckets, notes=notes)
    (table_b, digests_b), (table_a, digests_a) = sides
    diff = diff_tables(table_b, table_a, key=key, digests=(digests_b, digests_a))
    return DiffReport(before, after, diff.buckets, diff, notes)


def _stored_rows(
    side: Version, notes: list[str], storage_options: dict[str, Any] | None
) -> tuple[Any, Any] | None:
    """The side's stored rows and their digests; None (with a note) when they are gone or are no
    longer the rows its sketch (or, without one, its digest) recorded."""
    if side.format not in STORED_FORMATS:
        notes.append(
            f"{side.label}: its rows are a {side.format} table, which lineage diff does not read "
            "back (a dbt model keeps only its latest rows)"
        )
        return None
    try:
        stored = read_stored(
            side.location,
            format=side.format,
            version=side.version,
            predicate=side.predicate,
            storage_options=storage_options,
        )
    except FileNotFoundError as exc:
        notes.append(f"{side.label}: no longer stored ({exc})" if side.recorded else str(exc))
        return None
    digests = table_row_digests(stored.view)
    now = sketch_of_digests(stored.view, digests)
    if (side.sketch is not None and now != side.sketch) or (
        side.sketch is None and side.data_hash is not None and now.data_hash() != side.data_hash
    ):
        notes.append(
            f"{side.label}: the rows at {side.where()} are no longer the rows it wrote "
            "(rewritten since; Parquet keeps only the latest, format='delta' keeps versions)"
        )
        return None
    return stored.view, digests


@dataclass(frozen=True)
class PartitionDigest:
    """The newest successful run of one partition and the digest it recorded."""

    partition: str | None
    run_id: str
    fingerprint: Fingerprint


def latest_partition_digests(
    store: LineageStore, task_path: str, output: str | None
) -> list[PartitionDigest]:
    """The newest successful run of each partition (or of the asset, unpartitioned) with its
    recorded fingerprint, in partition order; ReportError when one cannot be combined."""
    seen: dict[str | None, PartitionDigest] = {}
    for record in store.iter_runs(task_path):
        partition = record.partition_key
        if partition in seen or record.status != "success":
            continue
        step = output_step(record, output)
        sketch = step_sketch(step)
        if sketch is None:
            which = f"partition {partition!r}" if partition is not None else "unpartitioned"
            raise ReportError(
                f"run {record.run_id} ({which}) of {task_path} recorded no sketch for its data "
                "hash; materialise it again to record one"
            )
        fp = Fingerprint(step.schema_hash or "", step.data_hash, step.row_count, sketch=sketch)
        seen[partition] = PartitionDigest(partition, record.run_id, fp)
    if not seen:
        raise ReportError(f"no successful runs of {task_path} in {store.root}")
    return [seen[key] for key in sorted(seen, key=lambda p: (p is not None, p or ""))]


def asset_digest(parts: Iterable[PartitionDigest]) -> Fingerprint:
    """The digest of every listed partition's rows together, from their sketches alone."""
    try:
        return combine([part.fingerprint for part in parts])
    except ValueError as exc:
        raise ReportError(f"the partitions cannot be combined: {exc}") from exc


def drift_rows(
    before_record: RunRecord,
    after_record: RunRecord,
    *,
    sample: int = 5,
    storage_options: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """For a run whose rows drifted: per output, how many rows changed at most (from the two
    sketches) and, when both versions are still stored, up to ``sample`` rows removed and added.

    Outputs without sketches on both sides are left out. ``storage_options`` open the stored
    versions on an object store.
    """
    found: dict[str, Any] = {}
    for step in after_record.outputs:
        earlier = next((s for s in before_record.outputs if s.name == step.name), None)
        if earlier is None or not step.location or not earlier.location:
            continue
        before, after = (
            recorded_version(before_record, earlier),
            recorded_version(after_record, step),
        )
        if before.sketch is None or after.sketch is None:
            continue
        report = diff_versions(before, after, storage_options=storage_options)
        removed, added = report.most_changed()
        entry: dict[str, Any] = {
            "buckets_differing": len(report.buckets),
            "rows_changed_at_most": {"removed": removed, "added": added},
        }
        if report.diff is not None:
            entry["removed"] = report.diff.removed[:sample]
            entry["added"] = report.diff.added[:sample]
        entry["notes"] = report.notes
        found[step.name] = entry
    return found
