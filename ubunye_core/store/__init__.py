"""The lineage store: one JSON record file per run (the truth), the SQLite index derived from
them, and the listings both give.

``LineageStore`` and ``ReindexReport`` are imported when first named, so a caller that needs only
the names or the errors (the command line's help) does not load the record model or fsspec."""

from typing import TYPE_CHECKING, Any

from ubunye_core.store.errors import (
    AmbiguousRunIdError,
    LineageStoreError,
    RecordNotFoundError,
    UnreadableRecordError,
    UnreadableRecordWarning,
)
from ubunye_core.store.names import (
    LINEAGE_SUBDIR,
    check_segment,
    decode_name,
    encode_name,
    key_for_task_name,
    split_task_path,
    task_name_for_key,
)

if TYPE_CHECKING:
    from ubunye_core.store.lineage_store import LineageStore
    from ubunye_core.store.syncing import ReindexReport

_LAZY = {
    "LineageStore": "ubunye_core.store.lineage_store",
    "ReindexReport": "ubunye_core.store.syncing",
}


def __getattr__(name: str) -> Any:
    """``LineageStore`` and ``ReindexReport``, imported on first use."""
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "LINEAGE_SUBDIR",
    "AmbiguousRunIdError",
    "LineageStore",
    "LineageStoreError",
    "RecordNotFoundError",
    "ReindexReport",
    "UnreadableRecordError",
    "UnreadableRecordWarning",
    "check_segment",
    "decode_name",
    "encode_name",
    "key_for_task_name",
    "split_task_path",
    "task_name_for_key",
]
