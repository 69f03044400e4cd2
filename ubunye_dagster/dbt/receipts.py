"""Receipts for the models, seeds and snapshots a dbt invocation builds, around its events.

``with_dbt_receipts`` hashes each materialised node's relation in the warehouse, saves the
asset's run record v2 (the layout and identity of every other asset's) and yields the event with
the receipt's metadata and the rows-v1 digest as its data version. On a server warehouse
(PostgreSQL; Spark through a Thrift server) a node is hashed on a thread pool as soon as dbt
reports it, and its event yielded when its receipt is saved, in dbt's order, while dbt goes on;
on DuckDB, whose file dbt holds until it exits, the events are drained first. dbt's own test
results pass through unchanged, and so does a failed build's error, raised after the receipts of
what was built.
"""

from __future__ import annotations

import contextlib
import dataclasses
import queue
import threading
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import dagster as dg

from ubunye_core.records.model import StepRecord
from ubunye_dagster import dagster_internals as internals
from ubunye_dagster.dbt.evidence import dbt_evidence
from ubunye_dagster.dbt.nodes import (
    DbtNode,
    compiled_code_by_node,
    compiled_code_in_target,
    node_of,
)
from ubunye_dagster.dbt.warehouse import Unreachable, Warehouse, hashed_step, warehouse_of
from ubunye_dagster.own_rows.asset_receipt import save_asset_output
from ubunye_dagster.receipts.masking import mask_error
from ubunye_dagster.receipts.records import RecordPlace
from ubunye_dagster.receipts.session import LoadedInput, open_session

#: What a step taken from a node's receipt of the same invocation says about itself.
SAME_RUN_NOTE = "the receipt its dbt node got in the same invocation (its rows not hashed again)"


def _unique_id(event: Any) -> str | None:
    entry = (getattr(event, "metadata", None) or {}).get("unique_id")
    value = getattr(entry, "value", entry)
    return str(value) if value else None


@dataclasses.dataclass
class _Receipts:
    """One invocation's receipts: the nodes it built, the warehouse (or why it cannot be
    reached), each output step."""

    invocation: Any
    context: dg.AssetExecutionContext
    place: RecordPlace
    warehouse: Warehouse | Unreachable
    #: The SQL each node ran: the run results', else the compiled file dbt wrote before it.
    compiled: dict[str, str] = dataclasses.field(default_factory=dict)
    #: The manifest dbt wrote for this invocation: the SQL and seed files it built from.
    run_manifest: dict[str, Any] = dataclasses.field(default_factory=dict)
    outputs: dict[str, StepRecord] = dataclasses.field(default_factory=dict)

    @property
    def adapter_type(self) -> str:
        return _adapter_type(self.invocation)

    def asset_key_of(self, unique_id: str) -> dg.AssetKey:
        """The Dagster asset key the invocation's translator gives the node."""
        translator = self.invocation.dagster_dbt_translator
        # dagster-dbt 0.26 (Dagster 1.10) keeps no ``project`` on the invocation.
        project = getattr(self.invocation, "project", None)
        return translator.get_asset_spec(self.invocation.manifest, unique_id, project).key

    def node(self, unique_id: str) -> DbtNode | None:
        code = self.compiled.get(unique_id)
        if code is None:  # not in the run results (none yet while dbt runs): its compiled file
            target = Path(self.invocation.target_path)
            code = compiled_code_in_target(self.run_manifest, target, unique_id)
            if code is not None:
                self.compiled[unique_id] = code  # read once, for its output and its children
        return node_of(self.run_manifest, unique_id, {unique_id: code} if code else None)

    def input_of(self, parent_id: str) -> LoadedInput:
        """A parent relation as an input: its receipt of this invocation, else hashed now."""
        key = self.asset_key_of(parent_id).to_user_string()
        built = self.outputs.get(parent_id)
        if built is not None:
            step = built.model_copy(update={"name": key, "direction": "input"})
            step.source_note = SAME_RUN_NOTE
        else:
            parent = self.node(parent_id)
            relation = parent.relation_name if parent is not None else None
            step = self._hashed(relation, key, "input")
        return LoadedInput(step=step, asset_key=key, input_name=key)

    def _hashed(self, relation: str | None, name: str, direction: str) -> StepRecord:
        return hashed_step(
            self.warehouse, relation, name=name, direction=direction, format=self.adapter_type
        )

    def output_of(self, event: Any) -> StepRecord | None:
        """The output step of the node ``event`` materialises, hashed in the warehouse (None for
        any other event)."""
        unique_id = _unique_id(event)
        if not isinstance(event, (dg.Output, dg.AssetMaterialization)) or unique_id is None:
            return None
        node = self.node(unique_id)
        if node is None:
            return None
        return self._hashed(
            node.relation_name, self.asset_key_of(unique_id).to_user_string(), "output"
        )

    def receipted(self, event: Any, output: StepRecord | None) -> Any:
        """``event`` with its node's receipt (``output``) saved and attached (unchanged for any
        other event)."""
        unique_id = _unique_id(event)
        node = self.node(unique_id) if unique_id is not None else None
        if output is None or node is None:
            return event
        key = self.asset_key_of(node.unique_id)
        self.outputs[node.unique_id] = output
        inputs = tuple(self.input_of(parent) for parent in node.parents)
        evidence = dataclasses.replace(
            dbt_evidence(self.adapter_type, node.code_hash), inputs=inputs
        )
        session = open_session(internals.step_context_of(self.context))
        saved = save_asset_output(
            session, self.place, self.context, key, output,
            backend=f"dbt-{self.adapter_type}", evidence=evidence,
        )  # fmt: skip
        metadata = {**event.metadata, **saved.metadata}
        if isinstance(event, dg.AssetMaterialization):
            return event.with_metadata(metadata)
        # A MaterializeResult carries a data version through public, non-beta API (an Output's
        # ``data_version`` is beta); Dagster maps it to the asset's output by its key.
        return dg.MaterializeResult(
            asset_key=key,
            metadata=metadata,
            data_version=saved.data_version or event.data_version,
            tags=event.tags,
        )

    def yielded(self, event: Any, output: StepRecord | None) -> Any:
        """``event`` receipted; unchanged, with a warning, when its receipt cannot be saved."""
        try:
            return self.receipted(event, output)
        except Exception as error:
            self.context.log.warning(
                f"ubunye: no receipt for dbt node {_unique_id(event)} ({mask_error(error)}); "
                "the dbt build goes on without it"
            )
            return event


def _adapter_type(invocation: Any) -> str:
    return str((invocation.manifest.get("metadata") or {}).get("adapter_type") or "")


def _compiled_code(invocation: Any) -> dict[str, str]:
    """The SQL of each node this invocation ran (empty when its run results are unreadable)."""
    try:
        return compiled_code_by_node(invocation.get_artifact("run_results.json"))
    except (OSError, ValueError):
        return {}


def _run_manifest(invocation: Any) -> dict[str, Any]:
    """The manifest this invocation wrote, else the one the assets were defined from."""
    try:
        return invocation.get_artifact("manifest.json")
    except (OSError, ValueError):
        return dict(invocation.manifest)


def _drained(receipts: _Receipts) -> Iterator[Any]:
    """Every event after dbt has exited, each with its receipt (DuckDB: dbt holds the file)."""
    events, failure = _all_events(iter(receipts.invocation.stream()))
    receipts.compiled = _compiled_code(receipts.invocation)
    receipts.run_manifest = _run_manifest(receipts.invocation)
    with contextlib.ExitStack() as stack:
        if not isinstance(receipts.warehouse, Unreachable):
            try:
                stack.enter_context(receipts.warehouse.open())
            except Exception as error:
                receipts.warehouse = Unreachable(mask_error(error))
        for event in events:
            yield receipts.yielded(event, _output_or_none(receipts, event))
    if failure is not None:
        raise failure


def _all_events(events: Iterator[Any]) -> tuple[list[Any], BaseException | None]:
    """Every event, and the error the stream ended with (None when it ended well)."""
    taken: list[Any] = []
    try:
        for event in events:
            taken.append(event)
    except Exception as error:
        return taken, error
    return taken, None


def _output_or_none(receipts: _Receipts, event: Any) -> StepRecord | None:
    try:
        return receipts.output_of(event)
    except Exception as error:
        receipts.context.log.warning(
            f"ubunye: dbt node {_unique_id(event)} not hashed ({mask_error(error)})"
        )
        return None


@dataclasses.dataclass(frozen=True)
class _End:
    """The end of dbt's events, and the error the stream ended with (None when it ended well)."""

    failure: BaseException | None


def _read_events(receipts: _Receipts, pool: ThreadPoolExecutor, ready: queue.Queue) -> None:
    """dbt's events as they come, each with the future of its node's hash, into ``ready``;
    then the end. Runs on its own thread, so dbt's output is read while receipts are made."""
    try:
        for event in receipts.invocation.stream():
            if not receipts.run_manifest:
                receipts.run_manifest = _run_manifest(receipts.invocation)
            ready.put((event, pool.submit(_output_or_none, receipts, event)))
    except Exception as error:
        ready.put(_End(error))
        return
    ready.put(_End(None))


def _streamed(receipts: _Receipts) -> Iterator[Any]:
    """Each event as soon as its node's receipt is saved, in dbt's order, while dbt runs."""
    ready: queue.Queue[tuple[Any, Future] | _End] = queue.Queue()
    workers = getattr(receipts.invocation, "postprocessing_threadpool_num_threads", 4)
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ubunye_dbt") as pool:
        reader = threading.Thread(
            target=_read_events, args=(receipts, pool, ready), name="ubunye_dbt_events", daemon=True
        )
        reader.start()
        while not isinstance(item := ready.get(), _End):
            event, output = item
            yield receipts.yielded(event, output.result())
    if item.failure is not None:
        raise item.failure


def with_dbt_receipts(
    invocation: Any, *, context: dg.AssetExecutionContext, ubunye: RecordPlace
) -> Iterator[Any]:
    """The events of the dbt ``invocation`` (``dbt.cli([...], context=context)``), each
    materialisation with its receipt: hashed in the warehouse, saved as the asset's run record
    under ``ubunye``'s lineage folder, its digest the data version. A receipt never fails the
    build; dbt's own failure is raised after the receipts of what was built."""
    warehouse = warehouse_of(invocation, _adapter_type(invocation))
    receipts = _Receipts(invocation, context, ubunye, warehouse)
    if isinstance(warehouse, Unreachable) or not warehouse.reads_while_dbt_runs:
        yield from _drained(receipts)
    else:
        yield from _streamed(receipts)
