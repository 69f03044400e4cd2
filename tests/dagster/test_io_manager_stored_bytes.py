"""Reads proven by the stored bytes: each write records a digest of the bytes it stored; a read
whose bytes still hash to it takes the recorded rows-v1 digest, anything else hashes the rows."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import blake3
import dagster as dg
import pandas as pd
import pyarrow.parquet as pq
import pytest

from ubunye_core.records.model import RunRecord
from ubunye_core.store import LineageStore
from ubunye_dagster import UbunyeIOManager, UbunyeResource
from ubunye_dagster.io.handlers import arrow_files

#: The rows ``ledger`` stores.
LEDGER = pd.DataFrame({"entry": [0, 1, 2], "amount": [0.5, 1.5, 2.5]})


@dg.asset
def ledger() -> pd.DataFrame:
    return LEDGER.copy()


@dg.asset
def balance(ledger: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame({"total": [ledger["amount"].sum()]})


def run(root: Path, instance, selection, verify_reads: str = "fail", **kwargs):
    """Materialise ``selection`` with the IO manager storing under ``root``."""
    manager = UbunyeIOManager(
        base_path=str(root / "data"),
        ubunye=UbunyeResource(usecase_dir=str(root), verify_reads=verify_reads),
    )
    return dg.materialize(
        [ledger, balance],
        selection=selection,
        resources={"io_manager": manager},
        instance=instance,
        **kwargs,
    )


def latest(root: Path, asset: str) -> RunRecord:
    return LineageStore.for_usecase_dir(root).list_runs(f"dagster/default/{asset}")[0]


def written(root: Path, instance) -> dict:
    """Materialise ``ledger``; its metadata values."""
    result = run(root, instance, [ledger])
    [event] = result.asset_materializations_for_node("ledger")
    return {key: getattr(value, "value", value) for key, value in event.metadata.items()}


@pytest.fixture
def row_hashes(monkeypatch) -> list:
    """Each time rows of a stored table are hashed (the real hash, counted)."""
    calls: list = []
    real = arrow_files.fingerprint_stored

    def counted(*args, **kwargs):
        calls.append(args[1])
        return real(*args, **kwargs)

    monkeypatch.setattr(arrow_files, "fingerprint_stored", counted)
    return calls


def test_the_byte_digest_is_in_the_record_and_the_metadata(tmp_path):
    with dg.DagsterInstance.ephemeral() as instance:
        metadata = written(tmp_path, instance)

    target = tmp_path / "data" / "ledger.parquet"
    expected = "blake3:" + blake3.blake3(target.read_bytes()).hexdigest()
    assert metadata["ubunye/bytes_hash"] == expected
    [output] = latest(tmp_path, "ledger").outputs
    assert output.stored_bytes_hash() == expected
    document = json.loads((Path(metadata["ubunye/record_path"])).read_text())
    assert document["outputs"][0]["bytes_hash"] == expected


def test_a_record_with_a_byte_digest_is_read_by_the_reference_cli(tmp_path):
    pytest.importorskip("ubunye.cli.main")
    with dg.DagsterInstance.ephemeral() as instance:
        metadata = written(tmp_path, instance)
        run(tmp_path, instance, [balance])
    code = "import sys; from ubunye.cli.main import main; sys.argv[0] = 'ubunye'; sys.exit(main())"
    done = subprocess.run(
        [sys.executable, "-c", code, "lineage", "trace", "-d", str(tmp_path), "-u", "dagster",
         "-p", "default", "-t", "balance"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip

    assert done.returncode == 0, done.stdout + done.stderr
    assert metadata["ubunye/data_hash"] in done.stdout
    assert "hash from: stored-bytes" in done.stdout


def read_back(root: Path, change=None, verify_reads: str = "fail"):
    """Materialise ``ledger``, let ``change(root, instance, metadata)`` act on what was stored,
    then materialise ``balance``: ledger's metadata, balance's result and its recorded input."""
    with dg.DagsterInstance.ephemeral() as instance:
        metadata = written(root, instance)
        if change is not None:
            change(root, instance, metadata)
        result = run(root, instance, [balance], verify_reads, raise_on_error=False)
    [read] = latest(root, "balance").inputs
    return metadata, result, read


def recompress(root: Path, instance, metadata) -> None:
    """The same rows, notes and schema, stored again with another codec (other bytes)."""
    target = root / "data" / "ledger.parquet"
    table = pq.read_table(target)
    footer = pq.read_metadata(target).metadata
    notes = {key: value for key, value in footer.items() if key != b"ARROW:schema"}
    pq.write_table(table.replace_schema_metadata(notes), target, compression="gzip")


def tamper(root: Path, instance, metadata) -> None:
    """Other rows in place of the stored ones: the last amount changed."""
    LEDGER.assign(amount=[0.5, 1.5, 99.0]).to_parquet(root / "data" / "ledger.parquet")


def forget_the_byte_digest(root: Path, instance, metadata) -> None:
    """A later materialisation as an earlier version recorded it: no ubunye/bytes_hash."""
    older = {key: value for key, value in metadata.items() if key != "ubunye/bytes_hash"}
    instance.report_runless_asset_event(dg.AssetMaterialization(asset_key="ledger", metadata=older))


VERIFIED_BY_ROWS = "verified: the rows match the digest recorded by Dagster"


def test_a_read_whose_stored_bytes_match_takes_the_recorded_digest_without_hashing_rows(
    tmp_path, row_hashes
):
    metadata, result, read = read_back(tmp_path)

    assert result.success
    assert read.hash_basis == "stored-bytes"
    assert (read.data_hash, read.schema_hash, read.row_count, read.hash_method) == (
        metadata["ubunye/data_hash"],
        metadata["ubunye/schema_hash"],
        3,
        "rows-v1",
    )
    assert read.stored_bytes_hash() == metadata["ubunye/bytes_hash"]
    assert read.source_note.startswith("verified: its stored bytes hash to the byte digest")
    assert row_hashes == ["pandas", "pandas"]  # ledger's output, balance's output: no input


def test_a_recompressed_file_with_the_same_rows_is_hashed_again_and_verified(tmp_path, row_hashes):
    metadata, result, read = read_back(tmp_path, recompress)

    assert result.success
    assert read.hash_basis == "materialised"
    assert read.data_hash == metadata["ubunye/data_hash"]
    assert read.stored_bytes_hash() != metadata["ubunye/bytes_hash"]
    assert read.source_note.startswith(VERIFIED_BY_ROWS)
    assert "stored bytes differ from those written" in read.source_note
    assert len(row_hashes) == 3  # ledger's output, balance's input, balance's output


def test_a_tampered_file_fails_the_read_with_the_clear_error(tmp_path):
    metadata, result, read = read_back(tmp_path, tamper)

    assert not result.success
    [failure] = result.get_step_failure_events()
    text = failure.step_failure_data.error.to_string()
    assert "UnverifiedReadError" in text
    assert f"{tmp_path / 'data' / 'ledger.parquet'} was changed after it was written" in text
    assert metadata["ubunye/data_hash"] in text
    assert read.data_hash in text and read.hash_basis == "materialised"


def test_verify_reads_rows_hashes_the_rows_even_when_the_bytes_match(tmp_path, row_hashes):
    metadata, result, read = read_back(tmp_path, verify_reads="rows")

    assert result.success
    assert read.hash_basis == "materialised"
    assert read.data_hash == metadata["ubunye/data_hash"]
    assert read.stored_bytes_hash() is None  # the bytes were not even digested
    assert read.source_note.startswith(VERIFIED_BY_ROWS)
    assert len(row_hashes) == 3


def test_verify_reads_rows_fails_a_changed_file_like_fail_does(tmp_path):
    _, result, _ = read_back(tmp_path, tamper, verify_reads="rows")

    assert not result.success
    [failure] = result.get_step_failure_events()
    assert "UnverifiedReadError" in failure.step_failure_data.error.to_string()


def test_an_old_materialisation_without_a_byte_digest_still_verifies_by_rows(tmp_path, row_hashes):
    metadata, result, read = read_back(tmp_path, forget_the_byte_digest)

    assert result.success
    assert read.hash_basis == "materialised"
    assert read.data_hash == metadata["ubunye/data_hash"]
    assert read.source_note.startswith(VERIFIED_BY_ROWS)
    assert len(row_hashes) == 3


def test_verify_reads_off_takes_the_proof_but_never_fails_a_changed_file(tmp_path):
    _, proven_run, proven = read_back(tmp_path / "a", verify_reads="off")
    _, changed_run, changed = read_back(tmp_path / "b", tamper, verify_reads="off")

    assert proven_run.success and changed_run.success
    assert proven.hash_basis == "stored-bytes"
    assert changed.hash_basis == "materialised" and changed.row_count == 3
    assert changed.source_note is None
