"""``build_reproducibility_checks``: the ``ubunye_reproducible`` check declared on watched
assets, so the Dagster UI shows it and its own step judges the latest materialisation."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import dagster as dg

from ubunye_core.locations import StoreAccess
from ubunye_core.records import drift
from ubunye_dagster import dagster_internals as internals
from ubunye_dagster.checks.expectations import validate_declared_expectations
from ubunye_dagster.drift.check_spec import (
    CHECK_NAME,
    CHECK_SETTINGS,
    CheckSettings,
    CoercibleToWatchedAsset,
    declared_deterministic,
    watched_asset_keys,
)
from ubunye_dagster.drift.sensor import judge_latest
from ubunye_dagster.drift.settings import DriftSettings


def build_reproducibility_checks(
    assets: Iterable[CoercibleToWatchedAsset],
    *,
    name: str = "ubunye_reproducibility_checks",
    flag_reasons: Iterable[str] = drift.DEFAULT_FLAG_REASONS,
    strict_sources: bool = False,
    use_lineage_store: bool = True,
    storage_options: Mapping[str, Any] | None = None,
) -> list[dg.AssetChecksDefinition]:
    """Declare the `ubunye_reproducible` check on each asset, so the UI shows its verdicts.

    An asset stored through the Ubunye IO manager gets its verdict in its own step, as its
    receipt is written; the check's step judges, in a run, only the selected assets that no
    step judged, and executed by hand the asset's latest materialisation. The drift sensor
    reports the same verdicts for every materialisation; records are read with `storage_options`.
    """
    assets = list(assets)
    validate_declared_expectations(assets)
    settings = DriftSettings(
        flag_reasons=flag_reasons,
        strict_sources=strict_sources,
        deterministic_keys=declared_deterministic(assets),
        use_lineage_store=use_lineage_store,
        access=StoreAccess(storage_options=dict(storage_options or {})),
    )
    specs = [
        dg.AssetCheckSpec(
            CHECK_NAME,
            asset=key,
            description=(
                "Reproducible: the data does not change unless the code, the environment or an "
                "input did (judged as the Ubunye drift sensor judges)."
            ),
            metadata={CHECK_SETTINGS: CheckSettings.of_asset(settings, key).model_dump()},
        )
        for key in watched_asset_keys(assets)
    ]

    @dg.multi_asset_check(specs=specs, name=name, can_subset=True)
    def _reproducibility(context) -> Iterator[dg.AssetCheckResult]:
        # No annotation on context: Dagster refuses the postponed (string) annotation.
        run_id = context.op_execution_context.run_id
        judged = internals.checks_evaluated_in_run(context.instance, run_id)
        for check_key in sorted(
            set(context.selected_asset_check_keys) - judged,
            key=lambda k: k.asset_key.to_user_string(),
        ):
            yield judge_latest(context.instance, check_key.asset_key, settings)

    return [internals.kept_as_checks(_reproducibility)]
