"""The lineage store: one JSON record file per run (the truth), the SQLite index derived from
them, and the listings both give."""

from ubunye_core.store.errors import (
    AmbiguousRunIdError,
    LineageStoreError,
    RecordNotFoundError,
    UnreadableRecordError,
    UnreadableRecordWarning,
)
from ubunye_core.store.layout import LINEAGE_SUBDIR
from ubunye_core.store.lineage_store import LineageStore
from ubunye_core.store.names import (
    check_segment,
    decode_name,
    encode_name,
    key_for_task_name,
    split_task_path,
    task_name_for_key,
)
from ubunye_core.store.syncing import ReindexReport

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
