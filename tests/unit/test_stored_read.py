"""A stored Parquet file read back: its footer parsed once, its bytes digested in the reading
thread or beside the decode, the table as its writer's table was; and the helper threads that
work runs on."""

from __future__ import annotations

import os
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ubunye_core.materialisations import beside, stored
from ubunye_core.materialisations.byte_digest import bytes_digest
from ubunye_core.materialisations.stored import read_stored

# Runs no Dagster: CI runs it on the newest Dagster only (tests/unit/test_code_shape.py checks).
pytestmark = pytest.mark.dagster_free

NOTES = {"ubunye.writer": "pyarrow", "ubunye.data_hash": "sha256:" + "ab" * 32}


def write_with_notes(path, rows: int) -> pa.Table:
    """A table with schema metadata of its own, written with the writer's notes added to the
    footer once its rows are written (as the IO manager does)."""
    table = pa.table({"id": pa.array(range(rows), pa.int64())}).replace_schema_metadata(
        {"owner": "shop"}
    )
    writer = pq.ParquetWriter(str(path), table.schema)
    writer.write_table(table)
    writer.add_key_value_metadata(NOTES)
    writer.close()
    return table


def test_a_read_file_gives_its_notes_and_the_writers_table_without_them(tmp_path):
    table = write_with_notes(tmp_path / "one.parquet", 10)

    read = read_stored(str(tmp_path / "one.parquet"))

    assert read.notes == NOTES
    assert read.table.equals(table)
    assert read.table.schema.metadata == pq.read_table(tmp_path / "one.parquet").schema.metadata
    assert read.table.schema.metadata == {b"owner": b"shop"}


@pytest.mark.parametrize("rows", [10, 400_000], ids=["digested-in-the-reader", "digested-beside"])
def test_a_read_files_byte_digest_is_the_digest_of_its_bytes(tmp_path, rows):
    write_with_notes(tmp_path / "one.parquet", rows)
    data = (tmp_path / "one.parquet").read_bytes()
    assert (len(data) > stored.DIGEST_BESIDE_BYTES) == (rows > 10)

    read = read_stored(str(tmp_path / "one.parquet"), digest_with="blake3")

    assert read.bytes_hash == bytes_digest(data, "blake3")
    assert read.table.num_rows == rows


def test_nothing_stored_at_a_local_path_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError, match="nothing is stored at"):
        read_stored(str(tmp_path / "missing.parquet"), digest_with="blake3")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX only")
def test_a_forked_child_runs_work_beside_it_on_threads_of_its_own():
    assert beside.run_beside(sum, [1, 2]).result(timeout=30) == 3  # the parent's threads exist
    child = os.fork()
    if child == 0:  # the child: a hang here fails the test by its timeout below
        try:
            ok = beside.run_beside(sum, [3, 4]).result(timeout=30) == 7
        except BaseException:
            ok = False
        sys.stdout.flush()
        os._exit(0 if ok else 1)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
