"""The lineage store: one JSON file per run, on a local disk or any fsspec filesystem.

One concern a module: ``layout`` (the root, paths, folder listings), ``names`` (safe, reversible
path segments), ``reading`` and ``writing`` (record files, written atomically), ``syncing`` (the
index kept in step with the files) and ``queries`` (listings and searches, newest first).
"""

from __future__ import annotations

from ubunye_core.store.queries import RunQueries
from ubunye_core.store.writing import RecordWriter


class LineageStore(RunQueries, RecordWriter):
    """Run records under one root folder (local path, ``UPath`` or fsspec URL like ``s3://b/x``).

    Listings and searches go through the index (``ubunye_core.store.index``) unless
    ``use_index`` is False, which reads the folders instead; the answers are the same.
    ``progress`` gets ``(done, total)`` while the index reads many record files.
    """
