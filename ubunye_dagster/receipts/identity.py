"""Where a Dagster materialisation's run record lives: asset key, group and partition -> record id.

The mapping, one record per asset, per partition, per Dagster run:

- usecase = ``UbunyeResource.usecase`` (default ``"dagster"``)
- package = the asset's group name (``"default"`` when it has none)
- task    = ``task_name_for_key(asset_key.path)``: each key part name-encoded, joined with ``.``
- run_id  = the Dagster run id, or ``<run id>.<encode_name(partition key)>`` for a partition

so the record of ``AssetKey(["raw", "orders"])`` in group ``sales``, partition ``2024-01-31`` of
run ``8c1d...`` is
``<usecase_dir>/.ubunye/lineage/dagster/sales/raw.orders/8c1d...<.>2024-01-31.json``,
where ``<.>`` is the one separating dot; a ``.`` inside a key part or partition key is written
``%2E`` and a multi-partition key ``2024-01-31|north`` is ``2024-01-31%7Cnorth``. Every part is
reversible: :func:`asset_for_record` gives the key, group, run id and partition key back. A Dagster
run id never contains ``.``, so the first ``.`` of a record run id separates the partition.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ubunye_core.store import decode_name, encode_name, key_for_task_name, task_name_for_key

#: The usecase records go under when the resource names none.
DEFAULT_USECASE = "dagster"
#: The package of an asset without a group (Dagster's own name for that group).
DEFAULT_PACKAGE = "default"

_SAFE_NAME = re.compile(r"^[A-Za-z0-9_-]+$")


@dataclass(frozen=True)
class RecordIdentity:
    """The four names that place one run record in the lineage store."""

    usecase: str
    package: str
    task: str
    run_id: str

    @property
    def task_path(self) -> str:
        """``usecase/package/task``, as ``RunRecord.task_path`` and the store spell it."""
        return f"{self.usecase}/{self.package}/{self.task}"


@dataclass(frozen=True)
class AssetRun:
    """What a record identity says about Dagster: the asset, its group, the run and partition."""

    asset_key: tuple[str, ...]
    group_name: str
    dagster_run_id: str
    partition_key: str | None


def check_usecase(usecase: str) -> str:
    """``usecase`` unchanged when it is a safe folder name; ValueError saying why otherwise."""
    if not isinstance(usecase, str) or not _SAFE_NAME.match(usecase):
        raise ValueError(
            f"usecase must be a non-empty name of letters, digits, '_' and '-' "
            f"(it is a folder name and a CLI argument), not {usecase!r}"
        )
    return usecase


def package_for_group(group_name: str | None) -> str:
    """The package of an asset group: the group name (``"default"`` for none), name-encoded."""
    return encode_name(group_name or DEFAULT_PACKAGE)


def record_run_id(dagster_run_id: str, partition_key: str | None = None) -> str:
    """The record's run id: the Dagster run id, with ``.<encoded partition>`` for a partition."""
    if not dagster_run_id or "." in dagster_run_id:
        raise ValueError(f"a Dagster run id is non-empty text without '.', not {dagster_run_id!r}")
    if partition_key is None:
        return dagster_run_id
    return f"{dagster_run_id}.{encode_name(str(partition_key))}"


def split_record_run_id(run_id: str) -> tuple[str, str | None]:
    """``(Dagster run id, partition key or None)`` from a record run id (reverses record_run_id)."""
    dagster_run_id, dot, encoded = run_id.partition(".")
    return dagster_run_id, (decode_name(encoded) if dot else None)


def identity_for_asset(
    *,
    usecase: str,
    asset_key: Sequence[str],
    group_name: str | None,
    dagster_run_id: str,
    partition_key: str | None = None,
) -> RecordIdentity:
    """The record identity of one asset (partition) materialised by one Dagster run."""
    return RecordIdentity(
        usecase=check_usecase(usecase),
        package=package_for_group(group_name),
        task=task_name_for_key([str(part) for part in asset_key]),
        run_id=record_run_id(dagster_run_id, partition_key),
    )


def asset_for_record(package: str, task: str, run_id: str) -> AssetRun:
    """The asset key, group, Dagster run id and partition a record's names stand for."""
    dagster_run_id, partition_key = split_record_run_id(run_id)
    return AssetRun(
        asset_key=tuple(key_for_task_name(task)),
        group_name=decode_name(package),
        dagster_run_id=dagster_run_id,
        partition_key=partition_key,
    )
