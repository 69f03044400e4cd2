"""The lineage store: one JSON record file per run (the truth), the SQLite index derived from
them, and the listings both give."""

from ubunye_core.store.lineage_store import (
    LINEAGE_SUBDIR,
    AmbiguousRunIdError,
    LineageStore,
    LineageStoreError,
    RecordNotFoundError,
    ReindexReport,
    UnreadableRecordError,
    UnreadableRecordWarning,
    check_segment,
    decode_name,
    encode_name,
    key_for_task_name,
    split_task_path,
    task_name_for_key,
)

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
