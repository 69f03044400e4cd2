"""``UbunyeDbtProjectComponent``: dagster-dbt's ``DbtProjectComponent`` whose every model, seed
and snapshot gets its receipt, in a components project's ``defs.yaml``::

    type: ubunye_dagster.dbt.UbunyeDbtProjectComponent
    attributes:
      project: "{{ project_root }}/dbt_shop"

It takes the component's own attributes unchanged, and where records go (``usecase_dir``,
``lineage_dir``, ``usecase``: the fields of ``RecordLocation``, with its defaults and checks,
which ``UbunyeResource`` and the project's ``UbunyeReceipts`` component have too). Its templates
know ``on_content_change``, so the dbt assets can run only when what they read changed::

      translation:
        automation_condition: "{{ on_content_change() }}"

and the automation sensor evaluated with the definitions that the condition needs comes with
them.
"""

# No ``from __future__ import annotations``: Dagster resolves the attributes from real types.
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import dagster as dg
from dagster_dbt import DbtCliResource, DbtProjectComponent

from ubunye_dagster.automation.adopt import content_sensors
from ubunye_dagster.automation.conditions import on_content_change
from ubunye_dagster.dbt.receipts import with_dbt_receipts
from ubunye_dagster.receipts.settings import RecordLocation, location_dataclass
from ubunye_dagster.resource import UbunyeResource


@dataclass
class UbunyeDbtProjectComponent(DbtProjectComponent, location_dataclass()):  # type: ignore[misc]
    """A dbt project as assets, each materialisation with its receipt (``with_dbt_receipts``)."""

    def __post_init__(self) -> None:
        self.location()  # a bad place is refused as the component loads, as RecordLocation does

    def location(self) -> RecordLocation:
        """Where this component's records go, checked."""
        return RecordLocation(**{name: getattr(self, name) for name in RecordLocation.model_fields})

    def ubunye(self) -> UbunyeResource:
        """The resource recording this component's dbt nodes where its records go."""
        return UbunyeResource(**self.location().model_dump())

    def execute(self, context: dg.AssetExecutionContext, dbt: DbtCliResource) -> Iterator[Any]:
        """The component's dbt command, its events with receipts."""
        invocation = dbt.cli(self.get_cli_args(context), context=context)
        yield from with_dbt_receipts(invocation, context=context, ubunye=self.ubunye())

    @classmethod
    def get_additional_scope(cls) -> Mapping[str, Any]:
        """The templates' scope: dagster-dbt's, and ``on_content_change``."""
        return {**super().get_additional_scope(), "on_content_change": on_content_change}

    def build_defs(self, context: dg.ComponentLoadContext) -> dg.Definitions:
        """dagster-dbt's definitions, with the automation sensor for the assets the
        translation put on ``on_content_change()``."""
        defs = super().build_defs(context)
        sensors = content_sensors(list(defs.assets or []), list(defs.sensors or []))
        return dg.Definitions.merge(defs, dg.Definitions(sensors=sensors)) if sensors else defs
