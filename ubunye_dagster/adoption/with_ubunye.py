"""One step to adopt: the settings of a project's receipts, and ``with_ubunye`` on a Definitions.

``ReceiptSettings`` holds, under the Python API's own names, what ``UbunyeIOManager``,
``UbunyeResource`` and ``build_drift_sensor`` take; the ``dg`` component
(``ubunye_dagster.components.UbunyeReceipts``) has exactly these attributes. What it builds for a
project's assets is the same either way: the IO manager under the default key, the drift sensor,
the reproducibility checks and the expectation checks of every asset stored through it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Annotated, Any, Literal

import dagster as dg
from pydantic import Field, field_validator, model_validator

from ubunye_dagster import dagster_internals as internals
from ubunye_dagster.adoption.error_records import with_error_records
from ubunye_dagster.automation import adopt as automation_adoption
from ubunye_dagster.automation.sources import Source
from ubunye_dagster.checks.expectation_checks import build_expectation_checks
from ubunye_dagster.drift.check_declaration import reproducibility_checks
from ubunye_dagster.drift.hooks import DriftHook, resolve_drift_hook
from ubunye_dagster.drift.sensor import drift_sensor
from ubunye_dagster.drift.settings import DriftSensorSettings
from ubunye_dagster.io.io_manager import UbunyeIOManager
from ubunye_dagster.receipts.failed_steps import build_failed_steps_sensor
from ubunye_dagster.receipts.settings import RecordSettings
from ubunye_dagster.resource import UbunyeResource

#: The resource key Dagster stores an asset under when it names no IO manager.
DEFAULT_IO_MANAGER_KEY = "io_manager"
#: The key of the ``UbunyeResource`` an asset accounting for its own rows asks for (a dbt
#: asset's ``with_dbt_receipts``, ``record_output``, ``run_pipes``).
RESOURCE_KEY = "ubunye"


def _described(cls: type, name: str) -> str | None:
    return cls.model_fields[name].description  # type: ignore[attr-defined]


class ReceiptSettings(RecordSettings):
    """Where data and records go, how inputs are treated, and the drift sensor: the fields of
    ``UbunyeResource`` (``RecordSettings``, whose ``storage_options`` serves the data too: data
    and records on the same store), of ``UbunyeIOManager`` and ``build_drift_sensor``'s
    arguments."""

    base_path: str = Field("data", description=_described(UbunyeIOManager, "base_path"))
    format: Literal["parquet", "delta"] = Field(
        "parquet", description=_described(UbunyeIOManager, "format")
    )
    spark_resource_key: str = Field(
        "pyspark", description=_described(UbunyeIOManager, "spark_resource_key")
    )
    drift_sensor: DriftSensorSettings | None = Field(
        default=DriftSensorSettings(),
        description="build_drift_sensor's arguments; null for no sensor.",
    )
    reproducibility_checks: bool = Field(
        True, description="Declare the ubunye_reproducible check on every asset stored here."
    )
    failed_steps_sensor: bool = Field(
        True,
        description=(
            "Add the sensor that closes as error the records left running by steps Dagster "
            "failed (a killed step process)."
        ),
    )
    expectation_checks: bool = Field(
        True, description="Declare each ubunye/expectations rule as an asset check."
    )
    # In YAML a dotted import path; the resolver keeps it a string there, for the check below.
    on_drift: Annotated[
        DriftHook | str | None, dg.Resolver.default(model_field_type=str | None)
    ] = Field(
        default=None,
        description=(
            "Called by the drift sensor with each flagged verdict (ubunye_dagster.DriftVerdict): "
            "a callable, or its dotted import path (mypkg.alerts.notify)."
        ),
    )

    @field_validator("on_drift", mode="after")
    @classmethod
    def _importable_hook(cls, value: DriftHook | str | None) -> DriftHook | None:
        return resolve_drift_hook(value)

    @model_validator(mode="after")
    def _hook_has_a_sensor(self) -> ReceiptSettings:
        if self.on_drift is not None and self.drift_sensor is None:
            raise ValueError(
                "on_drift is called by the drift sensor, and drift_sensor is null: give "
                "drift_sensor settings (or leave it out) to be told of drift"
            )
        return self

    def resource(self) -> UbunyeResource:
        """The ``UbunyeResource`` these settings describe."""
        return UbunyeResource(**{name: getattr(self, name) for name in RecordSettings.model_fields})

    def io_manager(self) -> UbunyeIOManager:
        """The ``UbunyeIOManager`` these settings describe."""
        fields = (set(UbunyeIOManager.model_fields) & set(type(self).model_fields)) - {"ubunye"}
        values = {name: getattr(self, name) for name in sorted(fields)}
        return UbunyeIOManager(ubunye=self.resource(), **values)

    def companions(
        self, assets: Iterable[Any], existing: dg.Definitions | None = None
    ) -> dg.Definitions:
        """The sensor and checks for the assets stored under the default IO manager key (those
        ``existing`` already has left out)."""
        stored = stored_by_default(assets)
        taken = _check_keys(existing)
        checks: list[dg.AssetChecksDefinition] = []
        if self.reproducibility_checks and stored:
            # Judged as the drift sensor judges, so both give one verdict.
            judging = self.drift_sensor or DriftSensorSettings()
            checks += reproducibility_checks(judging, stored, storage_options=self.storage_options)
        if self.expectation_checks:
            checks += build_expectation_checks(stored)
        checks = [c for c in checks if not (set(c.check_keys) & taken)]
        sensor_names = {s.name for s in (existing.sensors or [])} if existing else set()
        sensors: list[dg.SensorDefinition] = []
        if self.drift_sensor is not None:
            sensor = self.drift_sensor
            sensors.append(drift_sensor(sensor, None, self.on_drift, self.storage_options))
        if self.failed_steps_sensor:
            sensors.append(build_failed_steps_sensor(self.resource()))
        return dg.Definitions(
            asset_checks=checks, sensors=[s for s in sensors if s.name not in sensor_names]
        )


def stored_by_default(assets: Iterable[Any]) -> list[dg.AssetsDefinition]:
    """The materialisable asset definitions whose every asset is stored under the default key
    (an observed source is not stored)."""
    return [
        item
        for item in assets
        if isinstance(item, dg.AssetsDefinition)
        and item.is_materializable
        and all(
            internals.io_manager_key_of(item, key) == DEFAULT_IO_MANAGER_KEY for key in item.keys
        )
    ]


def _check_keys(defs: dg.Definitions | None) -> set[dg.AssetCheckKey]:
    if defs is None:
        return set()
    return {key for checks in defs.asset_checks or [] for key in checks.check_keys}


def _installed_io_manager(defs: dg.Definitions, settings: ReceiptSettings | None) -> Any:
    """The Definitions' own ``UbunyeIOManager`` under the default key (kept when no settings are
    given), else None; any other IO manager there is refused."""
    existing = (defs.resources or {}).get(DEFAULT_IO_MANAGER_KEY)
    if existing is None:
        return None
    if not isinstance(existing, UbunyeIOManager):
        raise ValueError(
            f"the Definitions already store assets with {type(existing).__name__} under "
            f"'{DEFAULT_IO_MANAGER_KEY}': with_ubunye installs UbunyeIOManager there; to keep "
            "your IO manager and add receipts around it, give with_receipts(...) as that resource"
        )
    if settings is not None:
        raise ValueError(
            "the Definitions already have a UbunyeIOManager under 'io_manager': give its "
            "settings there, or call with_ubunye(defs) without settings"
        )
    return existing


def with_ubunye(
    defs: dg.Definitions,
    *,
    observe: Mapping[str, Source | Mapping[str, Any]] | None = None,
    automation: dg.AutomationCondition | None = None,
    **settings: Any,
) -> dg.Definitions:
    """The same Definitions with receipts: ``UbunyeIOManager`` under the default IO manager key
    (from ``settings``, the fields of :class:`ReceiptSettings`) and its ``UbunyeResource`` under
    ``ubunye`` (unless the Definitions have one), the drift sensor, the reproducibility and
    expectation checks of every asset stored there, and the failure hook that leaves an
    ``error`` record for a step that fails before it touches the IO manager. ``observe``: the
    external assets observed by their rows (asset key -> source); ``automation``: the condition
    of every asset stored with receipts that has none (``on_content_change()``), each given its
    code hash as its code version where it declares none."""
    chosen = ReceiptSettings(**settings) if settings else None
    kept = _installed_io_manager(defs, chosen)
    manager = kept if kept is not None else (chosen or ReceiptSettings()).io_manager()
    resources = {} if kept is not None else {DEFAULT_IO_MANAGER_KEY: manager}
    if RESOURCE_KEY not in (defs.resources or {}):
        resources[RESOURCE_KEY] = manager.resource
    assets, sources = automation_adoption.observed_sources(list(defs.assets or []), observe)
    receipted = automation_adoption.receipted_keys(assets, {**(defs.resources or {}), **resources})
    assets = automation_adoption.with_automation(
        assets, automation, receipted, manager.resource.code_folder
    )
    automation_adoption.refuse_content_conditions_without_receipts(assets, receipted)
    content_sensors = automation_adoption.content_sensors(
        [*assets, *sources], list(defs.sensors or [])
    )
    hooked = internals.definitions_with_assets(defs, [*with_error_records(assets), *sources])
    added = (chosen or ReceiptSettings()).companions(assets, existing=defs)
    automated = dg.Definitions(resources=resources, sensors=content_sensors)
    return dg.Definitions.merge(hooked, added, automated)
