"""``on_content_change()``: run an asset when what it reads changed, not merely when it was
written again.

Built from Dagster's own conditions, as ``AutomationCondition.eager()`` is, with one difference:
eager counts every new materialisation of an upstream, this counts only an upstream whose data
version moved. With receipts the data version is the rows-v1 digest (the IO manager reports it
for each materialisation, an observed source for each observation), so an upstream rewritten
with the same rows, or a source file touched without a change, requests nothing downstream.
"""

from __future__ import annotations

from collections.abc import Iterator

import dagster as dg

from ubunye_dagster.automation.unread import ProvenanceUnknown, UpstreamContentUnread

#: The condition's label, shown in the UI's automation evaluation and how it is recognised.
LABEL = "on_content_change"
#: The labels of its upstream parts: an upstream's data version moved since the last tick, and
#: an upstream's data version is not the one the asset last read.
UPSTREAM_LABEL = "any_deps_content_changed"
UNREAD_LABEL = "content_unread"


def on_content_change() -> dg.AutomationCondition:
    """Requested when the asset is missing (once: a failed run is not retried), when its code
    version changed, or when an upstream's data version is not the one the asset's latest
    materialisation read (once: not again after a failed run until an upstream moves again);
    never while an upstream is missing or in progress, or the asset is in progress. Where what
    it read is unknown (a partition, a partitioned upstream, a materialisation without
    provenance), when an upstream's data version changed since it was last requested or
    materialised. Like ``eager()``, a time-partitioned asset's latest partition only."""
    condition = dg.AutomationCondition
    moved = condition.any_deps_match(
        condition.data_version_changed() & ~condition.executed_with_root_target()
    ).with_label(UPSTREAM_LABEL)
    # Handled once requested or updated. Not reset by the first evaluation, as
    # ``since_last_handled()`` is: an asset missing when the condition is first applied is
    # requested then (``eager()`` waits for it to become missing again).
    handled = (condition.newly_requested() | condition.newly_updated()).with_label("handled")
    # Provenance needs no ordering of events within a tick: an upstream that moved while the
    # asset ran is still unread after the run, whichever was logged first.
    unread = (
        UpstreamContentUnread()
        & ~condition.newly_requested()
        & (~condition.execution_failed() | moved)
    ).with_label(UNREAD_LABEL)
    return (
        condition.in_latest_time_window()
        & (
            (condition.newly_missing() | condition.code_version_changed()).since(handled)
            | unread
            | (ProvenanceUnknown() & moved.since(handled))
        )
        & ~condition.any_deps_missing()
        & ~condition.any_deps_in_progress()
        & ~condition.in_progress()
    ).with_label(LABEL)


def _nodes(condition: dg.AutomationCondition) -> Iterator[dg.AutomationCondition]:
    yield condition
    for child in condition.children:
        yield from _nodes(child)


def reads_content(condition: dg.AutomationCondition | None) -> bool:
    """True when ``condition`` is, or holds, ``on_content_change()``."""
    return condition is not None and any(node.get_label() == LABEL for node in _nodes(condition))
