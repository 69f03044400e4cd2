"""The receipt at a glance: one Markdown entry a person reads in seconds in the Dagster UI.

The entries beside it are for tools; this one says, in the drift judgement's own words, whether
the rows are those of the previous materialisation of the same asset and partition and why not,
what each input's digest is and how it was proven, and where the record is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import dagster as dg

from ubunye_core.records import drift
from ubunye_core.records.model import RunRecord, StepRecord
from ubunye_dagster.metadata import SUMMARY
from ubunye_dagster.sensor import judge_against_previous

#: How many hex digits of a digest the summary shows (the full digests are in the other entries).
SHORT_DIGEST = 16
#: The Dagster UI shows a Markdown entry in place only below 1,000 characters (longer ones behind
#: a "[Show Markdown]" link), so the summary stays below it, dropping input rows if it must.
UI_INLINE_LIMIT = 1000
#: How long one input's proof may be in the table (its whole note is in the run record).
PROOF_LENGTH = 90


def short_digest(digest: str | None) -> str:
    """``sha256:1a2b...`` cut to a readable length; an em dash when there is none."""
    if not digest:
        return "—"
    method, _, hex_part = digest.rpartition(":")
    head = f"{method}:" if method else ""
    return f"`{head}{hex_part[:SHORT_DIGEST]}…`" if len(hex_part) > SHORT_DIGEST else f"`{digest}`"


def headline(judgement: drift.Judgement, previous_run_id: str | None) -> str:
    """The verdict line: same rows or changed, and the judgement's own reason."""
    against = f" (run `{previous_run_id[:8]}`)" if previous_run_id else ""
    if judgement.verdict is drift.Verdict.UNCHANGED:
        return f"**Same rows** as the previous materialisation{against}."
    if judgement.verdict is drift.Verdict.NOT_JUDGED:
        return f"**Not compared**: {judgement.reason}."
    return (
        f"**Rows changed** since the previous materialisation{against}: "
        f"{judgement.outcome(drift.DEFAULT_FLAG_REASONS)}."
    )


def proof_of(step: StepRecord) -> str:
    """How an input's digest was proven, in a few words (the record's note says it in full)."""
    if step.hash_basis == "stored-bytes" and (step.source_note or "").startswith("verified"):
        return "verified: its stored bytes are those written (byte digest), rows not hashed again"
    note = step.source_note or (f"not hashed: {step.hash_error}" if step.hash_error else "—")
    return note if len(note) <= PROOF_LENGTH else note[: PROOF_LENGTH - 1] + "…"


def _input_row(step: StepRecord, asset_key: str | None) -> str:
    rows = f"{step.row_count:,}" if step.row_count is not None else "—"
    proof = proof_of(step)
    return (
        f"| {step.name} | {asset_key or '—'} | {rows} | {short_digest(step.data_hash)} "
        f"| {proof.replace('|', '/')} |"
    )


def inputs_table(inputs: Sequence[StepRecord], asset_keys: Mapping[str, str | None]) -> list[str]:
    """One table row per input: its asset, rows, digest and how the digest was proven."""
    if not inputs:
        return ["Inputs: none (reads no asset)."]
    head = ["| Input | Asset | Rows | Digest | How it was proven |", "|---|---|---|---|---|"]
    return head + [_input_row(step, asset_keys.get(step.name)) for step in inputs]


def receipt_summary(
    record: RunRecord,
    output: StepRecord,
    *,
    record_path: str,
    input_asset_keys: Mapping[str, str | None],
    judgement: drift.Judgement,
    previous_run_id: str | None,
) -> dg.MetadataValue:
    """The ``ubunye/summary`` Markdown of one materialisation."""
    rows = f"{output.row_count:,} rows" if output.row_count is not None else "rows not counted"
    data = (
        f"{rows}, digest {short_digest(output.data_hash)}"
        if output.data_hash
        else f"{rows}, no digest: {output.hash_error or 'not hashed'}"
    )
    inputs = list(record.inputs)
    while True:
        table = inputs_table(inputs, input_asset_keys)
        left_out = len(record.inputs) - len(inputs)
        if left_out:
            table.append(f"… and {left_out} more input(s): see ubunye/inputs.")
        head = [headline(judgement, previous_run_id), "", f"Output: {data}.", ""]
        text = "\n".join([*head, *table, "", f"Record: `{record_path}`"])
        if len(text) < UI_INLINE_LIMIT or not inputs:
            return dg.MetadataValue.md(text)
        inputs = inputs[:-1]


def judged(
    instance: dg.DagsterInstance | None,
    asset_key: dg.AssetKey,
    partition_key: str | None,
    record: RunRecord,
    output_name: str,
) -> tuple[drift.Judgement, str | None]:
    """This materialisation's record judged against the previous materialisation of the asset
    and partition in the event log; a judgement that says why when it cannot be made."""
    if instance is None:
        reason = "no Dagster instance to find the previous materialisation in"
        return drift.Judgement(verdict=drift.Verdict.NOT_JUDGED, reason=reason), None
    current = drift.DriftEvidence.from_record(record.to_dict(), output_name)
    partition = str(partition_key) if partition_key is not None else None
    try:
        return judge_against_previous(instance, asset_key, partition, current)
    except Exception as error:  # shown in the entry: a summary never fails the write
        reason = f"the event log could not be read ({type(error).__name__}: {error})"
        return drift.Judgement(verdict=drift.Verdict.NOT_JUDGED, reason=reason), None


def summary_metadata(
    instance: dg.DagsterInstance | None,
    asset_key: dg.AssetKey,
    partition_key: str | None,
    record: RunRecord,
    output: StepRecord,
    *,
    record_path: str,
    input_asset_keys: Mapping[str, str | None],
) -> dict[str, dg.MetadataValue]:
    """``{"ubunye/summary": <Markdown>}`` for one asset materialisation."""
    judgement, previous_run_id = judged(instance, asset_key, partition_key, record, output.name)
    summary = receipt_summary(
        record,
        output,
        record_path=record_path,
        input_asset_keys=input_asset_keys,
        judgement=judgement,
        previous_run_id=previous_run_id,
    )
    return {SUMMARY: summary}
