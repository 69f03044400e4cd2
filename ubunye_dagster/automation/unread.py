"""Two operands of ``on_content_change()`` that Dagster's own conditions cannot express: whether
an asset's latest materialisation read an upstream at a data version that upstream no longer
has (the provenance Dagster tags each materialisation with), and whether that is unknown.

Both are evaluated where the definitions are loaded (an automation sensor with
``use_user_code_server=True``), which is why ``with_ubunye`` adds such a sensor.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import ClassVar

import dagster as dg

from ubunye_dagster import dagster_internals as internals
from ubunye_dagster.receipts.materialisations import newest_materialisation, tags_of
from ubunye_dagster.receipts.metadata import upstream_versions_from_tags


def current_data_version(instance: dg.DagsterInstance, key: dg.AssetKey) -> str:
    """The data version a step reading ``key`` now records for it: its latest materialisation's,
    else its latest observation's, else Dagster's default (as Dagster looks it up)."""
    record = newest_materialisation(instance, key, None)
    if record is not None:
        tags = tags_of(record)
    else:
        observed = instance.fetch_observations(dg.AssetRecordsFilter(asset_key=key), limit=1)
        tags = observed.records[0].event_log_entry.tags or {} if observed.records else {}
    return tags.get(internals.DATA_VERSION_TAG) or internals.DEFAULT_DATA_VERSION.value


def versions_read(context: dg.AutomationContext) -> dict[dg.AssetKey, str] | None:
    """Each upstream of the asset ``context`` evaluates with the data version its latest
    materialisation read; None when that is unknown: the asset or an upstream is partitioned
    (provenance is then per partition), it was never materialised, or its materialisation
    records no data version for an upstream."""
    if context.partitions_def is not None:
        return None
    parents = internals.automation_parents(context)
    if any(partitioned for _, partitioned in parents):
        return None
    record = newest_materialisation(internals.automation_instance(context), context.key, None)
    versions = upstream_versions_from_tags(tags_of(record)) if record is not None else None
    if versions is None:
        return None
    read = {parent: versions.get(parent.to_user_string()) for parent, _ in parents}
    return None if None in read.values() else read


class _AssetOperand(dg.AutomationCondition[dg.AssetKey]):
    """An operand true for the whole asset or not at all, answered by ``holds``; its name and
    description shown in the UI's evaluation."""

    operand_name: ClassVar[str]
    operand_description: ClassVar[str]

    @property
    def name(self) -> str:
        return self.operand_name

    @property
    def description(self) -> str:
        return self.operand_description

    @property
    def requires_cursor(self) -> bool:
        return False

    @abstractmethod
    def holds(self, context: dg.AutomationContext) -> bool:
        """Whether the operand is true for the asset ``context`` evaluates."""

    def evaluate(self, context: dg.AutomationContext) -> dg.AutomationResult:
        subset = context.candidate_subset if self.holds(context) else context.get_empty_subset()
        return dg.AutomationResult(context=context, true_subset=subset)


class UpstreamContentUnread(_AssetOperand):
    """True when an upstream's data version is no longer the one the asset's latest
    materialisation read; never where that is unknown (``versions_read``)."""

    operand_name = "upstream_content_unread"
    operand_description = (
        "An upstream's data version is not the one the latest materialisation read"
    )

    def holds(self, context: dg.AutomationContext) -> bool:
        read = versions_read(context)
        if read is None:
            return False
        instance = internals.automation_instance(context)
        return any(
            version != current_data_version(instance, parent) for parent, version in read.items()
        )


class ProvenanceUnknown(_AssetOperand):
    """True where what the asset's latest materialisation read is unknown (``versions_read``):
    its content is then judged by the upstream data versions that moved."""

    operand_name = "provenance_unknown"
    operand_description = "What the latest materialisation read is not known"

    def holds(self, context: dg.AutomationContext) -> bool:
        return versions_read(context) is None
