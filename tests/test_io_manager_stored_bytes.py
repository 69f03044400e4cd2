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

from ubunye_core.record import RunRecord
from ubunye_core.store import LineageStore
from ubunye_dagster import UbunyeIOManager, UbunyeResource
from ubunye_dagster.handlers import arrow_files

ROWS = {"amount": [0.5, 1.5, 2.5]}


@dg.asset
def ledger() -> pd.DataFrame:
    return pd.DataFrame({"entry": list(range(len(ROWS["amount"]))), "amount": ROWS["amount"]})


@dg.asset
def balance(ledger: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame({"total": [ledger["amount"].sum()]})


def run(root: Path, instance, selection, verify_reads: str = "fail", **kwargs):
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


def rewrite_recompressed(target: Path) -> None:
    """The same rows, notes and schema, stored again with another codec (other bytes)."""
    table = pq.read_table(target)
    footer = pq.read_metadata(target).metadata
    notes = {key: value for key, value in footer.items() if key != b"ARROW:schema"}
    pq.write_table(table.replace_schema_metadata(notes), target, compression="gzip")


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


def test_a_read_whose_stored_bytes_match_takes_the_recorded_digest_without_hashing_rows(
    tmp_path, row_hashes
):
    with dg.DagsterInstance.ephemeral() as instance:
        metadata = written(tmp_path, instance)
        row_hashes.clear()
        result = run(tmp_path, instance, [balance])

    assert result.success
    [read] = latest(tmp_path, "balance").inputs
    assert read.hash_basis == "stored-bytes"
    assert read.data_hash == metadata["ubunye/data_hash"]
    assert read.schema_hash == metadata["ubunye/schema_hash"]
    assert read.row_count == metadata["dagster/row_count"] == 3
    assert read.hash_method == "rows-v1"
    assert read.stored_bytes_hash() == metadata["ubunye/bytes_hash"]
    assert read.source_note.startswith("verified: its stored bytes hash to the byte digest")
    # Only the one-row output of balance was hashed; the input's rows were not.
    assert len(row_hashes) == 1


def test_a_recompressed_file_with_the_same_rows_is_hashed_again_and_verified(tmp_path, row_hashes):
    with dg.DagsterInstance.ephemeral() as instance:
        metadata = written(tmp_path, instance)
        rewrite_recompressed(tmp_path / "data" / "ledger.parquet")
        row_hashes.clear()
        result = run(tmp_path, instance, [balance])

    assert result.success
    [read] = latest(tmp_path, "balance").inputs
    assert read.hash_basis == "materialised"
    assert read.data_hash == metadata["ubunye/data_hash"]
    assert read.stored_bytes_hash() != metadata["ubunye/bytes_hash"]
    assert read.source_note.startswith("verified: the rows match the digest recorded by Dagster")
    assert "stored bytes differ from those written" in read.source_note
    assert len(row_hashes) == 2  # the input's rows, then the output's


def test_a_tampered_file_fails_the_read_with_the_clear_error(tmp_path):
    with dg.DagsterInstance.ephemeral() as instance:
        metadata = written(tmp_path, instance)
        target = tmp_path / "data" / "ledger.parquet"
        ROWS["amount"] = [0.5, 1.5, 99.0]
        try:
            table = pd.DataFrame({"entry": [0, 1, 2], "amount": ROWS["amount"]})
            table.to_parquet(target)
        finally:
            ROWS["amount"] = [0.5, 1.5, 2.5]
        result = run(tmp_path, instance, [balance], raise_on_error=False)

    assert not result.success
    [failure] = result.get_step_failure_events()
    text = failure.step_failure_data.error.to_string()
    assert "UnverifiedReadError" in text
    assert f"{target} was changed after it was written" in text
    assert metadata["ubunye/data_hash"] in text
    [read] = latest(tmp_path, "balance").inputs
    assert read.data_hash in text and read.hash_basis == "materialised"


def test_verify_reads_rows_hashes_the_rows_even_when_the_bytes_match(tmp_path, row_hashes):
    with dg.DagsterInstance.ephemeral() as instance:
        metadata = written(tmp_path, instance)
        row_hashes.clear()
        result = run(tmp_path, instance, [balance], verify_reads="rows")

    assert result.success
    [read] = latest(tmp_path, "balance").inputs
    assert read.hash_basis == "materialised"
    assert read.data_hash == metadata["ubunye/data_hash"]
    assert read.stored_bytes_hash() is None  # the bytes were not even digested
    assert read.source_note.startswith("verified: the rows match the digest recorded by Dagster")
    assert len(row_hashes) == 2


def test_verify_reads_rows_fails_a_changed_file_like_fail_does(tmp_path):
    with dg.DagsterInstance.ephemeral() as instance:
        written(tmp_path, instance)
        pd.DataFrame({"entry": [0], "amount": [5.0]}).to_parquet(
            tmp_path / "data" / "ledger.parquet"
        )
        result = run(tmp_path, instance, [balance], verify_reads="rows", raise_on_error=False)

    assert not result.success
    [failure] = result.get_step_failure_events()
    assert "UnverifiedReadError" in failure.step_failure_data.error.to_string()


def test_an_old_materialisation_without_a_byte_digest_still_verifies_by_rows(tmp_path, row_hashes):
    with dg.DagsterInstance.ephemeral() as instance:
        metadata = written(tmp_path, instance)
        # What an earlier version recorded: the receipt without ubunye/bytes_hash.
        older = {key: value for key, value in metadata.items() if key != "ubunye/bytes_hash"}
        instance.report_runless_asset_event(
            dg.AssetMaterialization(asset_key="ledger", metadata=older)
        )
        row_hashes.clear()
        result = run(tmp_path, instance, [balance])

    assert result.success
    [read] = latest(tmp_path, "balance").inputs
    assert read.hash_basis == "materialised"
    assert read.data_hash == metadata["ubunye/data_hash"]
    assert read.source_note.startswith("verified: the rows match the digest recorded by Dagster")
    assert len(row_hashes) == 2


def test_verify_reads_off_takes_the_proof_but_never_fails_a_changed_file(tmp_path):
    with dg.DagsterInstance.ephemeral() as instance:
        written(tmp_path, instance)
        assert run(tmp_path, instance, [balance], verify_reads="off").success
        [proven] = latest(tmp_path, "balance").inputs
        pd.DataFrame({"entry": [0], "amount": [5.0]}).to_parquet(
            tmp_path / "data" / "ledger.parquet"
        )
        assert run(tmp_path, instance, [balance], verify_reads="off").success

    [changed] = latest(tmp_path, "balance").inputs
    assert proven.hash_basis == "stored-bytes"
    assert changed.hash_basis == "materialised" and changed.row_count == 1
    assert changed.source_note is None
