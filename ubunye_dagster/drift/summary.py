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
from ubunye_dagster.dagster_internals import StepExecutionContext
from ubunye_dagster.drift.previous_materialisation import Finding, judge_before_storage
from ubunye_dagster.drift.settings import DriftSettings
from ubunye_dagster.receipts.metadata import RECORD_PATH, SUMMARY

#: How many hex digits of a digest the summary shows (the full digests are in the other entries).
SHORT_DIGEST = 8
#: The Dagster UI shows a Markdown entry in place only below 1,000 characters (longer ones behind
#: a "[Show Markdown]" link), so the summary stays below it, dropping input rows if it must.
UI_INLINE_LIMIT = 1000
#: How long one input's note may be under the table (its whole note is in the run record).
PROOF_LENGTH = 90
#: The widest line the summary renders, in characters of the UI's monospace font. The Value
#: column of the asset's Overview tab shows 58 at a 1600 px window, and it is clipped, not
#: wrapped, where a full digest in another entry widens it (docs/io-manager.md); 4 are spare.
WIDTH_BUDGET = 54
#: Room a table cell takes beside its text, in characters (18 px of padding, 8.4 px a character).
CELL_PADDING = 2.2
#: CommonMark's hard line break: the summary breaks its own lines, as the column will not.
LINE_BREAK = "\\\n"

#: The proof column's words whose meaning is the same for every input, said once under the table.
BYTES_MATCH = "bytes match"
ROWS_MATCH = "rows match"
HASHED = "hashed"
PROOF_MEANINGS = {
    BYTES_MATCH: "its stored bytes hash to the byte digest recorded when it was written, "
    "so its rows are those of that digest (not hashed again)",
    ROWS_MATCH: "its rows, hashed as read, match the digest recorded when it was written",
    HASHED: "its rows were hashed as read",
}
#: A note's opening words -> the proof column's word; the note itself is shown under the table.
NOTED_PROOFS = (
    ("not verified", "not verified"),
    ("verification failed", "failed"),
    ("combined from", "combined"),
    ("not hashed", "not hashed"),
)
#: The proof column's word for a note that opens otherwise.
NOTED = "see note"


def short_digest(digest: str | None) -> str:
    """``sha256:1a2b...`` cut to a readable length; an em dash when there is none."""
    if not digest:
        return "—"
    method, _, hex_part = digest.rpartition(":")
    head = f"{method}:" if method else ""
    return f"`{head}{hex_part[:SHORT_DIGEST]}…`" if len(hex_part) > SHORT_DIGEST else f"`{digest}`"


def headline(
    judgement: drift.Judgement,
    previous_run_id: str | None,
    flag_reasons: Sequence[str] = drift.DEFAULT_FLAG_REASONS,
) -> str:
    """The verdict line: same rows or changed, and the judgement's own reason (drift when its
    reason is one of ``flag_reasons``)."""
    # A no-break space keeps "(run <id>)" on one line when the line is broken.
    against = f" (run\u00a0`{previous_run_id[:8]}`)" if previous_run_id else ""
    if judgement.verdict is drift.JudgementVerdict.UNCHANGED:
        return f"**Same rows** as the previous materialisation{against}."
    if judgement.verdict is drift.JudgementVerdict.NOT_JUDGED:
        return f"**Not compared**: {judgement.reason}."
    return (
        f"**Rows changed** since the previous materialisation{against}: "
        f"{judgement.outcome(tuple(flag_reasons))}."
    )


def proof_of(step: StepRecord) -> tuple[str, str | None]:
    """How an input's digest was proven, in a word or two, and its own note when the words do
    not say it for every input (the record keeps the whole note)."""
    note = step.source_note or ""
    if note.startswith("verified") and step.data_hash:
        return (BYTES_MATCH if step.hash_basis == "stored-bytes" else ROWS_MATCH), None
    if not note and not step.hash_error:
        return (HASHED, None) if step.data_hash else ("not hashed", "not hashed")
    if step.hash_error and step.hash_error not in note:
        note = f"{note}; {step.hash_error}" if note else f"not hashed: {step.hash_error}"
    word = next((word for opening, word in NOTED_PROOFS if note.startswith(opening)), NOTED)
    if step.data_hash is None and word in ("combined", NOTED):
        word = "no digest"
    return word, note if len(note) <= PROOF_LENGTH else note[: PROOF_LENGTH - 1] + "…"


def input_label(step: StepRecord, asset_key: str | None) -> str:
    """The input's asset key, with the input's name when the key does not end in it."""
    if not asset_key:
        return step.name
    return asset_key if asset_key.rpartition("/")[2] == step.name else f"{step.name} ({asset_key})"


def table_width(rows: Sequence[Sequence[str]]) -> float:
    """How wide a Markdown table of these cells renders, in characters, when no cell wraps."""
    widths = [max(shown_length(cell) for cell in column) for column in zip(*rows, strict=True)]
    return sum(widths) + CELL_PADDING * len(widths)


def inputs_blocks(inputs: Sequence[StepRecord], asset_keys: Mapping[str, str | None]) -> list[str]:
    """A table of one row per input (its asset, rows, digest and how the digest was proven), or
    a paragraph per input when the table would be wider than ``WIDTH_BUDGET``; then a
    paragraph per proof word's meaning and per input whose words need its own note."""
    if not inputs:
        return ["Inputs: none (reads no asset)."]
    cells: list[tuple[str, str, str, str]] = []
    meanings: dict[str, str] = {}
    notes: list[str] = []
    for step in inputs:
        label = input_label(step, asset_keys.get(step.name))
        rows = f"{step.row_count:,}" if step.row_count is not None else "—"
        word, note = proof_of(step)
        cells.append((label, rows, short_digest(step.data_hash), word))
        if note is None:
            meanings[word] = PROOF_MEANINGS[word]
        else:
            notes.append(f"{label}: {note.replace('|', '/')}.")
    header = ("Input", "Rows", "Digest", "Proof")
    if table_width([header, *cells]) <= WIDTH_BUDGET:
        lines = [f"| {' | '.join(header)} |", "|---|---|---|---|"]
        listed = ["\n".join(lines + [f"| {' | '.join(row)} |" for row in cells])]
    else:  # a long asset key: paragraphs break where the table could not
        listed = [
            f"Input {label}: {'rows not counted' if rows == '—' else rows + ' rows'}, "
            f"digest {digest}, {word}."
            for label, rows, digest, word in cells
        ]
    explained = [f"{word}: {meaning}." for word, meaning in meanings.items()]
    return [*listed, *explained, *notes]


def record_line(record_path: str) -> str:
    """Where the record is: its file and folder (the full path is ``ubunye/record_path``)."""
    folder, _, name = record_path.rstrip("/").rpartition("/")
    shown = folder if folder.count("/") < 2 else "…/" + folder.rpartition("/")[2]
    return f"Record: `{name}` in `{shown}/` (full path: {RECORD_PATH})."


def shown_length(markdown: str) -> int:
    """How many characters the UI shows for a line of the summary's Markdown (no markers)."""
    return len(markdown.replace("**", "").replace("`", "").replace(LINE_BREAK, ""))


def hard_wrapped(paragraph: str, width: int = WIDTH_BUDGET) -> str:
    """The paragraph broken at spaces into lines of at most ``width`` shown characters (a word
    longer than that keeps a line of its own)."""
    lines: list[str] = []
    for word in paragraph.split(" "):
        if lines and shown_length(f"{lines[-1]} {word}") <= width:
            lines[-1] = f"{lines[-1]} {word}"
        else:
            lines.append(word)
    return LINE_BREAK.join(lines)


def receipt_summary(
    record: RunRecord,
    output: StepRecord,
    *,
    record_path: str,
    input_asset_keys: Mapping[str, str | None],
    judgement: drift.Judgement,
    previous_run_id: str | None,
    flag_reasons: Sequence[str] = drift.DEFAULT_FLAG_REASONS,
) -> dg.MetadataValue:
    """The ``ubunye/summary`` Markdown of one materialisation (drift when the judgement's reason
    is one of ``flag_reasons``)."""
    rows = f"{output.row_count:,} rows" if output.row_count is not None else "rows not counted"
    data = (
        f"{rows}, digest {short_digest(output.data_hash)}"
        if output.data_hash
        else f"{rows}, no digest: {output.hash_error or 'not hashed'}"
    )
    inputs = list(record.inputs)
    while True:
        blocks = [headline(judgement, previous_run_id, flag_reasons), f"Output: {data}."]

        blocks += inputs_blocks(inputs, input_asset_keys)
        left_out = len(record.inputs) - len(inputs)
        if left_out:
            blocks.append(f"… and {left_out} more input(s): see ubunye/inputs.")
        blocks.append(record_line(record_path))
        text = "\n\n".join(b if b.startswith("|") else hard_wrapped(b) for b in blocks)
        if len(text) < UI_INLINE_LIMIT or not inputs:
            return dg.MetadataValue.md(text)
        inputs = inputs[:-1]


def judged(
    instance: dg.DagsterInstance | None,
    asset_key: dg.AssetKey,
    partition_key: str | None,
    record: RunRecord,
    output_name: str,
    settings: DriftSettings,
    step_context: StepExecutionContext | None = None,
) -> tuple[drift.Judgement, str | None]:
    """This materialisation's record judged against the previous materialisation of the asset
    and partition in the event log (``step_context``: the storing step's, when there is one);
    a judgement that says why when it cannot be made."""
    if instance is None:
        reason = "no Dagster instance to find the previous materialisation in"
        return drift.Judgement(verdict=drift.JudgementVerdict.NOT_JUDGED, reason=reason), None
    current = drift.DriftEvidence.from_record(record, output_name)
    partition = str(partition_key) if partition_key is not None else None
    try:
        finding = judge_before_storage(
            instance, asset_key, partition, current, settings, record.run_id, step_context
        )
        return finding.judgement, finding.previous_run_id
    except Exception as error:  # shown in the entry: a summary never fails the write
        reason = f"the event log could not be read ({type(error).__name__}: {error})"
        return drift.Judgement(verdict=drift.JudgementVerdict.NOT_JUDGED, reason=reason), None


def summary_metadata(
    instance: dg.DagsterInstance | None,
    asset_key: dg.AssetKey,
    partition_key: str | None,
    record: RunRecord,
    output: StepRecord,
    *,
    record_path: str,
    input_asset_keys: Mapping[str, str | None],
    settings: DriftSettings,
    finding: Finding | None = None,
    step_context: StepExecutionContext | None = None,
) -> dict[str, dg.MetadataValue]:
    """``{"ubunye/summary": <Markdown>}`` for one asset materialisation, showing ``finding`` when
    its step judged it already (the event log is not read again), else judged here with the
    asset's drift ``settings`` (its flag reasons also word the verdict)."""
    if finding is not None:
        judgement, previous_run_id = finding.judgement, finding.previous_run_id
    else:
        judgement, previous_run_id = judged(
            instance, asset_key, partition_key, record, output.name, settings, step_context
        )
    summary = receipt_summary(
        record,
        output,
        record_path=record_path,
        input_asset_keys=input_asset_keys,
        judgement=judgement,
        previous_run_id=previous_run_id,
        flag_reasons=settings.flag_reasons,
    )
    return {SUMMARY: summary}
