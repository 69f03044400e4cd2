"""rows-v1 computed where the rows are: inside the database, in one query.

``fingerprint_duckdb`` and ``fingerprint_postgres`` give the same :class:`Fingerprint` (schema
hash, data hash, row count, sketch) as hashing the table's Arrow export with the kernel, byte
for byte, without moving the rows; columns the database cannot write exactly are streamed to
the kernel as Arrow batches, never hashed another way. ``fingerprint_streamed`` is the way
for any other database: the whole relation as Arrow batches to the kernel.
"""

from ubunye_rows.sql.duckdb import fingerprint_duckdb
from ubunye_rows.sql.postgres import fingerprint_postgres
from ubunye_rows.sql.stream import fingerprint_streamed

__all__ = [
    "fingerprint_duckdb",
    "fingerprint_postgres",
    "fingerprint_streamed",
]
