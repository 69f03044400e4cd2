"""Receipts for the models, seeds and snapshots a dbt invocation builds, around its events.

``with_dbt_receipts`` drains the invocation's events (dbt-duckdb holds the database file until
dbt exits), then, for each materialisation, hashes the node's relation in the warehouse, saves
the asset's run record v2 (the layout and identity of every other asset's) and yields the event
with the receipt's metadata and the rows-v1 digest as its data version. dbt's own test results
pass through unchanged, and so does a failed build's error, raised after the receipts of what
was built.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from typing import Any

import dagster as dg

from ubunye_core.records.model import StepRecord
from ubunye_dagster import dagster_internals as internals
from ubunye_dagster.asset_receipt import save_asset_output
from ubunye_dagster.dbt.evidence import dbt_evidence
from ubunye_dagster.dbt.nodes import DbtNode, compiled_code_by_node, node_of
from ubunye_dagster.dbt.warehouse import (
    HASHED_IN,
    Unreachable,
    hashed_step,
    warehouse_connection,
)
from ubunye_dagster.masking import mask_error
from ubunye_dagster.records import RecordPlace
from ubunye_dagster.session import LoadedInput, open_session

#: What a step taken from a node's receipt of the same invocation says about itself.
SAME_RUN_NOTE = "the receipt its dbt node got in the same invocation (its rows not hashed again)"


def _drained(events: Iterator[Any]) -> tuple[list[Any], BaseException | None]:
    """Every event, and the error the stream ended with (None when it ended well)."""
    taken: list[Any] = []
    try:
        for event in events:
            taken.append(event)
    except Exception as error:
        return taken, error
    return taken, None


def _unique_id(event: Any) -> str | None:
    entry = (getattr(event, "metadata", None) or {}).get("unique_id")
    value = getattr(entry, "value", entry)
    return str(value) if value else None


@dataclasses.dataclass
class _Receipts:
    """One invocation's receipts: the nodes it built, a warehouse connection (or why there is
    none), each output step."""

    invocation: Any
    context: dg.AssetExecutionContext
    place: RecordPlace
    cursor: Any
    compiled: dict[str, str]
    #: The manifest dbt wrote for this invocation: the SQL and seed files it built from.
    run_manifest: dict[str, Any]
    outputs: dict[str, StepRecord] = dataclasses.field(default_factory=dict)

    @property
    def adapter_type(self) -> str:
        return str((self.invocation.manifest.get("metadata") or {}).get("adapter_type") or "")

    def asset_key_of(self, unique_id: str) -> dg.AssetKey:
        """The Dagster asset key the invocation's translator gives the node."""
        translator = self.invocation.dagster_dbt_translator
        # dagster-dbt 0.26 (Dagster 1.10) keeps no ``project`` on the invocation.
        project = getattr(self.invocation, "project", None)
        return translator.get_asset_spec(self.invocation.manifest, unique_id, project).key

    def node(self, unique_id: str) -> DbtNode | None:
        return node_of(self.run_manifest, unique_id, self.compiled)

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
            self.cursor, relation, name=name, direction=direction, format=self.adapter_type
        )

    def receipted(self, event: Any) -> Any:
        """``event`` with its node's receipt saved and attached (unchanged for any other)."""
        unique_id = _unique_id(event)
        if not isinstance(event, (dg.Output, dg.AssetMaterialization)) or unique_id is None:
            return event
        node = self.node(unique_id)
        if node is None:
            return event
        key = self.asset_key_of(unique_id)
        output = self._hashed(node.relation_name, key.to_user_string(), "output")
        self.outputs[unique_id] = output
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


def _warn(context: dg.AssetExecutionContext, event: Any, error: Exception) -> None:
    context.log.warning(
        f"ubunye: no receipt for dbt node {_unique_id(event)} ({mask_error(error)}); "
        "the dbt build goes on without it"
    )


def _open_cursor(stack: contextlib.ExitStack, invocation: Any, adapter_type: str) -> Any:
    """The warehouse cursor, or the text of why there is none (every hash error then)."""
    if adapter_type not in HASHED_IN:
        return Unreachable(
            f"NotImplementedError: rows are hashed in the warehouse on {', '.join(HASHED_IN)} "
            f"only, and this dbt project's adapter is {adapter_type or 'not named'}"
        )
    if invocation.adapter is None:
        return Unreachable("ValueError: the dbt invocation has no adapter to reach the warehouse")
    try:
        return stack.enter_context(warehouse_connection(invocation.adapter, invocation.project_dir))
    except Exception as error:
        return Unreachable(mask_error(error))


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


def with_dbt_receipts(
    invocation: Any, *, context: dg.AssetExecutionContext, ubunye: RecordPlace
) -> Iterator[Any]:
    """The events of the dbt ``invocation`` (``dbt.cli([...], context=context)``), each
    materialisation with its receipt: hashed in the warehouse, saved as the asset's run record
    under ``ubunye``'s lineage folder, its digest the data version. A receipt never fails the
    build; dbt's own failure is raised after the receipts of what was built."""
    events, failure = _drained(iter(invocation.stream()))
    receipts = _Receipts(
        invocation, context, ubunye, None, _compiled_code(invocation), _run_manifest(invocation)
    )
    with contextlib.ExitStack() as stack:
        receipts.cursor = _open_cursor(stack, invocation, receipts.adapter_type)
        for event in events:
            try:
                yield receipts.receipted(event)
            except Exception as error:
                _warn(context, event, error)
                yield event
    if failure is not None:
        raise failure
