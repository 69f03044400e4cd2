"""Guards of every Dagster internal ``ubunye_dagster/dagster_internals.py`` reads.

A Dagster upgrade that moves one of them fails here, by name, before records silently change.
"""

from __future__ import annotations

import time
import warnings
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest
from dagster._core.execution.context.system import StepExecutionContext

from ubunye_dagster import dagster_internals as internals

#: The oldest supported Dagster runs this whole module (the smoke set, .ci/run).
pytestmark = pytest.mark.smoke

DAGSTER_MINOR = tuple(int(part) for part in dg.__version__.split(".")[:2])


def test_the_step_context_still_has_what_the_glue_reads():
    # handle_output sets the data version through the step context before Dagster builds the
    # materialisation event, which reads it back (execute_step._get_output_asset_events).
    for name in ("set_data_version", "has_data_version", "get_data_version"):
        assert callable(getattr(StepExecutionContext, name)), name
    # A failed step's exception, read when the run's resources are torn down.
    assert isinstance(StepExecutionContext.step_exception, property)
    assert callable(StepExecutionContext.has_seen_output)
    for name in (
        "get_output_asset_keys",
        "asset_partition_key_range_for_output",
        "has_asset_partitions_for_output",
        "op_config",
        "op_def",
        "node_handle",
        "job_def",
        "job_name",
        "dagster_run",
        "run_id",
        "step",
        "instance",
        "resources",
    ):
        assert hasattr(StepExecutionContext, name), name
    assert hasattr(dg.OutputContext, "step_context")
    assert hasattr(dg.InputContext, "step_context")
    assert callable(dg.OpExecutionContext.get_step_execution_context)


@dg.asset
def prices() -> pd.DataFrame:
    return pd.DataFrame({"price": [1]})


@dg.asset(group_name="money", code_version="2", metadata={"a": 1})
def costs(prices: pd.DataFrame) -> pd.DataFrame:
    return prices


def test_the_asset_layer_and_its_nodes_still_have_what_the_glue_reads():
    for name in ("get", "has"):
        assert callable(getattr(internals.AssetLayer, name)), name
    job = dg.Definitions(assets=[prices, costs]).resolve_implicit_global_asset_job_def()
    node = job.asset_layer.get(dg.AssetKey("costs"))
    assert isinstance(node, internals.AssetNode)
    assert (node.group_name, node.code_version, dict(node.metadata)) == ("money", "2", {"a": 1})
    assert node.partitions_def is None and node.io_manager_key == "io_manager"
    assert set(node.parent_keys) == {dg.AssetKey("prices")}
    assert hasattr(dg.OpDefinition, "compute_fn")
    assert callable(dg.AssetsDefinition.get_io_manager_key_for_asset_key)


def test_the_classes_imported_from_either_dagster_layout_are_the_ones_dagster_uses():
    # Dagster 1.11 moved AssetLayer, AssetNode and the check evaluation's target data one
    # package down (assets/job, assets/graph, asset_checks); dagster_internals imports either.
    job = dg.Definitions(assets=[prices, costs]).resolve_implicit_global_asset_job_def()
    assert type(job.asset_layer) is internals.AssetLayer
    assert type(job.asset_layer.get(dg.AssetKey("costs"))) is internals.AssetNode
    target = internals.AssetCheckEvaluationTargetMaterializationData(
        storage_id=7, run_id="a-run", timestamp=1.5
    )
    evaluation = dg.AssetCheckEvaluation(
        asset_key=dg.AssetKey("costs"),
        check_name="c",
        passed=True,
        target_materialization_data=target,
    )
    assert evaluation.target_materialization_data == target
    assert (target.storage_id, target.run_id, target.timestamp) == (7, "a-run", 1.5)


def test_the_asset_layer_still_names_the_asset_of_each_op_input_and_output():
    # Dagster 1.11 renamed AssetLayer.asset_key_for_output/_input (1.10) to
    # get_asset_key_for_node_output/_input; the glue calls whichever this Dagster has.
    captured = {}

    class Spy(dg.ConfigurableIOManager):
        def handle_output(self, context, obj):
            if context.asset_key == dg.AssetKey("costs"):
                captured["step_context"] = context.step_context

        def load_input(self, context):
            return pd.DataFrame({"price": [1]})

    assert dg.materialize([prices, costs], resources={"io_manager": Spy()}).success

    step_context = captured["step_context"]
    layer, handle = step_context.job_def.asset_layer, step_context.node_handle
    assert internals.asset_key_for_node_output(layer, handle, "result") == dg.AssetKey("costs")
    assert internals.asset_key_for_node_input(layer, handle, "prices") == dg.AssetKey("prices")
    assert internals.asset_key_for_node_input(layer, handle, "no_such_input") is None
    assert internals.step_asset_outputs(step_context) == [("result", dg.AssetKey("costs"))]


def test_a_failing_step_still_hands_its_exception_to_the_step_context(tmp_path):
    captured = {}

    class Spy(dg.ConfigurableIOManager):
        def handle_output(self, context, obj):
            pass

        def load_input(self, context):
            captured["step_context"] = context.step_context
            return pd.DataFrame({"price": [1]})

    @dg.asset
    def broken(prices: pd.DataFrame) -> pd.DataFrame:
        raise ValueError("boom")

    dg.materialize(
        [prices, broken], resources={"io_manager": Spy()}, selection=[broken], raise_on_error=False
    )

    step_context = captured["step_context"]
    assert isinstance(internals.step_exception(step_context), ValueError)
    assert internals.run_and_step_of(step_context) == (step_context.dagster_run.run_id, "broken")


daily = dg.DailyPartitionsDefinition(start_date="2024-01-01")


@dg.asset(partitions_def=daily)
def planned_daily() -> None:
    raise ConnectionError("unreachable")


def test_the_event_log_still_names_the_step_and_partition_of_each_planned_materialisation():
    instance = dg.DagsterInstance.ephemeral()
    result = dg.materialize(
        [planned_daily], instance=instance, partition_key="2024-01-02", raise_on_error=False
    )

    planned = internals.planned_assets(instance, result.run_id, "planned_daily")
    assert planned == [(dg.AssetKey("planned_daily"), "2024-01-02")]


def test_a_step_materialisation_still_carries_its_code_version_and_upstream_data_versions():
    from ubunye_dagster.dagster_internals import CODE_VERSION_TAG, INPUT_DATA_VERSION_TAG_PREFIX

    @dg.asset
    def upstream() -> int:
        return 1

    @dg.asset(deps=[upstream])
    def downstream() -> int:
        return 2

    with dg.instance_for_test() as instance:
        assert dg.materialize([upstream, downstream], instance=instance).success
        [record] = instance.fetch_materializations(dg.AssetKey("downstream"), limit=1).records
        tags = record.asset_materialization.tags
    assert CODE_VERSION_TAG in tags
    assert tags[f"{INPUT_DATA_VERSION_TAG_PREFIX}/upstream"] not in ("", None)


def test_a_check_evaluation_logged_from_an_io_manager_is_kept_when_the_step_then_fails():
    check = dg.AssetCheckSpec("price_positive", asset="prices", blocking=True)

    @dg.multi_asset_check(specs=[check])
    def price_checks():
        yield dg.AssetCheckResult(asset_key="prices", check_name="price_positive", passed=True)

    class Refusing(dg.ConfigurableIOManager):
        def handle_output(self, context, obj):
            evaluations = [
                dg.AssetCheckEvaluation(
                    asset_key=context.asset_key, check_name=name, passed=False, blocking=True
                )
                for name in ("price_positive", "not_declared")
            ]
            assert internals.report_check_evaluations(context.step_context, evaluations) == 1
            raise ValueError("refused")

        def load_input(self, context):
            raise AssertionError("nothing is loaded")

    instance = dg.DagsterInstance.ephemeral()
    result = dg.materialize(
        [prices, price_checks],
        resources={"io_manager": Refusing()},
        instance=instance,
        raise_on_error=False,
    )

    records = instance.get_records_for_run(
        result.run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION
    ).records
    (logged,) = [r.event_log_entry.dagster_event.asset_check_evaluation_data for r in records]
    assert (logged.check_name, logged.passed) == ("price_positive", False)
    assert not result.success


def test_a_copy_of_a_definitions_with_other_assets_keeps_everything_else():
    sensor = dg.SensorDefinition(name="watch", evaluation_fn=lambda _context: None)
    job = dg.define_asset_job("prices_job", selection=["prices"])
    defs = dg.Definitions(
        assets=[prices],
        sensors=[sensor],
        jobs=[job],
        resources={"io_manager": dg.InMemoryIOManager()},
        executor=dg.in_process_executor,
        metadata={"team": "money"},
    )

    copied = internals.definitions_with_assets(defs, [prices, costs])

    assert list(copied.assets) == [prices, costs]
    assert list(copied.sensors) == [sensor] and list(copied.jobs) == [job]
    assert copied.resources == defs.resources and copied.executor is defs.executor
    assert copied.metadata == defs.metadata
    assert list(defs.assets) == [prices]


def test_a_component_can_still_build_the_definitions_of_another_defs_entry():
    """``defs_of_entry`` relies on the load context's cached build
    (tests/system/test_component.py runs it for real in a ``create-dagster`` project); Dagster
    1.10 lacks it and is refused."""
    names = [n for n in ("build_defs", "build_defs_at_path") if hasattr(dg.ComponentLoadContext, n)]
    if DAGSTER_MINOR < (1, 11):
        assert not names
        with pytest.raises(RuntimeError, match=r"needs Dagster 1\.11 or newer"):
            internals.defs_of_entry(dg.ComponentLoadContext.for_test(), Path("."))
    else:
        assert names, "ComponentLoadContext can no longer build another defs entry"


def test_a_run_still_lists_its_planned_and_evaluated_checks_and_an_io_managers_evaluation():
    """The in-step ``ubunye_reproducible`` verdict reads the check's spec from the step's job,
    the run's planned and evaluated checks from its events, and joins the step's event stream
    through the output context's events."""
    spec = dg.AssetCheckSpec("priced", asset="prices", metadata={"rule": "x"})
    check_key = spec.key

    @dg.multi_asset_check(specs=[spec], can_subset=True)
    def price_checks(context):
        run_id = context.op_execution_context.run_id
        assert internals.checks_evaluated_in_run(context.instance, run_id) == {check_key}
        yield from ()

    class Judging(dg.ConfigurableIOManager):
        def handle_output(self, context, obj):
            step_context = context.step_context
            assert internals.check_spec_in_job(step_context, check_key).metadata["rule"] == "x"
            other = dg.AssetCheckKey(context.asset_key, "not_declared")
            assert internals.check_spec_in_job(step_context, other) is None
            run_id, _ = internals.run_and_step_of(step_context)
            planned = internals.checks_planned_in_run(step_context.instance, run_id)
            assert planned == {check_key}
            evaluation = dg.AssetCheckEvaluation(
                asset_key=context.asset_key, check_name="priced", passed=True
            )
            assert internals.report_check_evaluations(step_context, [evaluation], context) == 1

        def load_input(self, context):
            raise AssertionError("nothing is loaded")

    result = dg.materialize(
        [prices, price_checks],
        resources={"io_manager": Judging()},
        instance=dg.DagsterInstance.ephemeral(),
    )

    assert result.success
    [evaluation] = result.get_asset_check_evaluations()
    assert evaluation.asset_check_key == check_key


def test_a_rebuild_turns_checks_into_assets_that_warn_unless_they_are_kept_as_checks():
    """Dagster's rebuild (``with_definition_metadata_update``, as when a component's
    ``defs.yaml`` metadata is added) returns its own checks as a plain ``AssetsDefinition``,
    which the repository converts back with a BetaWarning; ``kept_as_checks`` stays a check
    definition, converts nothing, warns about nothing, and still runs."""
    spec = dg.AssetCheckSpec("priced", asset="prices")

    @dg.multi_asset_check(specs=[spec])
    def price_checks():
        yield dg.AssetCheckResult(asset_key="prices", check_name="priced", passed=True)

    def rebuilt(checks: dg.AssetChecksDefinition) -> tuple[dg.Definitions, list[str]]:
        defs = dg.Definitions(assets=[prices], asset_checks=[checks])
        defs = defs.with_definition_metadata_update(lambda metadata: metadata)
        with warnings.catch_warnings(record=True) as shown:
            warnings.simplefilter("always")
            assert spec.key in defs.get_repository_def().asset_checks_defs_by_key
        return defs, [str(w.message) for w in shown if issubclass(w.category, dg.BetaWarning)]

    plain, warned = rebuilt(price_checks)
    assert type(plain.asset_checks[0]) is dg.AssetsDefinition
    assert any("execution_type" in message for message in warned)
    kept, warned = rebuilt(internals.kept_as_checks(price_checks))
    assert isinstance(kept.asset_checks[0], dg.AssetChecksDefinition) and warned == []
    result = dg.materialize([prices, *kept.asset_checks], instance=dg.DagsterInstance.ephemeral())
    [evaluation] = result.get_asset_check_evaluations()
    assert evaluation.asset_check_key == spec.key and evaluation.passed


def test_the_check_executions_still_name_the_materialisations_a_sensor_judged():
    key = dg.AssetKey("orders")
    check_key = dg.AssetCheckKey(key, "judged")

    @dg.asset(check_specs=[dg.AssetCheckSpec("judged", asset=key)])
    def orders():
        yield dg.Output(1)
        yield dg.AssetCheckResult(check_name="judged", passed=True)

    with dg.instance_for_test() as instance:
        for _ in range(3):
            assert dg.materialize([orders], instance=instance).success
        records = instance.fetch_materializations(key, limit=3, ascending=True).records
        for record in records[1:]:  # as a sensor reports its check results: outside any run
            instance.report_runless_asset_event(
                dg.AssetCheckEvaluation(
                    asset_key=key, check_name="judged", passed=True,
                    target_materialization_data=internals.AssetCheckEvaluationTargetMaterializationData(
                        storage_id=record.storage_id, run_id=record.run_id,
                        timestamp=record.timestamp,
                    ),
                )
            )  # fmt: skip
        first, second, third = (record.storage_id for record in records)
        since = records[0].timestamp - 1

        def judged(after: int, not_before: float = since) -> set[int]:
            return internals.storage_ids_judged_outside_runs(instance, check_key, after, not_before)

        assert judged(first) == {second, third}
        assert judged(second) == {third}
        assert judged(third) == set()
        # Executions older than the timestamp are never read: nothing before it is a verdict.
        assert judged(first, not_before=time.time() + 60) == set()


def test_the_execution_plan_still_names_the_unpartitioned_assets_a_process_executes():
    from ubunye_dagster.dagster_internals import unpartitioned_assets_to_execute

    seen = {}

    @dg.asset(partitions_def=dg.StaticPartitionsDefinition(["a"]))
    def by_day() -> None:
        return None

    @dg.asset
    def first(context) -> None:
        seen["keys"] = unpartitioned_assets_to_execute(context.get_step_execution_context())

    @dg.asset(deps=[first])
    def second() -> None:
        return None

    assert dg.materialize([first, second]).success
    assert seen["keys"] == [dg.AssetKey("first"), dg.AssetKey("second")]

    @dg.asset(partitions_def=dg.StaticPartitionsDefinition(["a"]))
    def partitioned_first(context) -> None:
        seen["keys"] = unpartitioned_assets_to_execute(context.get_step_execution_context())

    assert dg.materialize([partitioned_first, by_day], partition_key="a").success
    assert seen["keys"] == []


def test_an_automation_condition_still_reads_its_instance_and_its_upstreams_partitioning():
    daily = dg.DailyPartitionsDefinition(start_date="2024-01-01")
    seen: list[tuple[bool, list[tuple[dg.AssetKey, bool]]]] = []

    class Recorder(dg.AutomationCondition[dg.AssetKey]):
        def evaluate(self, context: dg.AutomationContext) -> dg.AutomationResult:
            instance = internals.automation_instance(context)
            seen.append(
                (isinstance(instance, dg.DagsterInstance), internals.automation_parents(context))
            )
            return dg.AutomationResult(context=context, true_subset=context.get_empty_subset())

    @dg.asset(partitions_def=daily)
    def by_day() -> int:
        return 1

    @dg.asset
    def plain() -> int:
        return 1

    @dg.asset(deps=[by_day, plain], automation_condition=Recorder())
    def reader() -> int:
        return 2

    with dg.instance_for_test() as instance:
        dg.evaluate_automation_conditions(
            defs=dg.Definitions(assets=[by_day, plain, reader]), instance=instance
        )
    assert seen == [(True, [(dg.AssetKey("by_day"), True), (dg.AssetKey("plain"), False)])]


def test_an_automation_sensor_still_says_whether_the_daemon_or_the_definitions_evaluate_it():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=dg.BetaWarning)
        in_code = dg.AutomationConditionSensorDefinition(
            "in_code", target=dg.AssetSelection.all(), use_user_code_server=True
        )
    in_daemon = dg.AutomationConditionSensorDefinition("in_daemon", target=dg.AssetSelection.all())

    @dg.sensor(target=dg.AssetSelection.all())
    def plain_sensor():
        return None

    answers = [internals.evaluated_in_user_code(s) for s in (in_code, in_daemon, plain_sensor)]
    assert answers == [True, False, None]


def test_a_listener_still_hears_each_step_start_of_its_run_as_the_event_log_stores_it():
    heard: list = []
    with dg.DagsterInstance.ephemeral() as instance:
        run_id = "0f6b3a52-8d4c-4d2a-9a65-7a1f7c1d2e3f"
        assert internals.listen_to_run_events(instance, run_id, heard.append)
        defs = dg.Definitions(assets=[prices, costs], jobs=[dg.define_asset_job("both")])
        defs.resolve_job_def("both").execute_in_process(instance=instance, run_id=run_id)
        stored = instance.get_records_for_run(run_id, of_type=dg.DagsterEventType.STEP_START)

    starts = {
        entry.step_key: entry.timestamp
        for entry in heard
        if entry.dagster_event_type == dg.DagsterEventType.STEP_START
    }
    assert starts == {
        r.event_log_entry.step_key: r.event_log_entry.timestamp for r in stored.records
    }
    assert set(starts) == {"prices", "costs"}


HELD: list = []


@dg.asset(name="held_upstream")
def held_upstream(context) -> dg.Output:
    return dg.Output(1, data_version=dg.DataVersion("v-upstream"))


@dg.asset(name="held_downstream", deps=[held_upstream])
def held_downstream(context) -> None:
    step_context = context.op_execution_context.get_step_execution_context()
    HELD.append(internals.held_input_materialisation(step_context, dg.AssetKey("held_upstream")))


def test_a_step_still_holds_the_run_and_data_version_of_its_inputs_latest_materialisation():
    HELD.clear()
    with dg.DagsterInstance.ephemeral() as instance:
        upstream = dg.materialize([held_upstream], instance=instance)
        dg.materialize(
            [held_upstream, held_downstream], selection=[held_downstream], instance=instance
        )
    [held] = HELD
    assert held == internals.HeldMaterialisation(upstream.run_id, "v-upstream")
