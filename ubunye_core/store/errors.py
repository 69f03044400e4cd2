"""The lineage store's errors, and the warning a listing gives for a file it skipped."""

from __future__ import annotations


class LineageStoreError(Exception):
    """A lineage store operation could not be done; the message says why."""


class RecordNotFoundError(LineageStoreError, FileNotFoundError):
    """No record fits the task and run id asked for."""


class AmbiguousRunIdError(LineageStoreError, LookupError):
    """A run id prefix fits more than one record; the message lists them."""


class UnreadableRecordError(LineageStoreError, ValueError):
    """A record file is not a readable run record (corrupt, truncated, not JSON)."""


class UnreadableRecordWarning(UserWarning):
    """A listing skipped a record file it could not read."""
