"""Sample records and evidence shared by the tests (not a test module)."""

from __future__ import annotations

from typing import Any

from ubunye_core.records.model import RunRecord


def sample_environment(**packages: str) -> dict[str, Any]:
    """An ``environment`` as a record carries it: a Linux CPython 3.11 with ``packages``."""
    return {
        "python": "3.11.7",
        "implementation": "CPython",
        "platform": "linux",
        "machine": "x86_64",
        "packages": dict(packages),
    }


def sample_record(run_id: str, task_path: str = "shop/sales/daily", **fields: Any) -> RunRecord:
    """A run record of ``task_path`` (``usecase/package/task``), started at the first second of
    2026 and a success unless ``fields`` say otherwise."""
    usecase, package, task_name = task_path.split("/")
    fields.setdefault("started_at", "2026-01-01T00:00:00+00:00")
    fields.setdefault("status", "success")
    return RunRecord(run_id=run_id, usecase=usecase, package=package, task_name=task_name, **fields)
