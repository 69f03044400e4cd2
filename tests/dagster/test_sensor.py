"""The drift sensor against a real Dagster instance (sqlite in a temp folder).

Most materialisations here carry the brief's metadata keys written by plain assets; their digests
are a stand-in (sha256 of the rows as JSON), as the sensor only compares receipts. A few run
real assets through `UbunyeIOManager` (the check's verdict given in each asset's own step among
them); one runs Dagster's sensor daemon and the UI's GraphQL queries. Elsewhere each tick
reports its asset events to the instance as the daemon does.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import os
import random
import sqlite3
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from ubunye_core.records.drift import INPUTS_CHANGED, INPUTS_UNKNOWN, SAME_INPUTS
from ubunye_core.records.model import RunRecord, StepRecord
from ubunye_dagster.drift.check_declaration import build_reproducibility_checks
from ubunye_dagster.drift.check_spec import CHECK_NAME
from ubunye_dagster.drift.run_tags import DRIFT_TAG
from ubunye_dagster.drift.sensor import DriftCursor, build_drift_sensor
from ubunye_dagster.drift.wording import NOTHING_NEW
from ubunye_dagster.receipts import metadata as keys
from ubunye_dagster.receipts.metadata import RecordedOutput

CODE_V1 = "sha256:" + "1" * 64
CODE_V2 = "sha256:" + "2" * 64
ENV_V1 = "sha256:" + "a" * 64
ENV_V2 = "sha256:" + "b" * 64
ORDERS = [3, 1, 4, 1, 5]


def digest(rows: Any) -> str:
    return "sha256:" + hashlib.sha256(json.dumps(rows, sort_keys=True).encode()).hexdigest()


def receipt_metadata(
    rows: Any,
    *,
    code: str = CODE_V1,
    env: str = ENV_V1,
    inputs: dict[str, Any] | None = None,
    method: str = "rows-v1",
) -> dict[str, Any]:
    return {
        keys.DATA_HASH: digest(rows),
        keys.HASH_METHOD: method,
        keys.CODE_HASH: code,
        keys.ENVIRONMENT_HASH: env,
        keys.INPUTS: dg.MetadataValue.json(inputs or {}),
    }


def input_entry(asset_key: str, rows: Any) -> dict[str, Any]:
    return {"asset_key": asset_key, "data_hash": digest(rows), "row_count": len(rows)}


def pipeline(
    *,
    orders: Sequence[int] = ORDERS,
    noisy_totals: bool = False,
    noisy_orders: bool = False,
    code: str = CODE_V1,
    env: str = ENV_V1,
) -> list[dg.AssetsDefinition]:
    """`orders` -> `totals`, each returning its rows with a receipt in its metadata."""

    @dg.asset(name="orders")
    def orders_asset() -> dg.Output:
        rows = [*orders, random.random()] if noisy_orders else list(orders)
        return dg.Output(rows, metadata=receipt_metadata(rows, code=code, env=env))

    @dg.asset(name="totals")
    def totals(orders: list) -> dg.Output:
        rows = [sum(orders), random.random()] if noisy_totals else [sum(orders)]
        return dg.Output(
            rows,
            metadata=receipt_metadata(
                rows, code=code, env=env, inputs={"orders": input_entry("orders", orders)}
            ),
        )

    return [orders_asset, totals]


def materialise(instance: dg.DagsterInstance, assets: Sequence[Any], **kwargs: Any) -> str:
    result = dg.materialize(assets, instance=instance, **kwargs)
    assert result.success
    return result.run_id


def tick(
    sensor: dg.SensorDefinition,
    instance: dg.DagsterInstance,
    cursor: str | None,
    *,
    report: bool = True,
):
    """Evaluate one tick; report its asset events to the instance as the daemon does."""
    data = sensor.evaluate_tick(dg.build_sensor_context(instance=instance, cursor=cursor))
    if report:
        for event in data.asset_events:
            instance.report_runless_asset_event(event)
    return data


def evaluations_of(data, asset: str) -> list[dg.AssetCheckEvaluation]:
    return [e for e in data.asset_events if e.asset_key == dg.AssetKey.from_user_string(asset)]


def only(items: Sequence[Any]) -> Any:
    assert len(items) == 1, items
    return items[0]


def meta(evaluation: dg.AssetCheckEvaluation, key: str) -> Any:
    return evaluation.metadata[key].value


def drift_tag(instance: dg.DagsterInstance, run_id: str) -> str | None:
    run = instance.get_run_by_id(run_id)
    assert run is not None
    return run.tags.get(DRIFT_TAG)


#: sqlite commits are synchronous; a memory-backed folder (when the OS has one) keeps the
#: instance on real sqlite storage without paying a disk flush per event.
MEMORY_FOLDER = Path("/dev/shm")


@pytest.fixture
def instance(tmp_path: Path):
    base = MEMORY_FOLDER if MEMORY_FOLDER.is_dir() and os.access(MEMORY_FOLDER, os.W_OK) else None
    with (
        tempfile.TemporaryDirectory(dir=base, prefix="ubunye-drift-") as home,
        dg.instance_for_test(temp_dir=home) as test_instance,
    ):
        yield test_instance


# --- the promises -------------------------------------------------------------------


@pytest.mark.smoke
def test_a_deterministic_asset_materialised_twice_is_not_flagged(instance):
    sensor = build_drift_sensor(pipeline())
    first = materialise(instance, pipeline())
    second = materialise(instance, pipeline())
    data = tick(sensor, instance, None)

    totals = evaluations_of(data, "totals")
    assert [e.passed for e in totals] == [True, True]
    assert meta(totals[0], "ubunye/verdict") == "not judged"
    assert meta(totals[1], "ubunye/verdict") == "unchanged"
    assert meta(totals[1], "ubunye/previous_run") == first
    assert data.run_requests == []
    assert drift_tag(instance, second) is None


@pytest.mark.smoke
def test_random_output_with_unchanged_inputs_is_flagged_same_inputs(instance):
    sensor = build_drift_sensor(pipeline())
    first = materialise(instance, pipeline(noisy_totals=True))
    second = materialise(instance, pipeline(noisy_totals=True))
    data = tick(sensor, instance, None)

    flagged = evaluations_of(data, "totals")[-1]
    assert not flagged.passed
    assert flagged.severity == dg.AssetCheckSeverity.ERROR
    assert meta(flagged, "ubunye/reason") == SAME_INPUTS
    assert meta(flagged, "ubunye/previous_run") == first
    assert meta(flagged, "ubunye/run") == second
    assert meta(flagged, "ubunye/previous_data_hash") != meta(flagged, "ubunye/data_hash")
    assert evaluations_of(data, "orders")[-1].passed
    assert drift_tag(instance, second) == SAME_INPUTS
    assert drift_tag(instance, first) is None


@pytest.mark.smoke
def test_the_flag_is_the_latest_check_result_on_the_asset(instance):
    materialise(instance, pipeline(noisy_totals=True))
    materialise(instance, pipeline(noisy_totals=True))
    tick(build_drift_sensor(pipeline()), instance, None)

    check_key = dg.AssetCheckKey(dg.AssetKey("totals"), CHECK_NAME)
    latest = instance.event_log_storage.get_latest_asset_check_execution_by_key([check_key])
    execution = latest[check_key]
    assert execution.status.value == "FAILED"
    last_totals = instance.fetch_materializations(dg.AssetKey("totals"), limit=1).records[0]
    evaluation = execution.event.dagster_event.event_specific_data
    assert evaluation.target_materialization_data.storage_id == last_totals.storage_id


def test_the_storage_ids_a_judgement_names_are_text_not_numbers_dagster_plots(instance):
    materialise(instance, pipeline())
    materialise(instance, pipeline())
    [first, second] = evaluations_of(tick(build_drift_sensor(pipeline()), instance, None), "totals")

    records = instance.fetch_materializations(dg.AssetKey("totals"), limit=2).records
    newest, previous = (str(record.storage_id) for record in records)
    assert second.metadata["ubunye/storage_id"] == dg.TextMetadataValue(newest)
    assert second.metadata["ubunye/previous_storage_id"] == dg.TextMetadataValue(previous)
    assert first.metadata["ubunye/storage_id"] == dg.TextMetadataValue(previous)
    assert "ubunye/previous_storage_id" not in first.metadata


@pytest.mark.smoke
def test_changed_upstream_data_passes_as_inputs_changed_naming_the_upstream(instance):
    sensor = build_drift_sensor(pipeline())
    materialise(instance, pipeline(orders=[1, 2, 3]))
    second = materialise(instance, pipeline(orders=[1, 2, 4]))
    data = tick(sensor, instance, None)

    totals = evaluations_of(data, "totals")[-1]
    assert totals.passed
    assert meta(totals, "ubunye/reason") == INPUTS_CHANGED
    assert meta(totals, "ubunye/outcome") == "explained (inputs changed: orders)"
    assert meta(totals, "ubunye/moved_inputs") == ["orders"]
    assert "inputs changed: orders" in totals.description
    # orders reads no asset: a source, whose change is expected.
    orders = evaluations_of(data, "orders")[-1]
    assert orders.passed and meta(orders, "ubunye/outcome") == "explained (source: reads no asset)"
    assert drift_tag(instance, second) is None


def test_inputs_changed_fails_the_check_as_a_warning_when_in_flag_reasons(instance):
    sensor = build_drift_sensor(pipeline(), flag_reasons=[SAME_INPUTS, INPUTS_CHANGED])
    materialise(instance, pipeline(orders=[1, 2, 3]))
    second = materialise(instance, pipeline(orders=[1, 2, 4]))
    totals = evaluations_of(tick(sensor, instance, None), "totals")[-1]
    assert not totals.passed
    assert totals.severity == dg.AssetCheckSeverity.WARN
    assert meta(totals, "ubunye/outcome") == "drift (inputs changed: orders)"
    assert drift_tag(instance, second) == INPUTS_CHANGED


def reader_of(upstream: Any, *, name: str = "report", config_hash: str | None = None):
    """An asset that depends on `upstream` without loading it (another IO manager's data) and
    writes a fresh random receipt each run."""

    @dg.asset(name=name, deps=[upstream])
    def report() -> dg.Output:
        rows = [random.random()]
        metadata = receipt_metadata(rows)
        if config_hash:
            metadata[keys.CONFIG_HASH] = config_hash
        return dg.Output(rows, metadata=metadata)

    return report


def observe(instance: dg.DagsterInstance, source: dg.SourceAsset) -> None:
    """Run the observable source's observation in a job, as a schedule would."""
    defs = dg.Definitions(
        assets=[source], jobs=[dg.define_asset_job("observe_source", selection=[source])]
    )
    assert defs.resolve_job_def("observe_source").execute_in_process(instance=instance).success


def test_an_upstream_dagster_versioned_elsewhere_that_moved_explains_the_change(instance):
    published = {"version": "v1"}

    @dg.observable_source_asset(name="feed")
    def feed() -> dg.DataVersion:
        return dg.DataVersion(published["version"])

    report = reader_of(feed)
    for version in ("v1", "v2"):
        published["version"] = version
        observe(instance, feed)
        materialise(instance, [feed, report], selection=["report"])
    evaluation = evaluations_of(tick(build_drift_sensor([report]), instance, None), "report")[-1]
    assert evaluation.passed
    assert meta(evaluation, "ubunye/outcome") == "explained (inputs changed: feed)"


def test_an_upstream_whose_data_version_held_leaves_same_inputs(instance):
    @dg.observable_source_asset(name="feed")
    def feed() -> dg.DataVersion:
        return dg.DataVersion("v1")

    report = reader_of(feed)
    observe(instance, feed)
    materialise(instance, [feed, report], selection=["report"])
    materialise(instance, [feed, report], selection=["report"])
    evaluation = evaluations_of(tick(build_drift_sensor([report]), instance, None), "report")[-1]
    assert not evaluation.passed
    assert meta(evaluation, "ubunye/outcome") == "drift (same inputs)"


def test_an_upstream_with_no_digest_and_no_data_version_is_flagged_inputs_unknown(instance):
    report = reader_of(dg.AssetSpec("dropped_file"))
    materialise(instance, [report])
    materialise(instance, [report])
    evaluation = evaluations_of(tick(build_drift_sensor([report]), instance, None), "report")[-1]
    assert not evaluation.passed
    assert evaluation.severity == dg.AssetCheckSeverity.WARN
    assert meta(evaluation, "ubunye/outcome") == "drift (inputs unknown: dropped_file)"


def test_a_changed_run_config_explains_the_change(instance):
    for config_hash in ("sha256:k1", "sha256:k2"):
        materialise(instance, [reader_of("upstream", config_hash=config_hash)])
    sensor = build_drift_sensor(["report"])
    evaluation = evaluations_of(tick(sensor, instance, None), "report")[-1]
    assert evaluation.passed
    assert meta(evaluation, "ubunye/outcome") == "explained (config changed)"


def noisy_source(**metadata: Any) -> dg.AssetsDefinition:
    @dg.asset(name="ingested", metadata=metadata)
    def ingested() -> dg.Output:
        rows = [random.random()]
        return dg.Output(rows, metadata=receipt_metadata(rows))

    return ingested


def test_an_asset_that_reads_no_asset_is_a_source_and_passes(instance):
    source = noisy_source()
    materialise(instance, [source])
    materialise(instance, [source])
    evaluation = evaluations_of(tick(build_drift_sensor([source]), instance, None), "ingested")[-1]
    assert evaluation.passed
    assert meta(evaluation, "ubunye/outcome") == "explained (source: reads no asset)"


def test_a_source_declared_deterministic_is_flagged_same_inputs(instance):
    source = noisy_source(**{keys.DETERMINISTIC: True})
    materialise(instance, [source])
    materialise(instance, [source])
    defs = dg.Definitions(assets=[source])
    for sensor in (build_drift_sensor([source]), build_drift_sensor(None)):
        context = dg.build_sensor_context(instance=instance, definitions=defs)
        data = sensor.evaluate_tick(context)
        evaluation = evaluations_of(data, "ingested")[-1]
        assert not evaluation.passed
        assert meta(evaluation, "ubunye/outcome") == "drift (same inputs)"


def test_strict_sources_judges_every_source_strictly(instance):
    source = noisy_source()
    materialise(instance, [source])
    materialise(instance, [source])
    sensor = build_drift_sensor([source], strict_sources=True)
    evaluation = evaluations_of(tick(sensor, instance, None), "ingested")[-1]
    assert not evaluation.passed and evaluation.severity == dg.AssetCheckSeverity.ERROR


@pytest.mark.parametrize(
    ("before", "after", "reason"),
    [
        ({"code": CODE_V1}, {"code": CODE_V2}, "code changed"),
        ({"env": ENV_V1}, {"env": ENV_V2}, "environment changed"),
    ],
    ids=["code", "environment"],
)
def test_a_code_or_environment_change_is_not_flagged(instance, before, after, reason):
    sensor = build_drift_sensor(pipeline())
    materialise(instance, pipeline(noisy_totals=True, **before))
    second = materialise(instance, pipeline(noisy_totals=True, **after))
    data = tick(sensor, instance, None)

    totals = evaluations_of(data, "totals")[-1]
    assert totals.passed
    assert meta(totals, "ubunye/verdict") == "explained"
    assert meta(totals, "ubunye/reason") == reason
    assert drift_tag(instance, second) is None


@pytest.mark.smoke
def test_partitions_are_never_compared_with_each_other(instance):
    regions = dg.StaticPartitionsDefinition(["north", "south"])

    @dg.asset(partitions_def=regions)
    def sales(context) -> dg.Output:
        rows = [context.partition_key, len(context.partition_key)]
        return dg.Output(rows, metadata=receipt_metadata(rows))

    sensor = build_drift_sensor([sales])
    north_first = materialise(instance, [sales], partition_key="north")
    materialise(instance, [sales], partition_key="south")
    first_tick = tick(sensor, instance, None)
    materialise(instance, [sales], partition_key="north")
    # The second north is judged in a later tick, so its predecessor comes from the event log.
    second_tick = tick(sensor, instance, first_tick.cursor)

    judged = [*evaluations_of(first_tick, "sales"), *evaluations_of(second_tick, "sales")]
    assert [meta(e, "ubunye/partition") for e in judged] == ["north", "south", "north"]
    assert [meta(e, "ubunye/verdict") for e in judged] == ["not judged", "not judged", "unchanged"]
    assert meta(judged[2], "ubunye/previous_run") == north_first
    assert all(e.passed for e in judged)


def test_an_unpartitioned_receipt_is_judged_against_the_last_unpartitioned_one_past_partitions(
    instance,
):
    @dg.asset(name="ledger")
    def ledger() -> dg.Output:
        return dg.Output([1, 2], metadata=receipt_metadata([1, 2]))

    sensor = build_drift_sensor([ledger])
    first = materialise(instance, [ledger])
    for day in range(25):  # more than a page of partitioned history stands between the two
        instance.report_runless_asset_event(
            dg.AssetMaterialization(
                "ledger", partition=f"day-{day}", metadata=receipt_metadata([day])
            )
        )
    first_tick = tick(sensor, instance, None)
    materialise(instance, [ledger])
    second_tick = tick(sensor, instance, first_tick.cursor)

    [judged] = evaluations_of(second_tick, "ledger")
    assert "ubunye/partition" not in judged.metadata
    assert meta(judged, "ubunye/verdict") == "unchanged"
    assert meta(judged, "ubunye/previous_run") == first


def test_a_second_tick_flags_nothing_new(instance):
    sensor = build_drift_sensor(pipeline())
    materialise(instance, pipeline(noisy_totals=True))
    second = materialise(instance, pipeline(noisy_totals=True))
    first_tick = tick(sensor, instance, None)
    second_tick = tick(sensor, instance, first_tick.cursor)

    assert second_tick.asset_events == []
    assert second_tick.run_requests in (None, [])
    assert second_tick.cursor == first_tick.cursor
    assert second_tick.skip_message == NOTHING_NEW
    assert drift_tag(instance, second) == SAME_INPUTS


@pytest.mark.smoke
def test_a_restarted_sensor_judges_only_what_came_after_its_cursor(instance):
    materialise(instance, pipeline())
    cursor = tick(build_drift_sensor(pipeline()), instance, None).cursor
    third = materialise(instance, pipeline(noisy_totals=True))

    restarted = build_drift_sensor(pipeline())
    data = tick(restarted, instance, cursor)
    assert {meta(e, "ubunye/run") for e in data.asset_events} == {third}
    assert meta(evaluations_of(data, "orders")[0], "ubunye/verdict") == "unchanged"
    assert meta(evaluations_of(data, "totals")[0], "ubunye/reason") == SAME_INPUTS


def test_verdicts_stored_by_a_tick_whose_cursor_was_lost_are_neither_reported_nor_told_again(
    instance,
):
    # The daemon stores a tick's verdicts, then its cursor: a daemon ended in between starts
    # again from the older cursor, with those verdicts already on the assets.
    told: list[Any] = []
    sensor = build_drift_sensor(pipeline(), on_drift=told.append)
    materialise(instance, pipeline(noisy_totals=True))
    second = materialise(instance, pipeline(noisy_totals=True))
    reported = tick(sensor, instance, None)
    assert [verdict.run_id for verdict in told] == [second]

    again = tick(sensor, instance, None)
    assert (again.asset_events, again.cursor) == ([], reported.cursor)
    assert len(told) == 1

    third = materialise(instance, pipeline(noisy_totals=True))
    after = tick(sensor, instance, None)
    judged = only(evaluations_of(after, "totals"))
    assert meta(judged, "ubunye/run") == third
    assert meta(judged, "ubunye/previous_run") == second  # the remembered predecessor
    assert [verdict.run_id for verdict in told] == [second, third]


@pytest.mark.smoke
def test_waiting_materialisations_are_paged_through_on_sqlite_storage(instance):
    expected = _report_runless_materialisations(instance, count=60, assets=3)
    judged = _judge_until_idle(build_drift_sensor(None, max_events_per_tick=7), instance, 7)
    assert judged == expected


def test_two_thousand_waiting_materialisations_are_judged_once_in_bounded_ticks():
    # 2,000 runless reports cost about a minute on the run-sharded sqlite storage (a new
    # connection per write), so this one uses the in-memory sqlite storage; paging on the
    # on-disk storage is covered above.
    with dg.DagsterInstance.ephemeral() as memory_instance:
        expected = _report_runless_materialisations(memory_instance, count=2000, assets=5)
        sensor = build_drift_sensor(None, max_events_per_tick=150)
        judged = _judge_until_idle(sensor, memory_instance, 150)
    assert judged == expected


def test_a_backlog_mostly_of_one_asset_is_judged_once_in_full_ticks():
    # Twelve quiet assets take a small page each; the busy one is read on until a tick is full.
    names = ["busy"] * 30 + [f"quiet_{n}" for n in range(12)] + ["busy"] * 30
    with dg.DagsterInstance.ephemeral() as memory_instance:
        expected = _report_runless_materialisations(
            memory_instance, count=72, assets=1, names=names
        )
        judged = _judge_until_idle(
            build_drift_sensor(None, max_events_per_tick=25), memory_instance, 25
        )
    assert judged == expected


def test_a_tick_over_a_backlog_of_many_assets_reads_about_one_tick_of_materialisations(
    monkeypatch,
):
    with dg.DagsterInstance.ephemeral() as memory_instance:
        _report_runless_materialisations(memory_instance, count=400, assets=20)
        fetched: list[int] = []
        fetch = memory_instance.fetch_materializations

        def counted(*args, **kwargs):
            result = fetch(*args, **kwargs)
            fetched.append(len(result.records))
            return result

        monkeypatch.setattr(memory_instance, "fetch_materializations", counted)
        sensor = build_drift_sensor(None, max_events_per_tick=40)
        data = tick(sensor, memory_instance, None, report=False)
    assert len(data.asset_events) == 40
    # Pages of about twice each asset's share of the tick, then one previous record per asset;
    # not the tick's whole limit from each of the 20 assets (400 records).
    assert sum(fetched) <= 3 * 40 + 20


def test_a_backlog_where_one_asset_far_outruns_its_share_is_judged_exactly_once():
    # 25 assets share a tick of 30 (a page of 4 each); the busy one has 240 waiting, in bursts
    # of 60 between the quiet ones' single reports, so it is cut off on every tick.
    quiet = [f"quiet_{n}" for n in range(24)]
    names = [name for _ in range(4) for name in (["busy"] * 60 + quiet)]
    with dg.DagsterInstance.ephemeral() as memory_instance:
        expected = _report_runless_materialisations(
            memory_instance, count=len(names), assets=1, names=names
        )
        judged = _judge_until_idle(
            build_drift_sensor(None, max_events_per_tick=30), memory_instance, 30
        )
    # In storage-id order, none twice, each against its true predecessor, every tick but the
    # last full: the busy asset's backlog is caught up over the ticks that follow.
    assert judged == expected


def test_a_tick_s_cursor_stops_before_the_first_unjudged_materialisation_of_a_cut_off_asset():
    # A page of 4 each: the busy asset is cut off after its fourth, while the quiet ones' pages
    # reach past its eighth; the tick must judge busy's fifth to eighth before any quiet one.
    quiet = [f"quiet_{n}" for n in range(5)]
    names = ["busy"] * 8 + quiet + quiet + ["busy"] * 8
    with dg.DagsterInstance.ephemeral() as memory_instance:
        expected = _report_runless_materialisations(
            memory_instance, count=len(names), assets=1, names=names
        )
        data = tick(build_drift_sensor(None, max_events_per_tick=10), memory_instance, None)
    judged = [int(meta(e, "ubunye/storage_id")) for e in data.asset_events]
    oldest = [storage_id for storage_id, _ in expected[:10]]
    assert judged == oldest
    assert DriftCursor.parse(data.cursor).after_storage_id == oldest[-1]


def test_a_materialisation_the_storage_cannot_read_does_not_end_its_assets_page(instance):
    # The storage leaves out a row it cannot deserialise, so busy's first page comes back short;
    # its fifth must still be judged before the other asset's, not passed by the cursor.
    for name in ["busy"] * 5 + ["other"] * 6:
        instance.report_runless_asset_event(
            dg.AssetMaterialization(name, metadata=receipt_metadata([1]))
        )
    index = sqlite3.connect(Path(instance.root_directory) / "history/runs/index.db")
    with contextlib.closing(index), index:
        ids = [row[0] for row in index.execute("SELECT id FROM event_logs ORDER BY id")]
        index.execute("UPDATE event_logs SET event = 'unreadable' WHERE id = ?", (ids[1],))
    judged = _judge_until_idle(build_drift_sensor(None, max_events_per_tick=4), instance, 4)
    assert [storage_id for storage_id, _ in judged] == [ids[0], *ids[2:]]


def test_a_tick_as_large_as_the_event_log_allows_reads_a_single_asset():
    with dg.DagsterInstance.ephemeral() as memory_instance:
        expected = _report_runless_materialisations(memory_instance, count=3, assets=1)
        judged = _judge_until_idle(
            build_drift_sensor(None, max_events_per_tick=10_000), memory_instance, 10_000
        )
    assert judged == expected


def test_with_no_time_budget_left_a_tick_still_judges_one_materialisation(instance):
    expected = _report_runless_materialisations(instance, count=4, assets=1)
    sensor = build_drift_sensor(None, tick_time_budget_seconds=0)
    judged = _judge_until_idle(sensor, instance, 1)
    assert judged == expected


# --- configuration and edges ----------------------------------------------------------------


def test_reasons_left_out_of_flag_reasons_pass_with_the_reason_recorded(instance):
    sensor = build_drift_sensor(pipeline(), flag_reasons=[INPUTS_UNKNOWN])
    materialise(instance, pipeline(noisy_totals=True))
    materialise(instance, pipeline(noisy_totals=True))
    data = tick(sensor, instance, None)

    totals = evaluations_of(data, "totals")[-1]
    assert totals.passed
    assert meta(totals, "ubunye/verdict") == "drift"
    assert meta(totals, "ubunye/reason") == SAME_INPUTS
    assert meta(totals, "ubunye/flagged") is False
    assert meta(totals, "ubunye/outcome") == "drift, not flagged (same inputs)"


def test_unknown_flag_reasons_are_refused_when_the_sensor_is_built():
    with pytest.raises(ValueError, match="unknown drift reason"):
        build_drift_sensor(None, flag_reasons=["inputs moved"])


@pytest.mark.smoke
def test_a_flag_requests_a_run_of_the_alert_job(instance):
    @dg.op
    def page_someone() -> None:
        return None

    @dg.job
    def drift_alert() -> None:
        page_someone()

    sensor = build_drift_sensor(pipeline(), alert_job=drift_alert)
    materialise(instance, pipeline(noisy_totals=True))
    second = materialise(instance, pipeline(noisy_totals=True))
    data = tick(sensor, instance, None)

    request = only(data.run_requests)
    assert request.tags[DRIFT_TAG] == SAME_INPUTS
    assert request.tags["ubunye/drift_asset"] == "totals"
    assert request.tags["ubunye/drift_run_id"] == second
    assert request.run_key.startswith("ubunye_drift:")
    by_name = build_drift_sensor(pipeline(), name="drift_by_name", alert_job="drift_alert")
    dg.Definitions.validate_loadable(dg.Definitions(jobs=[drift_alert], sensors=[sensor, by_name]))


def test_only_watched_assets_are_judged(instance):
    materialise(instance, pipeline())
    data = tick(build_drift_sensor(["totals"]), instance, None)
    assert {e.asset_key for e in data.asset_events} == {dg.AssetKey("totals")}


def test_watching_all_assets_passes_over_materialisations_without_ubunye_metadata(instance):
    @dg.asset
    def plain() -> dg.MaterializeResult:
        return dg.MaterializeResult(metadata={"rows": 3})

    materialise(instance, [plain])
    materialise(instance, pipeline())
    data = tick(build_drift_sensor(None), instance, None)
    assert {e.asset_key for e in data.asset_events} == {
        dg.AssetKey("orders"),
        dg.AssetKey("totals"),
    }


def test_a_failed_hash_is_not_flagged_and_the_evaluation_says_why(instance):
    instance.report_runless_asset_event(
        dg.AssetMaterialization("scores", metadata=receipt_metadata([1]))
    )
    failed = {key: value for key, value in receipt_metadata([2]).items() if key != keys.DATA_HASH}
    failed[keys.HASH_ERROR] = "ArrowInvalid: cannot read column"
    instance.report_runless_asset_event(dg.AssetMaterialization("scores", metadata=failed))
    data = tick(build_drift_sensor(["scores"]), instance, None)

    evaluation = evaluations_of(data, "scores")[-1]
    assert evaluation.passed
    assert meta(evaluation, "ubunye/verdict") == "not judged"
    assert "ArrowInvalid: cannot read column" in meta(evaluation, "ubunye/reason")


def test_hashes_of_different_methods_are_not_compared(instance):
    instance.report_runless_asset_event(
        dg.AssetMaterialization("scores", metadata=receipt_metadata([1], method="sample-v0"))
    )
    instance.report_runless_asset_event(
        dg.AssetMaterialization("scores", metadata=receipt_metadata([2]))
    )
    evaluation = evaluations_of(tick(build_drift_sensor(["scores"]), instance, None), "scores")[-1]
    assert evaluation.passed
    assert meta(evaluation, "ubunye/reason").startswith("not comparable")


def test_the_lineage_store_fills_input_digests_the_metadata_lacks(instance, tmp_path):
    for run, orders_digest in (("r1", "sha256:o1"), ("r2", "sha256:o2")):
        record_path = tmp_path / f"{run}.json"
        orders = StepRecord(name="orders", direction="input", data_hash=orders_digest)
        record = RunRecord(
            run_id=run, task_path="u/p/totals", usecase="u", package="p", task_name="totals",
            started_at="2026-01-01T00:00:00+00:00", inputs=[orders],
        )  # fmt: skip
        record_path.write_text(record.to_json())
        metadata = receipt_metadata([run])
        del metadata[keys.INPUTS]
        metadata[keys.RECORD_PATH] = dg.MetadataValue.path(str(record_path))
        instance.report_runless_asset_event(dg.AssetMaterialization("totals", metadata=metadata))

    evaluation = evaluations_of(tick(build_drift_sensor(["totals"]), instance, None), "totals")[-1]
    assert meta(evaluation, "ubunye/reason") == INPUTS_CHANGED
    assert meta(evaluation, "ubunye/moved_inputs") == ["orders"]


def test_an_unreadable_run_record_leaves_the_inputs_unknown_and_says_so(instance, tmp_path):
    for run in ("r1", "r2"):
        metadata = receipt_metadata([run])
        del metadata[keys.INPUTS]
        metadata[keys.RECORD_PATH] = str(tmp_path / f"missing-{run}.json")
        instance.report_runless_asset_event(dg.AssetMaterialization("totals", metadata=metadata))

    evaluation = evaluations_of(tick(build_drift_sensor(["totals"]), instance, None), "totals")[-1]
    assert meta(evaluation, "ubunye/reason") == INPUTS_UNKNOWN
    assert any("missing-r2.json" in note for note in meta(evaluation, "ubunye/notes"))


def test_the_receipt_is_read_from_the_io_managers_metadata_keys():
    values = {
        keys.DATA_HASH: "sha256:d1",
        keys.HASH_METHOD: "rows-v1",
        keys.CODE_HASH: CODE_V1,
        keys.ENVIRONMENT_HASH: ENV_V1,
        keys.INPUTS: {"orders": {"asset_key": "orders", "data_hash": "sha256:i1"}},
        keys.RECORD_PATH: "/lineage/run.json",
    }
    evidence = RecordedOutput.from_metadata(values)
    assert (evidence.data_hash, evidence.hash_method) == ("sha256:d1", "rows-v1")
    assert (evidence.code_hash, evidence.environment_hash) == (CODE_V1, ENV_V1)
    assert evidence.inputs is not None and evidence.inputs["orders"].data_hash == "sha256:i1"
    assert evidence.record_path == "/lineage/run.json"
    assert RecordedOutput.from_metadata({}).inputs is None


def test_an_unreadable_cursor_is_refused_with_a_clear_error():
    assert DriftCursor.parse(None).after_storage_id == -1
    assert DriftCursor.parse("41").after_storage_id == 41
    assert DriftCursor.parse(DriftCursor(after_storage_id=7).dump()).after_storage_id == 7
    with pytest.raises(ValueError, match="unreadable drift sensor cursor"):
        DriftCursor.parse("yesterday")


# --- the declared check ---------------------------------------------------------------------


def test_the_reproducibility_check_is_declared_on_every_watched_asset():
    assets = pipeline()
    defs = dg.Definitions(
        assets=assets,
        asset_checks=build_reproducibility_checks(assets),
        sensors=[build_drift_sensor(assets)],
    )
    check_keys = defs.resolve_asset_graph().asset_check_keys
    assert {key for key in check_keys if key.name == CHECK_NAME} == {
        dg.AssetCheckKey(dg.AssetKey("orders"), CHECK_NAME),
        dg.AssetCheckKey(dg.AssetKey("totals"), CHECK_NAME),
    }


def test_running_the_check_judges_the_latest_materialisation(instance):
    checks = build_reproducibility_checks(["totals"])
    materialise(instance, [*pipeline(noisy_totals=True), *checks])
    result = dg.materialize([*pipeline(noisy_totals=True), *checks], instance=instance)

    evaluation = only(result.get_asset_check_evaluations())
    assert evaluation.asset_key == dg.AssetKey("totals")
    assert not evaluation.passed
    assert evaluation.severity == dg.AssetCheckSeverity.ERROR
    assert evaluation.metadata["ubunye/reason"].value == SAME_INPUTS


def receipted_assets(pd: Any) -> list[dg.AssetsDefinition]:
    """`prices` -> `jittered` (its rows change on every run), and `unreachable`, which fails
    before it returns anything."""

    # No annotations: this module's annotations are strings, and the IO manager loads the
    # type that was written anyway.
    @dg.asset
    def prices():
        return pd.DataFrame({"sku": ["a", "b", "c"], "price": [1.5, 2.0, 3.25]})

    @dg.asset
    def jittered(prices):
        return prices.assign(price=prices["price"] + [random.random() for _ in range(len(prices))])

    @dg.asset
    def unreachable():
        raise ConnectionError("the feed is down")

    return [prices, jittered, unreachable]


def ubunye_io_manager(root: Path) -> dict[str, Any]:
    from ubunye_dagster import UbunyeIOManager, UbunyeResource

    manager = UbunyeIOManager(
        base_path=str(root / "data"), ubunye=UbunyeResource(usecase_dir=str(root))
    )
    return {"io_manager": manager}


def test_a_failing_asset_leaves_every_other_assets_reproducibility_verdict(instance, tmp_path):
    assets = receipted_assets(pytest.importorskip("pandas"))
    checks = build_reproducibility_checks(assets)

    result = dg.materialize(
        [*assets, *checks],
        instance=instance,
        resources=ubunye_io_manager(tmp_path),
        raise_on_error=False,
    )

    assert not result.success
    judged = [e.asset_key.to_user_string() for e in result.get_asset_check_evaluations()]
    assert sorted(judged) == ["jittered", "prices"]


@pytest.mark.smoke
def test_the_verdict_given_in_the_assets_own_step_is_the_drift_sensors(instance, tmp_path):
    assets = receipted_assets(pytest.importorskip("pandas"))[:2]
    checks = build_reproducibility_checks(assets)
    resources = ubunye_io_manager(tmp_path)
    materialise(instance, [*assets, *checks], resources=resources)

    result = dg.materialize([*assets, *checks], instance=instance, resources=resources)
    events = [
        e for e in result.all_events if e.event_type == dg.DagsterEventType.ASSET_CHECK_EVALUATION
    ]
    in_step = {e.asset_check_evaluation_data.asset_key.to_user_string(): e for e in events}
    data = tick(build_drift_sensor(assets), instance, None, report=False)

    # One verdict each, from the asset's own step; the check's step judged nothing again.
    assert sorted(in_step) == ["jittered", "prices"] and len(events) == 2
    assert {asset: event.step_key for asset, event in in_step.items()} == {
        "jittered": "jittered",
        "prices": "prices",
    }
    in_step = {asset: event.asset_check_evaluation_data for asset, event in in_step.items()}
    assert meta(in_step["prices"], "ubunye/verdict") == "unchanged"
    assert meta(in_step["jittered"], "ubunye/reason") == SAME_INPUTS
    for asset, evaluation in in_step.items():
        assert shown(evaluation) == shown(evaluations_of(data, asset)[-1])


def shown(evaluation: dg.AssetCheckEvaluation) -> tuple[Any, ...]:
    """What an evaluation says, whoever gave it: all but the storage id of its materialisation
    (a step judges its materialisation before the event log stores it)."""
    metadata = {k: v.value for k, v in evaluation.metadata.items() if k != "ubunye/storage_id"}
    return evaluation.passed, evaluation.severity, evaluation.description, metadata


# --- helpers for the paging tests -----------------------------------------------------------


def _report_runless_materialisations(
    instance: dg.DagsterInstance,
    *,
    count: int,
    assets: int,
    names: Sequence[str] | None = None,
) -> list[tuple[int, int | None]]:
    """Report `count` materialisations round-robin over `assets` keys (or of the asset `names`
    gives for each, in order); return (storage id, previous id)."""
    names = names or [f"asset_{index % assets}" for index in range(count)]
    for index, name in enumerate(names):
        instance.report_runless_asset_event(
            dg.AssetMaterialization(name, metadata=receipt_metadata([index // assets % 3]))
        )
    expected: list[tuple[int, int | None]] = []
    for name in dict.fromkeys(names):
        records = instance.fetch_materializations(
            dg.AssetKey(name), limit=count, ascending=True
        ).records
        previous = [None, *(r.storage_id for r in records[:-1])]
        expected.extend(zip((r.storage_id for r in records), previous, strict=True))
    assert len(expected) == count
    return sorted(expected)


def _judge_until_idle(
    sensor: dg.SensorDefinition, instance: dg.DagsterInstance, per_tick: int
) -> list[tuple[int, int | None]]:
    """Tick until the sensor skips; every tick stays within `per_tick` judgements."""
    cursor, judged, ticks = None, [], 0
    while True:
        data = tick(sensor, instance, cursor, report=False)
        if data.skip_message == NOTHING_NEW:
            break
        ticks += 1
        assert 0 < len(data.asset_events) <= per_tick
        judged.extend(
            (meta(e, "ubunye/storage_id"), e.metadata.get("ubunye/previous_storage_id"))
            for e in data.asset_events
        )
        cursor = data.cursor
    judged = [(int(sid), int(prev.value) if prev is not None else None) for sid, prev in judged]
    assert ticks == math.ceil(len(judged) / per_tick)
    return judged


# --- with the real IO manager and the real sensor daemon ------------------------------------


def test_receipts_written_by_the_ubunye_io_manager_are_judged(instance, tmp_path):
    prices, jittered, _ = receipted_assets(pytest.importorskip("pandas"))
    resources = ubunye_io_manager(tmp_path)
    materialise(instance, [prices, jittered], resources=resources)
    second = materialise(instance, [prices, jittered], resources=resources)
    data = tick(build_drift_sensor([prices, jittered]), instance, None)

    assert meta(evaluations_of(data, "prices")[-1], "ubunye/verdict") == "unchanged"
    flagged = evaluations_of(data, "jittered")[-1]
    assert not flagged.passed
    assert meta(flagged, "ubunye/reason") == SAME_INPUTS
    assert meta(flagged, "ubunye/data_hash").startswith("sha256:")
    assert drift_tag(instance, second) == SAME_INPUTS


# Declared deterministic: it reads no asset, so otherwise it would be a source and pass.
@dg.asset(name="noisy", metadata={keys.DETERMINISTIC: True})
def _noisy_asset() -> dg.Output:
    rows = [random.random()]
    return dg.Output(rows, metadata=receipt_metadata(rows))


#: Loaded by the in-process code location of the daemon test below.
DAEMON_DEFS = dg.Definitions(
    assets=[_noisy_asset],
    asset_checks=build_reproducibility_checks([_noisy_asset]),
    sensors=[build_drift_sensor([_noisy_asset], minimum_interval_seconds=1)],
)


UI_QUERY = """
query DriftShown {
  assetNodes(assetKeys: [{path: ["noisy"]}]) {
    assetChecksOrError {
      ... on AssetChecks {
        checks { name executionForLatestMaterialization { status evaluation { severity } } }
      }
    }
  }
  runsOrError(filter: {tags: [{key: "ubunye/drift", value: "same inputs"}]}) {
    ... on Runs { results { runId } }
  }
}
"""


@pytest.mark.smoke
def test_under_the_sensor_daemon_the_flag_shows_in_the_ui_and_the_cursor_is_kept(instance):
    # Dagster's own daemon iteration and GraphQL schema (internal APIs): the tick's asset events
    # reach the event log, the cursor is stored, and the UI's queries show check and tag.
    graphql = pytest.importorskip("dagster_graphql.test.utils")
    try:  # Dagster 1.11 and later
        from dagster._core.remote_origin import InProcessCodeLocationOrigin
    except ModuleNotFoundError:  # Dagster 1.10
        from dagster._core.remote_representation.origin import InProcessCodeLocationOrigin
    from dagster._core.test_utils import create_test_daemon_workspace_context
    from dagster._core.types.loadable_target_origin import LoadableTargetOrigin
    from dagster._core.workspace.load_target import InProcessWorkspaceLoadTarget
    from dagster._daemon.sensor import execute_sensor_iteration

    materialise(instance, [_noisy_asset])
    second = materialise(instance, [_noisy_asset])
    target = InProcessWorkspaceLoadTarget(
        InProcessCodeLocationOrigin(
            LoadableTargetOrigin(python_file=__file__, attribute="DAEMON_DEFS")
        )
    )
    with create_test_daemon_workspace_context(target, instance) as workspace:
        entry = next(iter(workspace.create_request_context().get_code_location_entries().values()))
        assert entry.code_location is not None, entry.load_error
        remote = entry.code_location.get_repository("__repository__").get_sensor(
            "ubunye_drift_sensor"
        )
        instance.start_sensor(remote)
        list(execute_sensor_iteration(workspace, logging.getLogger("drift-test"), None, None))
        state = instance.get_instigator_state(remote.get_remote_origin_id(), remote.selector_id)
        shown = graphql.execute_dagster_graphql(workspace.create_request_context(), UI_QUERY)

    last = instance.fetch_materializations(dg.AssetKey("noisy"), limit=1).records[0]
    assert DriftCursor.parse(state.instigator_data.cursor).after_storage_id == last.storage_id
    check_key = dg.AssetCheckKey(dg.AssetKey("noisy"), CHECK_NAME)
    execution = instance.event_log_storage.get_latest_asset_check_execution_by_key([check_key])
    assert execution[check_key].status.value == "FAILED"
    assert drift_tag(instance, second) == SAME_INPUTS
    # What the UI asks for: the check against the latest materialisation, and runs by tag.
    assert shown.errors is None, shown.errors
    check = only(shown.data["assetNodes"][0]["assetChecksOrError"]["checks"])
    assert check["name"] == CHECK_NAME
    latest_execution = check["executionForLatestMaterialization"]
    assert (latest_execution["status"], latest_execution["evaluation"]["severity"]) == (
        "FAILED",
        "ERROR",
    )
    assert [run["runId"] for run in shown.data["runsOrError"]["results"]] == [second]


def test_a_changed_run_config_written_by_the_io_manager_explains_only_the_asset_it_reaches(
    instance, tmp_path
):
    pd = pytest.importorskip("pandas")
    from ubunye_dagster import UbunyeIOManager, UbunyeResource

    @dg.asset
    def base_prices():
        return pd.DataFrame({"sku": ["a", "b"], "price": [1.5 + random.random(), 2.0]})

    # No annotations: this module's annotations are strings, which Dagster cannot resolve here.
    @dg.asset(config_schema={"factor": float})
    def scaled(context, base_prices):
        return base_prices.assign(
            price=base_prices["price"] * context.op_execution_context.op_config["factor"]
        )

    resources = {
        "io_manager": UbunyeIOManager(
            base_path=str(tmp_path / "data"), ubunye=UbunyeResource(usecase_dir=str(tmp_path))
        )
    }
    assets = [base_prices, scaled]
    for factor in (1.0, 2.0):
        config = {"ops": {"scaled": {"config": {"factor": factor}}}}
        materialise(instance, assets, resources=resources, run_config=config)
    data = tick(build_drift_sensor(assets, strict_sources=True), instance, None)

    assert meta(evaluations_of(data, "scaled")[-1], "ubunye/outcome") == (
        "explained (config changed)"
    )
    # base_prices got no config: its hash held, so its random change is judged strictly.
    assert meta(evaluations_of(data, "base_prices")[-1], "ubunye/outcome") == (
        "drift (same inputs)"
    )
