"""Expectations as Dagster asset checks: one check per rule in ``ubunye/expectations``.

``build_expectation_checks(assets)`` declares the checks. The IO manager judges the rules on the
rows it writes (as it always has); the checks report those judgements on the asset's Checks tab,
in the same run:

- a rule of severity ``fail`` is a *blocking* check of severity ERROR: when broken, the IO manager
  refuses the write and reports the failed evaluation itself (the asset's step fails, so neither
  the check step nor any downstream asset runs);
- a rule of severity ``warn`` is a check of severity WARN;
- otherwise the check step, which runs right after the asset, reports each rule's result from the
  materialisation's ``ubunye/expectation_results`` metadata.

Each evaluation carries ``failed`` and ``total`` (rows) as metadata.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import dagster as dg

from ubunye_dagster import dagster_internals as internals
from ubunye_dagster.checks.expectations import ExpectationError, Rule, parse_rules
from ubunye_dagster.receipts import metadata as metadata_keys
from ubunye_dagster.receipts.materialisations import metadata_values, newest_materialisation

_CHECK_NAME = re.compile(r"^[A-Za-z0-9_]+$")


def check_severity(severity: str) -> dg.AssetCheckSeverity:
    """The Dagster severity of a rule severity: ``fail`` is ERROR, ``warn`` is WARN."""
    return dg.AssetCheckSeverity.ERROR if severity == "fail" else dg.AssetCheckSeverity.WARN


def evaluation_metadata(entry: Mapping[str, Any]) -> dict[str, Any]:
    """The metadata of one rule's evaluation: counts first, then what the rule reads."""
    values = {"failed": int(entry["failed"]), "total": int(entry["total"]), "kind": entry["kind"]}
    if entry.get("column"):
        values["column"] = entry["column"]
    return values


def _rule_spec(key: dg.AssetKey, rule: Rule) -> dg.AssetCheckSpec:
    if not _CHECK_NAME.match(rule.name):
        raise ExpectationError(
            f"{key.to_user_string()}: rule name '{rule.name}' cannot name a Dagster asset check "
            "(letters, digits and '_' only); give the rule a 'name' such as "
            f"'{re.sub(r'[^A-Za-z0-9_]+', '_', rule.name).strip('_') or 'rule'}'"
        )
    what = f"{rule.kind} on {rule.column}" if rule.column else rule.kind
    blocking = rule.severity == "fail"
    effect = "blocks the write and downstream assets" if blocking else "warns"
    return dg.AssetCheckSpec(
        rule.name,
        asset=key,
        blocking=blocking,
        description=f"Ubunye expectation: {what}; when broken it {effect}.",
        metadata={"ubunye/rule_kind": rule.kind, "ubunye/severity": rule.severity},
    )


def expectation_check_specs(assets: Iterable[Any]) -> list[dg.AssetCheckSpec]:
    """One check spec per rule declared in ``ubunye/expectations`` on the given assets
    (definitions or specs); assets without rules give none."""
    specs: list[dg.AssetCheckSpec] = []
    for item in assets:
        asset_specs = getattr(item, "specs", None) or [item]
        for asset_spec in asset_specs:
            declared = (asset_spec.metadata or {}).get(metadata_keys.EXPECTATIONS)
            where = f"{asset_spec.key.to_user_string()}: {metadata_keys.EXPECTATIONS}"
            specs.extend(_rule_spec(asset_spec.key, r) for r in parse_rules(declared, where=where))
    return specs


def _latest_results(
    context: dg.AssetCheckExecutionContext, key: dg.AssetKey, partitioned: bool
) -> tuple[str | None, list[Mapping[str, Any]]]:
    """Run id and expectation results of the latest materialisation of the asset (of the run's
    partition, for a partitioned asset: an unpartitioned one may run in a partitioned run)."""
    op_context = context.op_execution_context
    partition = op_context.partition_key if partitioned and op_context.has_partition_key else None
    latest = newest_materialisation(context.instance, key, partition)
    if latest is None:
        return None, []
    return latest.run_id, list(metadata_values(latest).get(metadata_keys.EXPECTATION_RESULTS) or [])


def _result(
    check_key: dg.AssetCheckKey, severity: str, entry: Mapping[str, Any] | None, run_id: str | None
) -> dg.AssetCheckResult:
    if entry is None:
        where = f"run {run_id}" if run_id else "any run"
        return dg.AssetCheckResult(
            asset_key=check_key.asset_key,
            check_name=check_key.name,
            passed=False,
            severity=check_severity(severity),
            description=f"no result for this rule in the latest materialisation ({where})",
        )
    return dg.AssetCheckResult(
        asset_key=check_key.asset_key,
        check_name=check_key.name,
        passed=bool(entry["passed"]),
        severity=check_severity(entry["severity"]),
        metadata={**evaluation_metadata(entry), "ubunye/run_id": run_id},
    )


def _checks_of_one_asset(
    key: dg.AssetKey, specs: Sequence[dg.AssetCheckSpec], name: str, partitioned: bool
) -> dg.AssetChecksDefinition:
    severities = {spec.key: spec.metadata["ubunye/severity"] for spec in specs}

    @dg.multi_asset_check(specs=specs, name=name, can_subset=True)
    def _expectations(context) -> Iterator[dg.AssetCheckResult]:
        # No annotation on context: Dagster refuses the postponed (string) annotation.
        run_id, results = _latest_results(context, key, partitioned)
        by_rule = {entry.get("rule"): entry for entry in results}
        for check_key in sorted(context.selected_asset_check_keys, key=lambda k: k.name):
            yield _result(check_key, severities[check_key], by_rule.get(check_key.name), run_id)

    return internals.kept_as_checks(_expectations)


def build_expectation_checks(
    assets: Sequence[Any], *, name_prefix: str = "ubunye_expectations"
) -> list[dg.AssetChecksDefinition]:
    """Declare every ``ubunye/expectations`` rule of ``assets`` as a Dagster asset check named by
    the rule's name; pass the result to ``Definitions(asset_checks=...)``. No rules, no checks.

    One check step per asset (``<name_prefix>_<asset key>``), so a refused write of one asset
    never holds back another's checks. Materialising an asset runs its checks in the same run;
    executed alone, a check reports the rule's result in the asset's latest materialisation.
    """
    by_asset: dict[dg.AssetKey, list[dg.AssetCheckSpec]] = {}
    for spec in expectation_check_specs(assets):
        by_asset.setdefault(spec.asset_key, []).append(spec)
    partitioned = {
        spec.key
        for item in assets
        for spec in (getattr(item, "specs", None) or [item])
        if getattr(item, "partitions_def", None) or spec.partitions_def
    }
    return [
        _checks_of_one_asset(
            key, specs, f"{name_prefix}_{key.to_python_identifier()}", key in partitioned
        )
        for key, specs in by_asset.items()
    ]
