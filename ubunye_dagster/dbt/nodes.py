"""What dbt built, read from its artifacts: each node's relation, compiled SQL and parents.

The manifest says what a node is and what it reads (``parent_map``); the run results of the
invocation say what it ran (``compiled_code``), and so does the compiled file dbt writes before it
runs a node, while the invocation is still going. A node's code hash is what can change its rows:
the compiled SQL of a model or snapshot, the file dbt checksums for a seed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ubunye_rows.hashing.digest import prefixed_sha256

#: Node kinds that are relations in the warehouse (a test or a macro is not).
RELATION_TYPES = ("model", "seed", "snapshot", "source")


@dataclass(frozen=True)
class DbtNode:
    """One dbt node as a receipt needs it."""

    unique_id: str
    resource_type: str
    #: The relation as dbt renders it (``"db"."main"."orders"``); None for an ephemeral model.
    relation_name: str | None
    #: The SQL dbt ran for it in this invocation (None for a seed or a source).
    compiled_code: str | None = None
    #: dbt's ``sha256`` of a seed's file (None for other nodes).
    file_checksum: str | None = None
    #: The unique ids of the relations it reads, in the manifest's order.
    parents: tuple[str, ...] = field(default_factory=tuple)

    @property
    def code_hash(self) -> str | None:
        """``sha256:`` of the compiled SQL (model, snapshot), or of the seed file; else None."""
        if self.compiled_code is not None:
            return prefixed_sha256(self.compiled_code)
        if self.file_checksum is not None:
            return f"sha256:{self.file_checksum}"
        return None


def _props(manifest: Mapping[str, Any], unique_id: str) -> Mapping[str, Any] | None:
    return (manifest.get("nodes") or {}).get(unique_id) or (manifest.get("sources") or {}).get(
        unique_id
    )


def _seed_checksum(props: Mapping[str, Any]) -> str | None:
    checksum = props.get("checksum") or {}
    if props.get("resource_type") == "seed" and checksum.get("name") == "sha256":
        return str(checksum.get("checksum"))
    return None


def node_of(
    manifest: Mapping[str, Any], unique_id: str, compiled: Mapping[str, str] | None = None
) -> DbtNode | None:
    """The node ``unique_id`` of ``manifest`` (None when it is not a relation dbt knows), with
    the SQL ``compiled`` gives it (run results), else the manifest's own compiled code."""
    props = _props(manifest, unique_id)
    if props is None or props.get("resource_type") not in RELATION_TYPES:
        return None
    parents = tuple(
        parent
        for parent in (manifest.get("parent_map") or {}).get(unique_id, [])
        if parent.split(".", 1)[0] in RELATION_TYPES
    )
    code = (compiled or {}).get(unique_id) or props.get("compiled_code")
    return DbtNode(
        unique_id=unique_id,
        resource_type=str(props["resource_type"]),
        relation_name=props.get("relation_name"),
        compiled_code=code if props.get("resource_type") in ("model", "snapshot") else None,
        file_checksum=_seed_checksum(props),
        parents=parents,
    )


def compiled_code_by_node(run_results: Mapping[str, Any]) -> dict[str, str]:
    """``{unique id: compiled SQL}`` of every node the run results say was compiled."""
    return {
        str(result["unique_id"]): str(result["compiled_code"])
        for result in run_results.get("results") or []
        if result.get("unique_id") and result.get("compiled_code")
    }


def compiled_path(props: Mapping[str, Any]) -> Path:
    """Where dbt writes a node's compiled SQL under its target folder, as dbt names it:
    ``compiled/<package>/<file>``, or the node's own name inside a file holding several."""
    original = str(props.get("original_file_path") or "")
    path = str(props.get("path") or "")
    if Path(path).name != Path(original).name:
        original = str(Path(original) / path)
    return Path("compiled") / str(props.get("package_name") or "") / original


def compiled_code_in_target(
    manifest: Mapping[str, Any], target_dir: Path, unique_id: str
) -> str | None:
    """The compiled SQL of model or snapshot ``unique_id`` as dbt wrote it under ``target_dir``
    before running it (None for another node, or when the file is not there)."""
    props = _props(manifest, unique_id)
    if props is None or props.get("resource_type") not in ("model", "snapshot"):
        return None
    try:
        return (target_dir / compiled_path(props)).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
