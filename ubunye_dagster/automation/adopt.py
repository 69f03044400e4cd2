"""What ``with_ubunye(defs, observe=..., automation=...)`` does to a Definitions' assets: the
external assets named in ``observe`` become sources observed by their rows, the assets stored
with receipts get the automation condition (where they have none) and their code hash as their
code version (where they declare none), and a content condition on an asset without receipts is
refused, naming it.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import dagster as dg

from ubunye_dagster import dagster_internals as internals
from ubunye_dagster.automation.conditions import reads_content
from ubunye_dagster.automation.observe import RESOURCE_KEY, observed_source
from ubunye_dagster.automation.sources import Source, as_source
from ubunye_dagster.io.io_manager import UbunyeIOManager
from ubunye_dagster.io.wrapped_io_manager import ReceiptIOManager
from ubunye_dagster.receipts.metadata import CODE_FOLDER, plain
from ubunye_rows.evidence import code_hash


def observed_sources(
    assets: Sequence[Any], observe: Mapping[str, Source | Mapping[str, Any]] | None
) -> tuple[list[Any], list[dg.AssetsDefinition]]:
    """``assets`` without the external assets ``observe`` names, and those as observed sources
    (a key no asset has is a new source). A key an executable asset materialises is refused."""
    wanted = {
        dg.AssetKey.from_user_string(key): as_source(_settings(s))
        for key, s in (observe or {}).items()
    }
    kept: list[Any] = []
    sources: list[dg.AssetsDefinition] = []
    for item in assets:
        if isinstance(item, dg.AssetSpec) and item.key in wanted:
            sources.append(observed_source(item, wanted.pop(item.key)))
            continue
        if isinstance(item, dg.AssetsDefinition) and item.is_executable:
            for key in set(item.keys) & set(wanted):
                raise ValueError(
                    f"observe names {key.to_user_string()}, which the Definitions "
                    f"{'observe' if item.is_observable else 'materialise'} already: only an "
                    "external asset (a dg.AssetSpec, or a key no asset has) is observed"
                )
        kept.append(item)
    sources += [observed_source(dg.AssetSpec(key), source) for key, source in wanted.items()]
    return kept, sources


def component_sources(
    assets: Sequence[Any], observe: Mapping[str, Source | Mapping[str, Any]]
) -> list[dg.AssetsDefinition]:
    """The sources ``observe`` names, defined by the receipts component: a key another
    component defines (a spec or an asset) is refused, since Dagster refuses a key defined
    twice and a component cannot replace another's definitions."""
    defined = {
        key
        for item in assets
        for key in ([item.key] if isinstance(item, dg.AssetSpec) else getattr(item, "keys", ()))
    }
    taken = sorted(name for name in observe if dg.AssetKey.from_user_string(name) in defined)
    if taken:
        raise ValueError(
            f"observe names {', '.join(taken)}, which another component defines: the receipts "
            "component defines an observed source itself, so leave it out of the other "
            "component (its assets may still depend on it by key)"
        )
    return observed_sources([], observe)[1]


def _settings(source: Source | Mapping[str, Any]) -> Any:
    return dict(source) if isinstance(source, Mapping) else source


def receipted_keys(assets: Iterable[Any], resources: Mapping[str, Any]) -> set[dg.AssetKey]:
    """The keys stored with receipts, given the Definitions' ``resources``: through
    ``UbunyeIOManager`` or a ``ReceiptIOManager`` (``with_receipts``), or by an asset that asks
    for the ``ubunye`` resource to account for its own rows (``record_output``, Pipes, dbt)."""
    keys: set[dg.AssetKey] = set()
    for item in assets:
        if not isinstance(item, dg.AssetsDefinition) or not item.is_materializable:
            continue
        if RESOURCE_KEY in item.required_resource_keys:
            keys |= set(item.keys)
            continue
        for key in item.keys:
            manager = resources.get(internals.io_manager_key_of(item, key))
            if isinstance(manager, (UbunyeIOManager, ReceiptIOManager)):
                keys.add(key)
    return keys


def refuse_content_conditions_without_receipts(
    assets: Iterable[Any], receipted: set[dg.AssetKey]
) -> None:
    """ValueError naming every asset whose automation condition reads content but whose
    materialisations carry no rows-v1 digest as their data version."""
    bare = sorted(key.to_user_string() for key in content_keys(assets) - receipted)
    if bare:
        raise ValueError(
            f"on_content_change() is set on {', '.join(bare)}, stored without receipts: its "
            "materialisations would carry no rows-v1 digest as their data version. Store it "
            "through UbunyeIOManager or with_receipts(...), or give it another condition"
        )


def with_automation(
    assets: Sequence[Any],
    condition: dg.AutomationCondition | None,
    receipted: set[dg.AssetKey],
    code_folder: str | None,
) -> list[Any]:
    """``assets``, each receipted asset with ``condition`` where it has no condition of its own
    and its code hash as its code version where it declares none (the record's code hash: the
    ``ubunye/code_folder`` it declares, else ``code_folder``, else its function's folder)."""
    if condition is None:
        return list(assets)
    return [
        _automated(item, condition, receipted, code_folder)
        if isinstance(item, dg.AssetsDefinition) and set(item.keys) & receipted
        else item
        for item in assets
    ]


def _automated(
    assets_def: dg.AssetsDefinition,
    condition: dg.AutomationCondition,
    receipted: set[dg.AssetKey],
    code_folder: str | None,
) -> dg.AssetsDefinition:
    function_folder = (
        internals.function_folder(assets_def.node_def)
        if isinstance(assets_def.node_def, dg.OpDefinition)
        else None
    )

    def automated(spec: dg.AssetSpec) -> dg.AssetSpec:
        if spec.key not in receipted:
            return spec
        declared = spec.metadata.get(CODE_FOLDER)
        folder = str(plain(declared) or "") or code_folder or function_folder
        return spec.replace_attributes(
            automation_condition=spec.automation_condition or condition,
            code_version=spec.code_version or code_hash(folder),
        )

    return assets_def.map_asset_specs(automated)


#: The name of the automation sensor ``with_ubunye`` adds for the assets on ``on_content_change()``
#: (the second and later, for more assets than one sensor takes, end in ``_2``, ``_3``...).
CONTENT_SENSOR = "ubunye_content_automation"
#: The most assets Dagster evaluates in one automation sensor evaluated with the definitions.
ASSETS_PER_SENSOR = 500


def content_keys(assets: Iterable[Any]) -> set[dg.AssetKey]:
    """The materialisable keys whose automation condition reads content (holds
    ``on_content_change()``)."""
    return {
        key
        for item in assets
        if isinstance(item, dg.AssetsDefinition) and item.is_materializable
        for key, condition in item.automation_conditions_by_key.items()
        if reads_content(condition)
    }


def content_sensors(
    assets: Sequence[Any], sensors: Iterable[dg.SensorDefinition]
) -> list[dg.SensorDefinition]:
    """An automation sensor evaluated with the definitions for the assets on
    ``on_content_change()`` that no automation sensor of ``sensors`` targets (none if every one
    is); ValueError naming a sensor that targets one but is evaluated by the daemon, which cannot
    run the condition's provenance operand."""
    wanted = content_keys(assets)
    definitions = [item for item in assets if isinstance(item, dg.AssetsDefinition)]
    covered: set[dg.AssetKey] = set()
    for sensor in sensors:
        in_user_code = internals.evaluated_in_user_code(sensor)
        if in_user_code is None:
            continue
        targeted = wanted & set(sensor.asset_selection.resolve(definitions))
        if targeted and not in_user_code:
            names = ", ".join(sorted(key.to_user_string() for key in targeted))
            raise ValueError(
                f"the automation sensor {sensor.name} targets {names}, on on_content_change(), "
                "but is evaluated by the daemon, which cannot read an asset's provenance: give it "
                "use_user_code_server=True"
            )
        covered |= targeted
    left = sorted(wanted - covered, key=lambda key: key.path)
    chunks = [left[at : at + ASSETS_PER_SENSOR] for at in range(0, len(left), ASSETS_PER_SENSOR)]
    with warnings.catch_warnings():
        # use_user_code_server is a beta parameter: the condition needs it, so it is chosen here.
        warnings.simplefilter("ignore", category=dg.BetaWarning)
        return [
            dg.AutomationConditionSensorDefinition(
                CONTENT_SENSOR if number == 1 else f"{CONTENT_SENSOR}_{number}",
                target=dg.AssetSelection.assets(*chunk).without_checks(),
                use_user_code_server=True,
            )
            for number, chunk in enumerate(chunks, start=1)
        ]
