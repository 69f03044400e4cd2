"""What happens when things go wrong: atomic writes, failed steps, tampered files, expectations."""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from dagster._core.definitions.reconstruct import ReconstructableJob

from ubunye_core.store import LineageStore
from ubunye_dagster import UbunyeIOManager, UbunyeResource, with_error_records
from ubunye_dagster.checks.expectations import ExpectationError, parse_rules
from ubunye_dagster.io.handlers import arrow_files


def io_manager(root: Path, **settings) -> UbunyeIOManager:
    return UbunyeIOManager(
        base_path=str(root / "data"), ubunye=UbunyeResource(usecase_dir=str(root), **settings)
    )


def run(assets, root: Path, *, settings=None, **kwargs) -> dg.ExecuteInProcessResult:
    manager = io_manager(root, **(settings or {}))
    return dg.materialize(assets, resources={"io_manager": manager}, **kwargs)


def records(root: Path, task_path: str):
    return LineageStore.for_usecase_dir(root).list_runs(task_path)


def failure_text(result: dg.ExecuteInProcessResult) -> str:
    [failure] = result.get_step_failure_events()
    return failure.step_failure_data.error.to_string()


VERSION = {"rows": 3}


@dg.asset
def ledger() -> pd.DataFrame:
    n = VERSION["rows"]
    return pd.DataFrame({"entry": list(range(n)), "amount": [float(i) for i in range(n)]})


@dg.asset
def balance(ledger: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame({"total": [ledger["amount"].sum()]})


def test_a_failed_write_leaves_the_previous_materialisation_readable(tmp_path, monkeypatch):
    VERSION["rows"] = 3
    assert run([ledger], tmp_path).success
    target = tmp_path / "data" / "ledger.parquet"
    before = pd.read_parquet(target)

    def write_half_then_fail(table, sink):
        with open(sink, "wb") as handle:
            handle.write(b"PAR1 half a file")
        raise OSError("disk full")

    monkeypatch.setattr(arrow_files, "_write_parquet", write_half_then_fail)
    VERSION["rows"] = 5
    result = run([ledger], tmp_path, raise_on_error=False)

    assert not result.success
    pd.testing.assert_frame_equal(pd.read_parquet(target), before)
    assert sorted(os.listdir(target.parent)) == ["ledger.parquet"]
    latest = records(tmp_path, "dagster/default/ledger")[0]
    assert latest.status == "error"
    assert latest.error == "OSError: disk full"
    assert latest.outputs == []


def test_a_write_killed_midway_leaves_only_a_hidden_temporary_file_beside_the_old_data(tmp_path):
    VERSION["rows"] = 3
    assert run([ledger], tmp_path).success
    target = tmp_path / "data" / "ledger.parquet"
    # What a kill between writing the temporary file and the rename leaves behind.
    leftover = arrow_files.temporary_sibling(arrow_files_upath(target))
    Path(str(leftover)).write_bytes(b"PAR1 partial")

    result = run([ledger, balance], tmp_path, selection=[balance])

    assert result.success
    assert pq.read_table(target).num_rows == 3
    assert Path(str(leftover)).name.startswith(".")


def arrow_files_upath(path: Path):
    from upath import UPath

    return UPath(str(path))


@dg.asset
def fragile(ledger: pd.DataFrame) -> pd.DataFrame:
    raise RuntimeError("upstream API refused: token=abc123secret at postgres://etl:pw@db/x")


def test_a_step_failing_after_loading_inputs_leaves_an_error_record(tmp_path):
    VERSION["rows"] = 3
    result = run([ledger, fragile], tmp_path, raise_on_error=False)

    assert not result.success
    [record] = records(tmp_path, "dagster/default/fragile")
    assert record.status == "error"
    assert record.error.startswith("RuntimeError: upstream API refused")
    assert "abc123secret" not in record.error and ":pw@" not in record.error
    assert "token=***" in record.error
    [read] = record.inputs
    assert read.name == "ledger" and read.row_count == 3 and read.data_hash is not None
    assert [t["step"] for t in record.timings] == ["Reader:pandas-parquet"]
    assert record.outputs == []
    assert record.ended_at is not None and record.duration_sec >= 0


def unreachable(name: str, **asset_args) -> dg.AssetsDefinition:
    """An asset with no inputs whose source cannot be reached: it raises before returning."""

    def fetch() -> pd.DataFrame:
        raise ConnectionError("cannot reach https://api.example.com?api_key=abc123secret")

    return dg.asset(name=name, **asset_args)(fetch)


unreachable_source = unreachable(
    "unreachable_source",
    group_name="intake",
    partitions_def=dg.DailyPartitionsDefinition(start_date="2024-01-01"),
)
unreachable_feed = unreachable("unreachable_feed")


@dg.asset(io_manager_key="elsewhere")
def stored_elsewhere() -> pd.DataFrame:
    raise ConnectionError("this asset is not stored by UbunyeIOManager")


def assert_no_input_failure_record(root: Path, dagster_run_id: str, task_path: str) -> None:
    """The promise for a step that raised before it loaded or returned anything."""
    [record] = records(root, task_path)
    assert record.run_id.startswith(dagster_run_id)
    assert record.status == "error"
    assert record.error.startswith("ConnectionError: cannot reach")
    assert "abc123secret" not in record.error
    assert record.inputs == [] and record.outputs == []
    assert [t["step"] for t in record.timings] == [f"Transform:{task_path.rsplit('/')[-1]}"]
    assert record.started_at <= record.ended_at and record.duration_sec >= 0
    assert record.code_hash is not None and record.environment_hash is not None


def test_a_step_that_fails_before_loading_or_returning_anything_leaves_an_error_record(tmp_path):
    result = dg.materialize(
        with_error_records([unreachable_source, stored_elsewhere]),
        partition_key="2024-01-02",
        resources={"io_manager": io_manager(tmp_path), "elsewhere": dg.InMemoryIOManager()},
        raise_on_error=False,
    )

    assert not result.success
    assert_no_input_failure_record(tmp_path, result.run_id, "dagster/intake/unreachable_source")
    [record] = records(tmp_path, "dagster/intake/unreachable_source")
    assert record.run_id == f"{result.run_id}.2024-01-02"
    assert record.variables["partition_key"] == "2024-01-02"
    assert record.variables["time_window"] == {
        "start": "2024-01-02T00:00:00+00:00",
        "end": "2024-01-03T00:00:00+00:00",
    }
    # Only what UbunyeIOManager stores is its to record.
    assert not (tmp_path / ".ubunye" / "lineage" / "dagster" / "default").exists()


unreachable_grid = unreachable(
    "unreachable_grid",
    partitions_def=dg.MultiPartitionsDefinition(
        {
            "day": dg.DailyPartitionsDefinition(start_date="2024-01-01"),
            "region": dg.StaticPartitionsDefinition(["north", "south"]),
        }
    ),
)


def test_a_multi_partition_step_failing_before_anything_is_recorded_with_each_key(tmp_path):
    key = dg.MultiPartitionKey({"day": "2024-01-02", "region": "south"})
    result = dg.materialize(
        with_error_records([unreachable_grid]),
        partition_key=key,
        resources={"io_manager": io_manager(tmp_path)},
        raise_on_error=False,
    )

    assert_no_input_failure_record(tmp_path, result.run_id, "dagster/default/unreachable_grid")
    [record] = records(tmp_path, "dagster/default/unreachable_grid")
    assert record.variables["partition_dimensions"] == {"day": "2024-01-02", "region": "south"}
    assert record.variables["time_window"] == {
        "start": "2024-01-02T00:00:00+00:00",
        "end": "2024-01-03T00:00:00+00:00",
    }


SEEN_WHILE_RUNNING: list = []


@dg.asset
def watched(context, ledger: pd.DataFrame) -> pd.DataFrame:
    root = Path(context.resources.io_manager.ubunye.usecase_dir)
    SEEN_WHILE_RUNNING.extend(records(root, "dagster/default/watched"))
    return ledger


def test_the_record_is_saved_as_running_as_soon_as_the_inputs_are_loaded(tmp_path):
    VERSION["rows"] = 3
    SEEN_WHILE_RUNNING.clear()
    result = run([ledger, watched], tmp_path)

    [running] = SEEN_WHILE_RUNNING
    assert running.status == "running"
    assert [step.name for step in running.inputs] == ["ledger"]
    [final] = records(tmp_path, "dagster/default/watched")
    assert (final.run_id, final.status) == (result.run_id, "success")


def test_a_file_changed_behind_dagsters_back_fails_the_read_naming_file_and_digests(tmp_path):
    VERSION["rows"] = 3
    instance = dg.DagsterInstance.ephemeral()
    first = run([ledger], tmp_path, instance=instance)
    recorded = first.asset_materializations_for_node("ledger")[0].metadata["ubunye/data_hash"]
    target = tmp_path / "data" / "ledger.parquet"
    pd.DataFrame({"entry": [0, 1, 2], "amount": [0.0, 1.0, 99.0]}).to_parquet(target)

    result = run(
        [ledger, balance], tmp_path, instance=instance, selection=[balance], raise_on_error=False
    )

    assert not result.success
    text = failure_text(result)
    assert "UnverifiedReadError" in text
    assert str(target) in text
    assert recorded.value in text
    [record] = records(tmp_path, "dagster/default/balance")
    [read] = record.inputs
    assert read.data_hash != recorded.value and read.data_hash in text
    assert record.status == "error" and "UnverifiedReadError" in record.error


def test_verify_reads_warn_lets_the_step_run_and_notes_the_difference(tmp_path):
    VERSION["rows"] = 3
    instance = dg.DagsterInstance.ephemeral()
    assert run([ledger], tmp_path, instance=instance).success
    target = tmp_path / "data" / "ledger.parquet"
    pd.DataFrame({"entry": [0], "amount": [5.0]}).to_parquet(target)

    result = run(
        [ledger, balance],
        tmp_path,
        instance=instance,
        selection=[balance],
        settings={"verify_reads": "warn"},
    )

    assert result.success
    [read] = records(tmp_path, "dagster/default/balance")[0].inputs
    assert read.row_count == 1
    assert read.source_note.startswith("verification failed")


def test_without_a_dagster_record_the_digest_stored_with_the_file_is_the_reference(tmp_path):
    VERSION["rows"] = 3
    assert run([ledger], tmp_path).success
    target = tmp_path / "data" / "ledger.parquet"
    table = pq.read_table(target)
    footer = pq.read_metadata(target).metadata
    notes = {key: value for key, value in footer.items() if key != b"ARROW:schema"}
    # Same notes (the digest written beside the data) in the footer, one value changed.
    changed = table.set_column(1, "amount", pa.array([0.0, 1.0, 7.0]))
    pq.write_table(changed.replace_schema_metadata(notes), target)

    result = run([ledger, balance], tmp_path, selection=[balance], raise_on_error=False)

    text = failure_text(result)
    assert "the note stored with the file recorded" in text
    assert notes[b"ubunye.data_hash"].decode() in text


CHECKED = [
    {"not_null": "customer"},
    {"unique": "order_id", "severity": "warn"},
    {"between": {"column": "amount", "min": 0, "max": 100}, "name": "amount_range"},
    {"one_of": {"column": "status", "values": ["open", "paid"]}},
    {"row_count": {"min": 1, "max": 10}},
]

ROWS = {"frame": None}


@dg.asset(metadata={"ubunye/expectations": CHECKED})
def checked_orders() -> pd.DataFrame:
    return ROWS["frame"]


GOOD = pd.DataFrame(
    {
        "order_id": [1, 2, 2, 3],
        "customer": ["a", "b", "c", "d"],
        "amount": [1.0, float("nan"), 50.0, None],
        "status": ["open", "paid", None, "open"],
    }
)


def test_every_expectation_result_passed_or_not_is_in_record_and_metadata(tmp_path):
    ROWS["frame"] = GOOD
    result = run([checked_orders], tmp_path)

    [record] = records(tmp_path, "dagster/default/checked_orders")
    by_rule = {entry["rule"]: entry for entry in record.expectations}
    assert list(by_rule) == [
        "customer_not_null",
        "order_id_unique",
        "amount_range",
        "status_one_of",
        "row_count",
    ]
    assert by_rule["customer_not_null"] == {
        "output": "checked_orders",
        "rule": "customer_not_null",
        "kind": "not_null",
        "severity": "fail",
        "column": "customer",
        "failed": 0,
        "total": 4,
        "passed": True,
    }
    assert (by_rule["order_id_unique"]["failed"], by_rule["order_id_unique"]["passed"]) == (
        2,
        False,
    )
    assert by_rule["amount_range"]["failed"] == 0  # NaN and null are not out of range
    assert by_rule["status_one_of"]["failed"] == 0  # a null passes one_of
    meta = result.asset_materializations_for_node("checked_orders")[0].metadata
    assert meta["ubunye/expectation_results"].value == record.expectations


def test_a_failing_rule_of_severity_fail_stops_the_write_and_keeps_the_previous_data(tmp_path):
    ROWS["frame"] = GOOD
    assert run([checked_orders], tmp_path).success
    target = tmp_path / "data" / "checked_orders.parquet"
    before = pd.read_parquet(target)

    ROWS["frame"] = GOOD.assign(amount=[1.0, 2.0, 500.0, -1.0], customer=["a", None, "c", "d"])
    result = run([checked_orders], tmp_path, raise_on_error=False)

    assert not result.success
    assert "expectations failed" in failure_text(result)
    pd.testing.assert_frame_equal(pd.read_parquet(target), before)
    latest = records(tmp_path, "dagster/default/checked_orders")[0]
    assert latest.status == "error" and "ExpectationFailed" in latest.error
    failed = {e["rule"]: e["failed"] for e in latest.expectations if not e["passed"]}
    assert failed == {"customer_not_null": 1, "order_id_unique": 2, "amount_range": 2}
    assert latest.outputs == []


def test_a_rule_naming_a_missing_column_is_refused_and_nothing_is_written(tmp_path):
    @dg.asset(metadata={"ubunye/expectations": [{"not_null": "nope"}]})
    def misdeclared() -> pd.DataFrame:
        return pd.DataFrame({"x": [1]})

    result = run([misdeclared], tmp_path, raise_on_error=False)

    assert "column 'nope' of rule" in failure_text(result)
    assert "is not in the output" in failure_text(result)
    assert not (tmp_path / "data" / "misdeclared.parquet").exists()


@pytest.mark.parametrize(
    ("declared", "problem"),
    [
        ({"not_null": "a", "unique": "b"}, "exactly one of"),
        ({"between": {"column": "a"}}, "needs 'min', 'max' or both"),
        ({"not_null": "a", "severity": "quarantine"}, "severity"),
        ({"banana": "a"}, "unknown rule kind 'banana'"),
        ({"not_nul": "a"}, "unknown rule kind 'not_nul' \\(did you mean 'not_null'\\?\\)"),
        ({"one_off": {"column": "a", "values": [1]}}, "did you mean 'one_of'"),
        ({"between": {"column": "a", "maxx": 1}}, "Between has no field 'maxx' \\(did you mean"),
        ("not_null", "is a mapping like"),
    ],
)
def test_a_malformed_rule_is_refused_with_a_message_naming_the_problem(declared, problem):
    with pytest.raises(ExpectationError, match=problem):
        parse_rules([declared])


def test_two_rules_with_the_same_name_are_refused():
    with pytest.raises(ExpectationError, match="repeated: a_not_null"):
        parse_rules([{"not_null": "a"}, {"not_null": "a", "severity": "warn"}])


@dg.asset
def durations() -> pd.DataFrame:
    return pd.DataFrame({"took": pd.to_timedelta([1, 2], unit="s"), "n": [1, 2]})


def test_when_the_hash_fails_the_metadata_says_why_and_shows_no_digest(tmp_path):
    result = run([durations], tmp_path)

    meta = result.asset_materializations_for_node("durations")[0]
    assert "ubunye/data_hash" not in meta.metadata
    assert "rows-v1 has no canonical name" in meta.metadata["ubunye/hash_error"].value
    assert meta.metadata["ubunye/hash_method"].value == "rows-v1"
    assert "dagster/row_count" not in meta.metadata
    assert meta.tags.get("dagster/data_version") != meta.metadata["ubunye/schema_hash"].value
    [record] = records(tmp_path, "dagster/default/durations")
    [output] = record.outputs
    assert (output.data_hash, output.row_count) == (None, None)
    assert output.hash_error == meta.metadata["ubunye/hash_error"].value


ATTEMPTS = {"n": 0}


@dg.asset(retry_policy=dg.RetryPolicy(max_retries=1))
def retried(ledger: pd.DataFrame) -> pd.DataFrame:
    ATTEMPTS["n"] += 1
    if ATTEMPTS["n"] == 1:
        raise TimeoutError("first attempt times out")
    return ledger


def test_a_retried_step_records_its_last_attempt_once(tmp_path):
    VERSION["rows"] = 3
    ATTEMPTS["n"] = 0
    result = run([ledger, retried], tmp_path)

    assert result.success and ATTEMPTS["n"] == 2
    [record] = records(tmp_path, "dagster/default/retried")
    assert record.status == "success" and record.error is None
    assert [step.name for step in record.inputs] == ["ledger"]
    assert [t["step"] for t in record.timings].count("Reader:pandas-parquet") == 1


def multiprocess_job() -> dg.JobDefinition:
    """ledger -> fragile, and unreachable_feed, as a job run by Dagster's default multiprocess
    executor."""
    root = Path(os.environ["UBUNYE_TEST_ROOT"])
    defs = dg.Definitions(
        assets=with_error_records([ledger, fragile, unreachable_feed]),
        jobs=[dg.define_asset_job("ledger_job", executor_def=dg.multiprocess_executor)],
        resources={"io_manager": io_manager(root)},
    )
    return defs.resolve_job_def("ledger_job")


def test_a_step_failing_in_its_own_process_still_leaves_an_error_record(tmp_path, monkeypatch):
    monkeypatch.setenv("UBUNYE_TEST_ROOT", str(tmp_path))
    home = tmp_path / "home"
    home.mkdir()
    (home / "dagster.yaml").write_text("")
    with dg.instance_for_test(temp_dir=str(home)) as instance:
        # Each step process rebuilds the job from this file.
        job = ReconstructableJob.for_file(__file__, "multiprocess_job")
        result = dg.execute_job(job, instance=instance)

    assert not result.success
    [ok] = records(tmp_path, "dagster/default/ledger")
    [failed] = records(tmp_path, "dagster/default/fragile")
    assert ok.status == "success"
    assert failed.status == "error" and failed.error.startswith("RuntimeError: upstream API")
    assert "abc123secret" not in failed.error
    assert [step.name for step in failed.inputs] == ["ledger"]
    assert_no_input_failure_record(tmp_path, result.run_id, "dagster/default/unreachable_feed")
