"""Sources observed by their rows: an external asset made an observable source asset whose
observation hashes the rows where they are and reports the rows-v1 digest as its data version.

Dagster then knows when a source's content moved, and only then: a file rewritten with the same
rows keeps its data version, so nothing downstream counts it as changed. A source that cannot be
read is observed with its ``ubunye/hash_error`` and no data version, never the last one known.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Mapping
from typing import Any

import dagster as dg

from ubunye_dagster.automation.observation_records import save_observation
from ubunye_dagster.automation.sources import Source, as_source
from ubunye_dagster.receipts.metadata import output_metadata

#: The resource key of the ``UbunyeResource`` an observation records with (``with_ubunye``
#: and the component give it).
RESOURCE_KEY = "ubunye"
#: Definition metadata of an observed source: where its rows are (``parquet:<path>``,
#: ``duckdb:<table>``...).
OBSERVED_AT = "ubunye/observed_at"
#: The prefix of an observation's op name (the asset key's parts after it).
OP_PREFIX = "ubunye_observe__"


def observed_source(
    spec: dg.AssetSpec | dg.AssetKey | str, source: Source | Mapping[str, Any]
) -> dg.AssetsDefinition:
    """The external asset ``spec`` (a spec, a key, or ``"a/b"``) as an observable source asset whose
    observation hashes ``source``'s rows where they are stored, saves an ``observation`` record
    and reports ``dg.ObserveResult(data_version=<digest>, metadata=<receipt>)``. It needs the
    ``ubunye`` resource (a ``UbunyeResource``). A local path or DuckDB file that does not exist
    is refused now, naming the asset."""
    if isinstance(spec, str):
        spec = dg.AssetKey.from_user_string(spec)
    if isinstance(spec, dg.AssetKey):
        spec = dg.AssetSpec(spec)
    source = as_source(dict(source) if isinstance(source, Mapping) else source)
    name = spec.key.to_user_string()
    if spec.partitions_def is not None:
        raise ValueError(
            f"observed source {name} is partitioned: a source is observed whole (give it "
            "without partitions_def)"
        )
    source.refuse_missing(name)
    observed = _observed_spec(spec, source)

    def observe(context) -> dg.ObserveResult:
        # No annotation on context: Dagster refuses the postponed (string) annotation.
        return observation(context, spec.key, source)

    # Observable source assets are Dagster's one way to observe (beta since 1.10); its warning
    # would otherwise greet every load of the user's definitions.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=dg.BetaWarning)
        decorate = dg.multi_observable_source_asset(
            specs=[observed],
            name=OP_PREFIX + "__".join(_safe(part) for part in spec.key.path),
            required_resource_keys={RESOURCE_KEY, *source.resource_keys},
        )
        return decorate(observe)


def _safe(part: str) -> str:
    return "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in part)


def _observed_spec(spec: dg.AssetSpec, source: Source) -> dg.AssetSpec:
    """The spec with where its rows are, its kind, and the source's cron when it has no
    automation condition of its own."""
    condition = spec.automation_condition
    if condition is None and source.cron is not None:
        condition = dg.AutomationCondition.cron_tick_passed(source.cron).since_last_handled()
    return spec.replace_attributes(
        metadata={**spec.metadata, OBSERVED_AT: source.location},
        # Dagster allows three kinds: a spec that has them keeps its own.
        kinds=set(spec.kinds) | ({source.kind} if len(spec.kinds) < 3 else set()),
        automation_condition=condition,
    )


def observation(
    context: dg.AssetExecutionContext, asset_key: dg.AssetKey, source: Source
) -> dg.ObserveResult:
    """Hash ``source``'s rows, save the observation record, and report it."""
    place = getattr(context.resources, RESOURCE_KEY)
    if not hasattr(place, "store"):
        raise TypeError(
            f"observed source {asset_key.to_user_string()}: the '{RESOURCE_KEY}' resource is a "
            f"{type(place).__name__}, not a UbunyeResource (with_ubunye gives one)"
        )
    started = time.time()
    step = source.hashed_step(asset_key.to_user_string(), context.resources)
    record, path = save_observation(context, place, asset_key, step, started)
    metadata = output_metadata(record, step, record_path=path, input_asset_keys={})
    if step.hash_error is not None:
        context.log.warning(
            f"ubunye: observed source {asset_key.to_user_string()} could not be hashed "
            f"({step.hash_error}); it is observed without a data version"
        )
    version = dg.DataVersion(step.data_hash) if step.data_hash is not None else None
    return dg.ObserveResult(asset_key=asset_key, data_version=version, metadata=metadata)
