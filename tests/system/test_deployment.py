"""In the shape teams deploy it, started by the test on 127.0.0.1: Dagster on PostgreSQL with the
run queue (at most 3 runs at once), ``dagster-daemon run`` and ``dagster-webserver`` as their own
processes, the steps of a run of several assets in processes of their own (the multiprocess
executor; the big read's and the Spark asset's jobs run their one step in the run's process),
data and records on S3 (moto's server), runs launched through the webserver's GraphQL, and one
Spark asset on a Spark standalone cluster (the module's ``spark_cluster``: a master and two
workers).

The code location is ``tests/locations/deployed_shop.py``, loaded by the interpreter of a venv of
its own holding the built wheels (tests/wheel_builds.py: ubunye-rows and ubunye-dagster with the
s3, polars and spark extras, and dagster-postgres), from a working directory outside the
repository: its code server, run workers and step processes import the wheels, as a team's
deployment would; the daemon and the webserver run on this interpreter. The daemon's backfill
loop runs every 2 s instead of the 30 s Dagster hard-codes (tests/quick_daemon.py): a backfill
waits on that loop twice, to launch its runs and to see them done.

One deployment serves the whole module, and the tests run in order, each one a promise of the
scenario: a run through the queue, the Spark asset, a backfill, drift flagged by the daemon's
sensor, the daemon killed and restarted, PostgreSQL restarted, a step killed while it writes, the
records read from another process. The outputs docs/deployment.md shows are collected on the way
and compared with it by the last test (``UBUNYE_WRITE_DEPLOYMENT_DOCS=1`` rewrites them).
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from deployment_services import (
    MAX_CONCURRENT_RUNS,
    ServiceProcess,
    Webserver,
    daemon_process,
    running,
    wait_for,
    write_instance_yaml,
    write_workspace,
)
from object_store import moto_s3
from postgres_cluster import PostgresCluster, postgres_available, postgres_cluster
from spark_cluster import SparkCluster, cluster_driver_environment
from wheel_builds import built_distributions, install_wheels, outside_repository

from example_project.webserver import WebserverError
from ubunye_core.locations import STORAGE_OPTIONS_ENV, StoreAccess
from ubunye_core.store import LineageStore
from ubunye_rows import fingerprint_arrow
from ubunye_rows.hashing.spark import SPARK_ENGINE_ENV

pytest.importorskip("dagster_postgres")
pytest.importorskip("moto.server")
pytest.importorskip("dagster_pyspark")
pytestmark = [
    pytest.mark.deployment,
    pytest.mark.timeout(2400),
    pytest.mark.skipif(not postgres_available(), reason="no PostgreSQL server binaries"),
]

REPO = Path(__file__).resolve().parents[2]
LOCATION_FILE = REPO / "tests" / "locations" / "deployed_shop.py"
DOC = REPO / "docs" / "deployment.md"
EXAMPLES_SCRIPT = REPO / "scripts" / "deployment_examples.py"
WRITE_DOCS_ENV = "UBUNYE_WRITE_DEPLOYMENT_DOCS"
LOCATION = "deployed_shop"
SENSOR = "ubunye_drift_sensor"
CHECK = "ubunye_reproducible"
#: The assets of the ``shop`` job, each a record per run.
SHOP = ("raw_orders", "cleaned_orders", "order_totals", "region_counts", "regions", "products",
        "planted", "pipes_scores")  # fmt: skip
DAYS = tuple(f"2026-01-0{day}" for day in range(1, 6))
#: Generous: on two shared cores each step process takes seconds to tens of seconds to start.
RUN_TIMEOUT = 900
SENSOR_TIMEOUT = 300
#: How often the daemon's backfill loop turns (Dagster hard-codes 30 s; tests/quick_daemon.py).
DAEMON_LOOPS = {"backfill": 2}
#: How often the failed-steps sensor ticks (its default).
FAILED_STEPS_INTERVAL = 30


def task_path(asset: str) -> str:
    """Where the records of an ungrouped asset of the default use case are."""
    return f"dagster/default/{asset}"


@dataclass
class Deployment:
    """The running deployment and what the tests found so far (run ids, outputs to show)."""

    root: str
    storage_options: dict[str, Any]
    env: dict[str, str]
    folder: Path
    pg: PostgresCluster
    web: Webserver
    daemon: ServiceProcess
    workspace: Path
    instance: dg.DagsterInstance
    flags_path: Path
    instance_yaml: str
    #: The code location's interpreter (its venv holds the wheels).
    location_python: Path
    runs: dict[str, str] = field(default_factory=dict)
    shown: dict[str, str] = field(default_factory=dict)

    def store(self) -> LineageStore:
        """The lineage store on S3, opened as a laptop would: the URL and the options."""
        return LineageStore.for_usecase_dir(
            StoreAccess(storage_options=self.storage_options).path(self.root)
        )

    def cli(self, *args: str, check: bool = True) -> str:
        """``ubunye-dagster ARGS`` in another process and folder, the store's options in
        ``$UBUNYE_STORAGE_OPTIONS``; its standard output."""
        env = {k: v for k, v in self.env.items() if k != "DAGSTER_HOME"}
        # This interpreter's CLI: the checkout it runs from (a worktree's, on its path).
        if "PYTHONPATH" in os.environ:
            env["PYTHONPATH"] = os.environ["PYTHONPATH"]
        done = subprocess.run(
            ["ubunye-dagster", *args], cwd=self.folder, env=env, capture_output=True, text=True,
            timeout=180,
        )  # fmt: skip
        if check:
            assert done.returncode == 0, f"{args}: {done.stdout}\n{done.stderr}"
        return done.stdout

    def launch(self, job: str) -> str:
        """Launch a run of ``job`` through the webserver's GraphQL; its run id."""
        return self.web.launch_run(job, location=LOCATION)

    def finish(self, run_id: str) -> str:
        """Wait for a run to end; its status."""
        return self.web.wait_for_run(run_id, timeout=RUN_TIMEOUT)

    def materialisations(self, asset: str, run_id: str | None = None) -> list[dg.EventLogRecord]:
        """The asset's materialisations, oldest first (those of ``run_id`` only, when given)."""
        found = self.instance.fetch_materializations(dg.AssetKey(asset), limit=1000, ascending=True)
        return [r for r in found.records if run_id is None or r.run_id == run_id]

    def sensor_judgements(self, asset: str) -> list[dict[str, Any]]:
        """The drift sensor's evaluations of the asset's check (reported outside any run, where
        the check's own step and the in-step check report in theirs): each with its target
        storage id, run id and whether it passed."""
        answer = self.web.ask(CHECK_EXECUTIONS, {"key": {"path": [asset]}, "check": CHECK})
        judged = []
        for execution in answer["assetCheckExecutions"]:
            evaluation = execution["evaluation"] or {}
            entries = {e["label"]: e.get("text") for e in evaluation.get("metadataEntries", [])}
            if not execution["runId"] and "ubunye/storage_id" in entries:
                target = evaluation["targetMaterialization"]
                judged.append(
                    {"storage_id": int(target["storageId"]), "run_id": target["runId"],
                     "passed": evaluation["success"], "reason": entries.get("ubunye/reason")}
                )  # fmt: skip
        return judged

    def flags(self) -> list[dict[str, Any]]:
        """The verdicts the sensor handed its ``on_drift`` hook, in order."""
        if not self.flags_path.exists():
            return []
        return [json.loads(line) for line in self.flags_path.read_text().splitlines() if line]

    def ticks(self) -> list[dict[str, Any]]:
        """The drift sensor's ticks, newest first (the webserver's page of them)."""
        return self.web.sensor_ticks(SENSOR, location=LOCATION)["ticks"]

    def run_record(self, run_id: str) -> dg.RunRecord:
        record = self.instance.get_run_record_by_id(run_id)
        assert record is not None, run_id
        return record


CHECK_EXECUTIONS = """
query Checks($key: AssetKeyInput!, $check: String!) {
  assetCheckExecutions(assetKey: $key, checkName: $check, limit: 500) {
    runId
    evaluation {
      success
      targetMaterialization { storageId runId }
      metadataEntries { label ... on TextMetadataEntry { text } }
    }
  }
}
"""

BACKFILL = """
mutation Backfill($params: LaunchBackfillParams!) {
  launchPartitionBackfill(backfillParams: $params) {
    __typename
    ... on LaunchBackfillSuccess { backfillId }
    ... on PythonError { message }
    ... on Error { message }
  }
}
"""

BACKFILL_STATUS = """
query BackfillStatus($id: String!) {
  partitionBackfillOrError(backfillId: $id) {
    __typename
    ... on PartitionBackfill { status }
  }
}
"""


def process_env(
    folder: Path, home: Path, root: str, options: dict[str, Any], spark: SparkCluster
) -> dict[str, str]:
    """The environment of the daemon, the webserver, their code servers and run workers: nothing
    on the Python path, so the location imports its venv's wheels, never this checkout."""
    return {
        **outside_repository(),
        **cluster_driver_environment(spark.executor_python),
        "UBUNYE_DEPLOY_SPARK_CONFIG": json.dumps(spark.session_settings()),
        "UBUNYE_DEPLOY_SPARK_DATA": str(folder / "spark-data"),
        # The executors hash in Python (their venv's ubunye-rows) or the step fails: no fallback.
        SPARK_ENGINE_ENV: "arrow",
        "DAGSTER_HOME": str(home),
        "UBUNYE_DEPLOY_ROOT": root,
        STORAGE_OPTIONS_ENV: json.dumps(options),
        "UBUNYE_DEPLOY_FLAGS": str(folder / "flags.jsonl"),
        "DAGSTER_DISABLE_TELEMETRY": "1",
        "PYTHONUNBUFFERED": "1",
    }


def location_python(folder: Path) -> Path:
    """A venv in ``folder`` with the built wheels, the extras the location uses and
    dagster-postgres (the run workers open the instance); its interpreter."""
    (_, rows_wheel), (_, dagster_wheel) = built_distributions()
    requirements = [
        str(rows_wheel),
        f"ubunye-dagster[s3,polars,spark] @ {dagster_wheel.as_uri()}",
        "dagster-postgres",
    ]
    return install_wheels(folder / "location-venv", requirements, outside_repository())


@pytest.fixture(scope="module")
def deployment(
    tmp_path_factory: pytest.TempPathFactory, spark_cluster: SparkCluster
) -> Iterator[Deployment]:
    """PostgreSQL, S3, the daemon and the webserver (and the module's Spark cluster), up once for
    the module; all ended after."""
    folder = tmp_path_factory.mktemp("deployment")
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # moto's server logs every request
    with moto_s3() as s3, postgres_cluster() as pg:
        root = f"s3://{s3['bucket']}/shop"
        home = folder / "dagster_home"
        instance_yaml = write_instance_yaml(home, pg)
        python = location_python(folder)
        workspace = write_workspace(folder, LOCATION_FILE, LOCATION, folder, python)
        env = process_env(folder, home, root, s3["storage_options"], spark_cluster)
        daemon = daemon_process(workspace, env, folder / "daemon.log", DAEMON_LOOPS)
        web = Webserver(workspace, env, folder / "webserver.log", LOCATION)
        with running(daemon, web), dg.DagsterInstance.from_config(str(home)) as instance:
            [error] = web.wait_until_loaded([LOCATION], timeout=RUN_TIMEOUT).values()
            assert error is None, error
            yield Deployment(
                root=root, storage_options=s3["storage_options"], env=env, folder=folder, pg=pg,
                web=web, daemon=daemon, workspace=workspace, instance=instance,
                flags_path=folder / "flags.jsonl", instance_yaml=instance_yaml,
                location_python=python,
            )  # fmt: skip


def load_single_process_shop(base: Path) -> Any:
    """The location's module, its definitions with data and records in a local folder (read at
    import)."""
    before = os.environ.get("UBUNYE_DEPLOY_ROOT")
    os.environ["UBUNYE_DEPLOY_ROOT"] = str(base)
    try:
        spec = importlib.util.spec_from_file_location("deployed_shop_single", LOCATION_FILE)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        if before is None:
            os.environ.pop("UBUNYE_DEPLOY_ROOT")
        else:
            os.environ["UBUNYE_DEPLOY_ROOT"] = before
    return module


def assert_imports_from_the_wheels(deployment: Deployment) -> None:
    """The location's interpreter, in the processes' environment and working directory, imports
    ubunye_dagster, ubunye_core and the kernel from its venv, not from this checkout."""
    probe = (
        "import json, ubunye_core, ubunye_dagster; from ubunye_rows import _kernel; "
        "print(json.dumps([ubunye_core.__file__, ubunye_dagster.__file__, _kernel.__file__]))"
    )
    done = subprocess.run(
        [str(deployment.location_python), "-c", probe], cwd=deployment.folder,
        env=deployment.env, capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    venv = deployment.location_python.parent.parent
    for module in json.loads(done.stdout):
        assert Path(module).is_relative_to(venv), module


def data_version(record: dg.EventLogRecord) -> str | None:
    return record.asset_materialization.tags.get("dagster/data_version")


def data_hash(record: dg.EventLogRecord) -> str:
    return record.asset_materialization.metadata["ubunye/data_hash"].value


# 1. A run through the queue.


def test_a_run_through_the_queue_records_each_asset_on_s3_with_the_digests_of_one_process(
    deployment: Deployment, tmp_path: Path
) -> None:
    run_id = deployment.launch("shop")
    deployment.runs["first"] = run_id
    assert deployment.finish(run_id) == "SUCCESS", deployment.daemon.log_tail()
    origin = deployment.run_record(run_id).dagster_run.job_code_origin.repository_origin
    assert origin.executable_path == str(deployment.location_python)
    assert_imports_from_the_wheels(deployment)
    kinds = {e.dagster_event_type for e in deployment.instance.all_logs(run_id)}
    assert dg.DagsterEventType.RUN_ENQUEUED in kinds  # the queue, not a direct launch
    step_pids = {
        e.dagster_event.pid
        for e in deployment.instance.all_logs(run_id, of_type=dg.DagsterEventType.STEP_START)
    }
    assert len(step_pids) >= len(SHOP) - 1  # a process per step (the multi-asset is one)

    store = deployment.store()
    digests = {}
    for asset in SHOP:
        [materialised] = deployment.materialisations(asset, run_id)
        record = store.load(task_path(asset), run_id)
        [output] = record.outputs
        assert record.status == "success", asset
        assert output.data_hash == data_hash(materialised) == data_version(materialised), asset
        assert store.path_for(task_path(asset), run_id).protocol == "s3"
        # Made in the location's venv: this interpreter's ubunye-engine (a test dependency) is
        # not among the packages the step's environment recorded.
        assert "ubunye-engine" not in record.environment["packages"], asset
        digests[asset] = output.data_hash

    single = load_single_process_shop(tmp_path / "single").defs
    result = dg.materialize(
        [a for a in single.assets if isinstance(a, dg.AssetsDefinition)],
        resources=single.resources,
        selection=list(SHOP),
    )
    alone = {
        event.asset_key.to_user_string(): event.materialization.metadata["ubunye/data_hash"].value
        for event in result.get_asset_materialization_events()
    }
    # `planted` draws new noise each run: its digest differs from any other run's by design.
    same = {asset: digests[asset] for asset in SHOP if asset != "planted"}
    assert {asset: alone[asset] for asset in same} == same
    assert alone["planted"] != digests["planted"]


def test_the_spark_asset_hashed_on_the_standalone_cluster_records_the_single_process_digest(
    deployment: Deployment, spark_cluster: SparkCluster, tmp_path: Path
) -> None:
    run_id = deployment.launch("spark")
    deployment.runs["spark"] = run_id
    assert deployment.finish(run_id) == "SUCCESS", deployment.daemon.log_tail()
    [materialised] = deployment.materialisations("spark_orders", run_id)
    record = deployment.store().load(task_path("spark_orders"), run_id)
    [output] = record.outputs
    assert (record.status, record.backend) == ("success", "spark")
    assert output.data_hash == data_hash(materialised) == data_version(materialised)

    # The same rows hashed in this process, without Spark: the digest is the engine's to keep.
    alone = fingerprint_arrow(load_single_process_shop(tmp_path / "single").spark_orders_table())
    assert (output.schema_hash, output.data_hash, output.row_count) == (
        alone.schema_hash, alone.data_hash, alone.row_count,
    )  # fmt: skip
    # Each worker started an executor for the run's application (its folder under the worker's).
    for worker in spark_cluster.worker_folders():
        assert list(worker.glob("app-*/*/stderr")), f"no executor of the run on {worker.name}"


# 2. A backfill, three runs at once.


def most_at_once(runs: list[dg.RunRecord]) -> int:
    """The most runs that were in progress at one instant (from their start and end times)."""
    edges = sorted(
        [(r.start_time, 1) for r in runs] + [(r.end_time, -1) for r in runs],
        key=lambda edge: (edge[0], edge[1]),  # an end before a start at the same instant
    )
    at_once = most = 0
    for _, step in edges:
        at_once += step
        most = max(most, at_once)
    return most


def test_a_backfill_of_five_partitions_runs_three_at_once_and_records_each_partition_whole(
    deployment: Deployment,
) -> None:
    params = {"assetSelection": [{"path": ["daily_sales"]}], "partitionNames": list(DAYS)}
    launched = deployment.web.ask(BACKFILL, {"params": params})["launchPartitionBackfill"]
    assert launched["__typename"] == "LaunchBackfillSuccess", launched
    backfill_id = launched["backfillId"]

    def finished() -> str | None:
        answer = deployment.web.ask(BACKFILL_STATUS, {"id": backfill_id})
        status = answer["partitionBackfillOrError"]["status"]
        return None if status in ("REQUESTED", "CANCELING", "FAILING") else status

    status = wait_for(f"backfill {backfill_id}", finished, RUN_TIMEOUT, interval=2)
    assert status in ("COMPLETED", "COMPLETED_SUCCESS"), deployment.daemon.log_tail()
    runs = deployment.instance.get_run_records(
        dg.RunsFilter(tags={"dagster/backfill": backfill_id})
    )
    assert len(runs) == len(DAYS)
    assert {r.dagster_run.status for r in runs} == {dg.DagsterRunStatus.SUCCESS}
    assert 1 < most_at_once(runs) <= MAX_CONCURRENT_RUNS

    store = deployment.store()
    materialised = {r.partition_key: r for r in deployment.materialisations("daily_sales")}
    assert sorted(materialised) == list(DAYS)
    records = store.list_runs(task_path("daily_sales"))
    assert len(records) == len(DAYS)
    for record in records:
        # Whole: the stored file is one complete JSON document, the record it was written from.
        text = store.path_for(record.task_path, record.run_id).read_text()
        assert json.loads(text)["run_id"] == record.run_id
        partition = record.variables["partition_key"]
        assert record.status == "success"
        assert record.outputs[0].data_hash == data_version(materialised[partition])
        assert record.run_id == f"{materialised[partition].run_id}.{partition}"

    listed = ["lineage", "list", "--asset", "daily_sales", "-d", deployment.root, "--json"]
    through_index = json.loads(deployment.cli(*listed))
    assert json.loads(deployment.cli(*listed, "--no-index")) == through_index
    assert {r["run_id"]: r["outputs"][0]["data_hash"] for r in through_index} == {
        r.run_id: r.outputs[0].data_hash for r in records
    }
    deployment.shown["backfill-list"] = deployment.cli(*listed[:-1])


# 3. Drift flagged by the daemon's sensor.


def wait_until_judged(deployment: Deployment, run_id: str, assets: tuple[str, ...]) -> None:
    """Wait until the sensor has judged every materialisation of ``assets`` in ``run_id``."""

    def all_judged() -> bool:
        for asset in assets:
            wanted = {r.storage_id for r in deployment.materialisations(asset, run_id)}
            judged = {j["storage_id"] for j in deployment.sensor_judgements(asset)}
            if not wanted <= judged:
                return False
        return True

    wait_for(f"the sensor judging run {run_id}", all_judged, SENSOR_TIMEOUT, interval=2)


def test_the_daemons_drift_sensor_flags_the_planted_asset_and_only_it_within_two_ticks(
    deployment: Deployment,
) -> None:
    run_id = deployment.launch("shop")
    deployment.runs["second"] = run_id
    assert deployment.finish(run_id) == "SUCCESS", deployment.daemon.log_tail()
    ended = deployment.run_record(run_id).end_time
    wait_until_judged(deployment, run_id, SHOP)

    verdicts = {
        asset: [j for j in deployment.sensor_judgements(asset) if j["run_id"] == run_id]
        for asset in SHOP
    }
    assert {asset: [j["passed"] for j in found] for asset, found in verdicts.items()} == {
        asset: [asset != "planted"] for asset in SHOP
    }
    assert verdicts["planted"][0]["reason"] == "same inputs"
    [flag] = deployment.flags()
    assert (flag["asset_key"], flag["run_id"], flag["reason"]) == ("planted", run_id, "same inputs")
    assert deployment.run_record(run_id).dagster_run.tags.get("ubunye/drift") == "same inputs"

    ticks = deployment.ticks()
    flagging = [t for t in ticks if "planted" in (t["skipReason"] or "")]
    assert len(flagging) == 1, ticks
    after_the_run = [t for t in ticks if ended < t["timestamp"] <= flagging[0]["timestamp"]]
    assert len(after_the_run) <= 2, ticks
    deployment.shown["flagged-tick"] = flagging[0]["skipReason"] + "\n"


# 4. The daemon killed and started again while a run's materialisations are being judged.


def test_a_daemon_killed_mid_way_and_restarted_resumes_from_its_cursor_judging_each_once(
    deployment: Deployment,
) -> None:
    run_id = deployment.launch("shop")
    deployment.runs["third"] = run_id

    def some_judged() -> bool:
        return any(
            j["run_id"] == run_id for asset in SHOP for j in deployment.sensor_judgements(asset)
        )

    wait_for("a tick judging the third run", some_judged, RUN_TIMEOUT, interval=1)
    deployment.daemon.kill_now()  # SIGKILL: no shutdown, a tick may be cut short
    killed_at = time.time()
    judged_before = {
        j["storage_id"]
        for asset in SHOP
        for j in deployment.sensor_judgements(asset)
        if j["run_id"] == run_id
    }
    # The run's worker belongs to the killed daemon's code server, which finishes its runs.
    assert deployment.finish(run_id) == "SUCCESS", deployment.daemon.log_tail()
    produced = {r.storage_id for asset in SHOP for r in deployment.materialisations(asset, run_id)}
    assert judged_before < produced, "the daemon was killed after the sensor had judged the run"
    assert not [t for t in deployment.ticks() if t["timestamp"] > killed_at + 1]

    deployment.daemon.start()
    wait_until_judged(deployment, run_id, SHOP)
    every_materialisation = {
        r.storage_id for asset in (*SHOP, "daily_sales") for r in deployment.materialisations(asset)
    }
    judged = Counter(
        j["storage_id"]
        for asset in (*SHOP, "daily_sales")
        for j in deployment.sensor_judgements(asset)
    )
    assert set(judged) == every_materialisation  # nothing missed
    assert max(judged.values()) == 1  # nothing judged twice
    flagged = [(f["asset_key"], f["run_id"]) for f in deployment.flags()]
    assert flagged == [("planted", deployment.runs["second"]), ("planted", run_id)]


# 5. PostgreSQL restarted between runs.


RUNS = "query Runs { runsOrError(limit: 1) { __typename } }"


STALE_CONNECTION = "server closed the connection unexpectedly"


def webserver_reconnected(deployment: Deployment) -> bool:
    """Whether the webserver answers a read of each storage (runs, events, ticks). It holds a
    pooled connection to PostgreSQL per storage; after a restart the first query on each fails
    once ("server closed the connection unexpectedly"), and SQLAlchemy then drops the pool."""
    try:
        deployment.web.ask(RUNS)
        deployment.sensor_judgements("big_orders")
        deployment.ticks()
    except WebserverError:
        return False
    return True


def launch_after_restart(deployment: Deployment, job: str) -> str:
    """Launch as a client would after a restart: a launch refused for a stale pooled connection
    created no run (checked), so launching again is safe; at most five tries."""
    for _ in range(5):
        runs_before = deployment.instance.get_runs_count()
        try:
            return deployment.launch(job)
        except WebserverError as refused:
            if STALE_CONNECTION not in str(refused):
                raise
            assert deployment.instance.get_runs_count() == runs_before, (
                "a refused launch made a run"
            )
    raise AssertionError(f"the webserver refused five launches of {job} after the restart")


def test_after_postgres_restarts_the_next_run_and_the_sensor_still_work(
    deployment: Deployment,
) -> None:
    deployment.pg.restart()
    wait_for("the webserver reconnecting", lambda: webserver_reconnected(deployment), 60)
    run_id = launch_after_restart(deployment, "big")
    deployment.runs["big"] = run_id
    assert deployment.finish(run_id) == "SUCCESS", deployment.daemon.log_tail()
    wait_until_judged(deployment, run_id, ("big_orders",))
    [judged] = [j for j in deployment.sensor_judgements("big_orders") if j["run_id"] == run_id]
    assert judged["passed"]


# 6. A step killed while it writes.


def wait_for_output_event(deployment: Deployment, run_id: str, step: str) -> dg.EventLogEntry:
    """The step's output event: its function has returned, the IO manager is writing."""

    def output_event() -> dg.EventLogEntry | None:
        events = deployment.instance.all_logs(run_id, of_type=dg.DagsterEventType.STEP_OUTPUT)
        return next((e for e in events if e.step_key == step), None)

    return wait_for(f"{step} yielding its output", output_event, RUN_TIMEOUT, interval=0.05)


def test_a_step_killed_while_writing_leaves_the_previous_version_whole_and_verified(
    deployment: Deployment,
) -> None:
    previous = deployment.store().load(task_path("big_orders"), deployment.runs["big"])
    run_id = deployment.launch("big")
    deployment.runs["killed"] = run_id
    output = wait_for_output_event(deployment, run_id, "big_orders")
    os.kill(output.dagster_event.pid, signal.SIGKILL)
    assert deployment.finish(run_id) == "FAILURE"
    assert not deployment.materialisations("big_orders", run_id), "the kill came after the write"

    # The previous version is whole at the final path: the next reader verifies it (launched
    # now, so it runs while the record below is closed).
    reader = deployment.launch("big_read")
    deployment.runs["big_read"] = reader

    # What the record says: the step saved `running` when it loaded its input, and a process
    # killed by SIGKILL runs no handler; Dagster has failed the run, so within two ticks the
    # daemon's failed-steps sensor makes it `error` with the executor's words, nothing else
    # changed (no output, no end).
    def closed() -> Any:
        record = deployment.store().load(task_path("big_orders"), run_id)
        return record if record.status == "error" else None

    killed = wait_for("the killed step's record closed", closed, 2 * FAILED_STEPS_INTERVAL + 30)
    assert killed.error.startswith("ChildProcessCrashException: "), killed.error
    assert "SIGKILL" in killed.error and (killed.outputs, killed.ended_at) == ([], None)
    assert [step.name for step in killed.inputs] == ["regions"]
    search = ("lineage", "search", "-d", deployment.root, "--asset", "big_orders", "--status")
    assert run_id not in deployment.cli(*search, "running")
    errors = deployment.cli(*search, "error")
    assert run_id in errors
    deployment.shown["killed-search"] = errors

    assert deployment.finish(reader) == "SUCCESS", deployment.daemon.log_tail()
    [read] = deployment.store().load(task_path("big_total"), reader).inputs
    assert read.data_hash == previous.outputs[0].data_hash
    assert read.source_note.startswith("verified:"), read.source_note

    # On S3 a write is one PUT of the whole file: nothing was staged, nothing is left to clean.
    cleaned = deployment.cli("clean", f"{deployment.root}/data")
    assert cleaned.strip().endswith("removed 0 staging entries left by dead writers"), cleaned
    store_fs = StoreAccess(storage_options=deployment.storage_options).path(deployment.root).fs
    assert not [k for k in store_fs.find(deployment.root) if ".ubunye-tmp-" in k]
    deployment.shown["clean"] = cleaned


# 7. The records read from another process.


def test_the_cli_in_another_process_reads_the_digests_the_runs_recorded(
    deployment: Deployment,
) -> None:
    root = deployment.root
    materialised = {r.run_id: data_hash(r) for r in deployment.materialisations("planted")}
    listed = json.loads(
        deployment.cli("lineage", "list", "--asset", "planted", "-d", root, "--json")
    )
    assert {r["run_id"]: r["outputs"][0]["data_hash"] for r in listed} == materialised
    first = deployment.runs["first"]
    for asset in SHOP:
        traced = deployment.cli(
            "lineage", "trace", "--asset", asset, "-d", root, "--run-id", first, "--json"
        )
        [record] = deployment.materialisations(asset, first)
        assert json.loads(traced)["outputs"][0]["data_hash"] == data_hash(record), asset
    found = json.loads(deployment.cli("lineage", "search", "-d", root, "--json"))
    by_run = {(d["task_path"], d["run_id"]): d for d in found}
    for asset in (*SHOP, "daily_sales", "big_orders", "big_total"):
        for record in deployment.materialisations(asset):
            partition = f".{record.partition_key}" if record.partition_key else ""
            document = by_run[(task_path(asset), record.run_id + partition)]
            assert document["outputs"][0]["data_hash"] == data_hash(record), asset
    deployment.shown["trace"] = deployment.cli(
        "lineage", "trace", "--asset", "order_totals", "-d", root, "--run-id", first
    )


# 8. What docs/deployment.md shows is what this run printed.


def deployment_examples():
    """scripts/deployment_examples.py: the page's blocks, compared or rewritten."""
    spec = importlib.util.spec_from_file_location("deployment_examples", EXAMPLES_SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_deployment_page_shows_the_dagster_yaml_and_the_outputs_of_this_run(
    deployment: Deployment,
) -> None:
    fresh = {**deployment.shown, "dagster-yaml": deployment.instance_yaml}
    collected = deployment.folder / "outputs.json"
    collected.write_text(json.dumps(fresh, indent=2, sort_keys=True), encoding="utf-8")
    examples = deployment_examples()
    if os.environ.get(WRITE_DOCS_ENV):
        DOC.write_text(examples.rewritten(DOC.read_text(encoding="utf-8"), fresh), encoding="utf-8")
    problems = examples.disagreements(DOC.read_text(encoding="utf-8"), fresh)
    assert not problems, (
        f"docs/deployment.md and this run disagree (the run's outputs: {collected}; "
        f"{WRITE_DOCS_ENV}=1 rewrites the page):\n" + "".join(problems)
    )
