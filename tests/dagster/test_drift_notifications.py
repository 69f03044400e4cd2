"""What reaches a person when the drift sensor flags: one line per flag on the sensor's own page
(run by Dagster's sensor daemon, read through the UI's GraphQL), and the ``on_drift`` hook with
its ready notifiers, a webhook and Slack, each against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import json
import os
import random
import urllib.request
from pathlib import Path

import dagster as dg
import pytest
import test_sensor
from local_http import local_server
from sensor_daemon import latest_tick_after_one_iteration, logged
from test_sensor import materialise, meta, only, pipeline, receipt_metadata, tick

from ubunye_core.records.drift import SAME_INPUTS
from ubunye_dagster.drift.hooks import DriftHookImportError, DriftVerdict
from ubunye_dagster.drift.notifiers import slack_notifier, webhook_notifier
from ubunye_dagster.drift.sensor import DriftCursor, build_drift_sensor
from ubunye_dagster.receipts import metadata as keys

#: The drift tests' instance: real sqlite storage in a memory-backed folder.
instance = test_sensor.instance

NON_DETERMINISM = "code, environment, config and every upstream are unchanged (non-determinism)"
#: A held server's base URL, read by the hooks of the daemon's code location when they are called.
HELD_URL = "UBUNYE_TEST_HELD_URL"


# Declared deterministic: it reads no asset, so otherwise it would be a source and pass.
@dg.asset(name="noisy", metadata={keys.DETERMINISTIC: True})
def noisy() -> dg.Output:
    rows = [random.random()]
    return dg.Output(rows, metadata=receipt_metadata(rows))


def _unreachable_pager(verdict: DriftVerdict) -> None:
    raise ConnectionError(f"pager unreachable for {verdict.asset_key}")


def _slow_webhook(verdict: DriftVerdict) -> None:
    webhook_notifier(os.environ[HELD_URL], timeout=0.5)(verdict)


def _never_answered(verdict: DriftVerdict) -> None:
    # No timeout of its own: only the tick's on_drift_timeout_seconds bounds the wait.
    urllib.request.urlopen(urllib.request.Request(os.environ[HELD_URL], data=b"{}")).read()


def _sensor_defs(**arguments) -> dg.Definitions:
    return dg.Definitions(assets=[noisy], sensors=[build_drift_sensor([noisy], **arguments)])


#: Code locations the daemon loads from this file.
FLAGGING_DEFS = _sensor_defs()
RAISING_DEFS = _sensor_defs(on_drift=_unreachable_pager)
SLOW_WEBHOOK_DEFS = _sensor_defs(on_drift=_slow_webhook)
NEVER_ANSWERED_DEFS = _sensor_defs(on_drift=_never_answered, on_drift_timeout_seconds=0.5)

#: A verdict as the sensor hands it over, for the notifiers' own edges.
A_VERDICT = DriftVerdict(
    sensor="ubunye_drift_sensor",
    asset_key="noisy",
    partition=None,
    run_id="b2d79646-6f49-478e-a3b9-132967bf3972",
    previous_run_id="f264d92b-24c0-45fa-97d4-9e631012179e",
    verdict="drift",
    reason=SAME_INPUTS,
    outcome="drift (same inputs)",
    explanation=NON_DETERMINISM,
    severity="ERROR",
    summary="noisy drifted in run b2d79646-6f49-478e-a3b9-132967bf3972: drift (same inputs) ...",
    moved_inputs=(),
    unknown_inputs=(),
    data_hash="sha256:" + "1" * 64,
    previous_data_hash="sha256:" + "2" * 64,
    record_path=None,
    previous_record_path=None,
    storage_id=7,
    previous_storage_id=3,
    timestamp=1764768000.0,
)

#: Verdicts handed to `record_verdict`, the hook the import-path test names.
RECORDED: list[DriftVerdict] = []


def record_verdict(verdict: DriftVerdict) -> None:
    RECORDED.append(verdict)


def daemon_tick(instance: dg.DagsterInstance, attribute: str) -> dict:
    return latest_tick_after_one_iteration(instance, __file__, attribute, "ubunye_drift_sensor")


def two_noisy_runs(instance: dg.DagsterInstance) -> tuple[str, str]:
    return materialise(instance, [noisy]), materialise(instance, [noisy])


def noisy_line(first: str, second: str) -> str:
    return (
        f"noisy drifted in run {second}: drift (same inputs) since run {first}; {NON_DETERMINISM}."
    )


@pytest.fixture
def held_server(monkeypatch):
    """A server that answers nothing until the test ends; its URL in `HELD_URL`."""
    with local_server(hold=True) as server:
        monkeypatch.setenv(HELD_URL, server.url)
        yield server


# --- the flagged tick on the sensor's page --------------------------------------------------


@pytest.mark.smoke
def test_a_flagged_tick_names_the_asset_the_run_and_why_on_the_sensor_page(instance):
    first, second = two_noisy_runs(instance)
    shown = daemon_tick(instance, "FLAGGING_DEFS")

    # The tick table's tooltip and the tick's dialog show the skip reason; "View logs" the logs.
    assert shown["status"] == "SKIPPED" and shown["runIds"] == []
    assert shown["skipReason"].splitlines() == [
        "judged 2 materialisation(s), 1 flagged:",
        noisy_line(first, second),
    ]
    assert logged(shown, "WARNING") == [noisy_line(first, second)]


def test_each_flagged_partition_is_one_line_of_the_tick(instance):
    @dg.asset(
        name="ledger",
        partitions_def=dg.StaticPartitionsDefinition(["north", "south"]),
        metadata={keys.DETERMINISTIC: True},
    )
    def ledger() -> dg.Output:
        rows = [random.random()]
        return dg.Output(rows, metadata=receipt_metadata(rows))

    runs = {
        region: [materialise(instance, [ledger], partition_key=region) for _ in range(2)]
        for region in ("north", "south")
    }
    data = tick(build_drift_sensor([ledger]), instance, None)

    lines = data.skip_message.splitlines()
    assert lines[0] == "judged 4 materialisation(s), 2 flagged:"
    assert lines[1:] == [
        f"ledger (partition {region}) drifted in run {later}: drift (same inputs) since run "
        f"{earlier}; {NON_DETERMINISM}."
        for region, (earlier, later) in runs.items()
    ]


# --- on_drift -------------------------------------------------------------------------------


@pytest.mark.smoke
def test_on_drift_receives_each_flagged_verdict_with_both_records_and_digests(instance, tmp_path):
    pd = pytest.importorskip("pandas")
    from ubunye_dagster import UbunyeIOManager, UbunyeResource

    @dg.asset(metadata={keys.DETERMINISTIC: True})
    def jittered():
        return pd.DataFrame({"price": [1.5 + random.random(), 2.0]})

    resources = {
        "io_manager": UbunyeIOManager(
            base_path=str(tmp_path / "data"), ubunye=UbunyeResource(usecase_dir=str(tmp_path))
        )
    }
    first = materialise(instance, [jittered], resources=resources)
    second = materialise(instance, [jittered], resources=resources)
    received: list[DriftVerdict] = []
    data = tick(build_drift_sensor([jittered], on_drift=received.append), instance, None)

    verdict = only(received)
    [_, judged] = data.asset_events
    assert (verdict.asset_key, verdict.partition, verdict.sensor) == (
        "jittered",
        None,
        "ubunye_drift_sensor",
    )
    assert (verdict.run_id, verdict.previous_run_id) == (second, first)
    assert (verdict.verdict, verdict.reason, verdict.outcome, verdict.severity) == (
        "drift",
        SAME_INPUTS,
        "drift (same inputs)",
        "ERROR",
    )
    assert verdict.explanation == NON_DETERMINISM
    assert verdict.summary in data.skip_message.splitlines()
    assert verdict.data_hash == meta(judged, "ubunye/data_hash") != verdict.previous_data_hash
    assert verdict.previous_data_hash == meta(judged, "ubunye/previous_data_hash")
    records = [
        json.loads(Path(p).read_text()) for p in (verdict.previous_record_path, verdict.record_path)
    ]
    assert [record["run_id"] for record in records] == [first, second]
    assert str(verdict.storage_id) == meta(judged, "ubunye/storage_id")


def test_on_drift_is_not_called_again_for_a_flag_a_later_tick_passes_over(instance):
    received: list[DriftVerdict] = []
    sensor = build_drift_sensor([noisy], on_drift=received.append)
    first, second = two_noisy_runs(instance)
    first_tick = tick(sensor, instance, None)
    second_tick = tick(sensor, instance, first_tick.cursor)
    third = materialise(instance, [noisy])
    third_tick = tick(sensor, instance, second_tick.cursor)

    assert [v.run_id for v in received] == [second, third]
    assert [v.previous_run_id for v in received] == [first, second]
    assert third_tick.cursor != second_tick.cursor == first_tick.cursor


def test_on_drift_given_as_an_import_path_is_imported_when_the_sensor_is_built(instance):
    RECORDED.clear()
    sensor = build_drift_sensor([noisy], on_drift="test_drift_notifications.record_verdict")
    _, second = two_noisy_runs(instance)
    tick(sensor, instance, None)
    assert [v.run_id for v in RECORDED] == [second]


@pytest.mark.parametrize(
    ("path", "problem"),
    [
        (
            "ubunye_dagster.drift.notifiers.pager",
            "'ubunye_dagster.drift.notifiers' has no attribute 'pager'",
        ),
        ("no_such_package.alerts.notify", "no module 'no_such_package' can be imported"),
        ("ubunye_dagster.drift.notifiers.DEFAULT_TIMEOUT_SECONDS", "is a float, not a callable"),
        ("notify", "not a dotted import path"),
    ],
)
def test_an_import_path_that_names_no_callable_is_refused_naming_what_is_missing(path, problem):
    with pytest.raises(DriftHookImportError, match=problem.replace("(", r"\(")):
        build_drift_sensor([noisy], on_drift=path)


@pytest.mark.smoke
def test_a_notifier_that_raises_does_not_fail_the_tick_and_is_logged_naming_the_asset(instance):
    _, second = two_noisy_runs(instance)
    shown = daemon_tick(instance, "RAISING_DEFS")

    assert shown["status"] == "SKIPPED"
    last = instance.fetch_materializations(dg.AssetKey("noisy"), limit=1).records[0]
    assert DriftCursor.parse(shown["cursor"]).after_storage_id == last.storage_id
    assert logged(shown, "ERROR") == [
        f"on_drift failed for noisy in run {second}: ConnectionError: pager unreachable for noisy"
    ]


def test_a_webhook_slower_than_its_timeout_does_not_fail_the_tick_and_is_logged(
    instance, held_server
):
    _, second = two_noisy_runs(instance)
    shown = daemon_tick(instance, "SLOW_WEBHOOK_DEFS")

    assert shown["status"] == "SKIPPED"
    assert logged(shown, "ERROR") == [
        f"on_drift failed for noisy in run {second}: TimeoutError: timed out"
    ]
    assert len(held_server.received) == 1


def test_a_hook_that_never_returns_is_left_behind_once_the_ticks_hook_time_is_spent(
    instance, held_server
):
    _, second = two_noisy_runs(instance)
    shown = daemon_tick(instance, "NEVER_ANSWERED_DEFS")

    assert shown["status"] == "SKIPPED"
    [message] = logged(shown, "ERROR")
    assert message.startswith(f"on_drift failed for noisy in run {second}: it did not return")
    assert message.endswith("(left running; the tick goes on)")


# --- the ready notifiers --------------------------------------------------------------------


@pytest.mark.smoke
def test_the_webhook_notifier_posts_the_verdict_as_json_to_a_local_server(instance):
    with local_server() as server:
        hook = webhook_notifier(f"{server.url}/drift", headers={"Authorization": "Bearer s3cret"})
        sensor = build_drift_sensor(pipeline(), on_drift=hook)
        first = materialise(instance, pipeline(noisy_totals=True))
        second = materialise(instance, pipeline(noisy_totals=True))
        tick(sensor, instance, None)

    posted = only(server.received)
    assert (posted.method, posted.path) == ("POST", "/drift")
    assert posted.headers["content-type"] == "application/json"
    assert posted.headers["authorization"] == "Bearer s3cret"
    verdict = DriftVerdict.model_validate_json(posted.body)
    assert (verdict.asset_key, verdict.run_id, verdict.previous_run_id) == ("totals", second, first)
    assert verdict.outcome == "drift (same inputs)"
    assert set(posted.json()) == set(DriftVerdict.model_fields)


def test_a_webhook_answering_an_error_status_raises_for_the_tick_to_log():
    with local_server(status=500, answer={"error": "down"}) as server:
        hook = webhook_notifier(server.url)
        with pytest.raises(Exception, match="HTTP Error 500"):
            hook(A_VERDICT)
    assert len(server.received) == 1


def test_a_webhook_url_that_is_not_http_is_refused():
    with pytest.raises(ValueError, match="must start with http:// or https://"):
        webhook_notifier("hooks.example.com/drift")


@pytest.mark.smoke
def test_the_slack_notifier_posts_the_line_to_the_channel_through_dagster_slack(instance):
    pytest.importorskip("dagster_slack")
    with local_server(answer={"ok": True, "channel": "C1", "ts": "1.0"}) as slack_api:
        hook = slack_notifier("#data-quality", token="xoxb-test", base_url=f"{slack_api.url}/api/")
        sensor = build_drift_sensor([noisy], on_drift=hook)
        first, second = two_noisy_runs(instance)
        tick(sensor, instance, None)

    posted = only(slack_api.received)
    assert (posted.method, posted.path) == ("POST", "/api/chat.postMessage")
    assert posted.headers["authorization"] == "Bearer xoxb-test"
    assert posted.json() == {
        "channel": "#data-quality",
        "text": f":warning: {noisy_line(first, second)}",
    }


def test_the_slack_notifier_reads_an_env_var_token_when_it_sends(monkeypatch):
    pytest.importorskip("dagster_slack")
    hook = slack_notifier("#data-quality", token=dg.EnvVar("UBUNYE_TEST_SLACK_TOKEN"))
    monkeypatch.delenv("UBUNYE_TEST_SLACK_TOKEN", raising=False)
    with pytest.raises(ValueError, match="UBUNYE_TEST_SLACK_TOKEN is not set"):
        hook(A_VERDICT)
    with local_server(answer={"ok": True}) as slack_api:
        monkeypatch.setenv("UBUNYE_TEST_SLACK_TOKEN", "xoxb-from-env")
        slack_notifier(
            "#data-quality", token=dg.EnvVar("UBUNYE_TEST_SLACK_TOKEN"), base_url=slack_api.url
        )(A_VERDICT)
    assert only(slack_api.received).headers["authorization"] == "Bearer xoxb-from-env"
