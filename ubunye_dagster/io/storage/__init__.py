"""Where and how rows are kept, as strategies the receipt pipeline calls (see ``base``)."""

from ubunye_dagster.io.storage.base import Part, ReadRequest, Storage, StoredRead

__all__ = ["Part", "ReadRequest", "Storage", "StoredRead"]
