"""What ``ubunye-dagster lineage search`` prints: a line per run and the JSON list of records,
streamed as they come. Plain text, so a search loads neither the table printer nor the record
model."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

import click

from ubunye_core.wording import counted

if TYPE_CHECKING:
    from ubunye_core.store.listing import RunEntry

#: The colour of each run status (an unknown one is shown as running).
STATUS_COLOURS = {"success": "green", "error": "red", "running": "yellow"}
#: What a value that was not recorded is shown as.
NOT_RECORDED = "-"


def seconds_text(value: float | None) -> str:
    """Seconds with three decimals and an ``s``; ``-`` when not recorded."""
    return f"{value:.3f}s" if value is not None else NOT_RECORDED


_SEARCH_COLUMNS = (("RUN ID", 36), ("TASK", 40), ("STARTED", 19), ("STATUS", 8))


def write_search_lines(
    entries: Iterable[RunEntry], write: Callable[[str], None], color: bool
) -> int:
    """``search``: a heading, one line per matching run as it comes (newest first), then the
    count; ``color`` paints the status. Returns the count."""
    count = 0
    for entry in entries:
        if count == 0:
            write("  ".join(name.ljust(width) for name, width in _SEARCH_COLUMNS) + "  DURATION\n")
        status = entry.status.ljust(8)
        if color:
            status = click.style(status, fg=STATUS_COLOURS.get(entry.status, "yellow"))
        write(
            f"{entry.run_id:<36}  {entry.task_path:<40}  {entry.started_at[:19]:<19}  "
            f"{status}  {seconds_text(entry.duration_sec)}\n"
        )
        count += 1
    write(f"{counted(count, 'matching run')}\n" if count else "No matching lineage records.\n")
    return count


def write_json_list(documents: Iterable[str], write: Callable[[str], None]) -> None:
    """A JSON list of record documents (each as ``RunRecord.to_json`` writes it), streamed:
    byte for byte what ``json.dumps(list, indent=2)`` prints for the same records."""
    first = True
    for document in documents:
        write(("[\n  " if first else ",\n  ") + document.replace("\n", "\n  "))
        first = False
    write("[]\n" if first else "\n]\n")
