"""The digest of stored bytes: a file's is BLAKE3 of its bytes; a folder's covers its data files'
names and bytes in sorted order, and nothing else."""

from __future__ import annotations

import hashlib

import blake3
import fsspec
import pytest

from ubunye_core.materialisations.byte_digest import (
    algorithm_of,
    bytes_digest,
    file_digest,
    folder_digest,
    is_data_file,
    local_file_digest,
)

# Runs no Dagster: CI runs it on the newest Dagster only (tests/unit/test_code_shape.py checks).
pytestmark = pytest.mark.dagster_free

LOCAL = fsspec.filesystem("file", auto_mkdir=True)


def folder(root, files: dict[str, bytes]) -> str:
    """``files`` (relative name: bytes) written under ``root``; returns its path."""
    LOCAL.pipe({str(root / name): data for name, data in files.items()})
    return str(root)


PARTS = {"part-0.parquet": b"first part", "part-1.parquet": b"second part"}


def test_a_file_digest_is_blake3_of_its_bytes_as_b3sum_writes_it():
    assert bytes_digest(b"rows") == "blake3:" + blake3.blake3(b"rows").hexdigest()
    assert bytes_digest(b"rows", "sha256") == "sha256:" + hashlib.sha256(b"rows").hexdigest()


def test_a_file_read_from_its_file_system_digests_like_its_bytes(tmp_path):
    (tmp_path / "one.parquet").write_bytes(b"PAR1" * 5_000_000)
    assert file_digest(LOCAL, str(tmp_path / "one.parquet")) == bytes_digest(b"PAR1" * 5_000_000)


@pytest.mark.parametrize("algorithm", ["blake3", "sha256"])
@pytest.mark.parametrize("data", [b"", b"PAR1" * 5_000_000], ids=["empty", "20MB"])
def test_a_local_file_read_without_fsspec_digests_like_its_bytes(tmp_path, algorithm, data):
    path = tmp_path / "one.parquet"
    path.write_bytes(data)
    expected = bytes_digest(data, algorithm)
    assert local_file_digest(str(path), algorithm) == expected
    assert local_file_digest(str(path), algorithm, every_core=True) == expected


def test_a_file_digest_on_every_core_is_the_same_digest(tmp_path):
    (tmp_path / "big.parquet").write_bytes(bytes(range(256)) * 100_000)  # 25.6 MB: 4 chunks
    path = str(tmp_path / "big.parquet")
    assert file_digest(LOCAL, path, every_core=True) == file_digest(LOCAL, path)
    assert file_digest(LOCAL, path, every_core=True) == bytes_digest(bytes(range(256)) * 100_000)


def test_an_unknown_algorithm_is_refused_by_name():
    with pytest.raises(ValueError, match="unknown byte digest algorithm 'md5'"):
        bytes_digest(b"x", "md5")


@pytest.mark.parametrize(
    ("digest", "algorithm"),
    [
        ("blake3:ab", "blake3"),
        ("sha256:ab", "sha256"),
        ("md5:ab", None),
        ("ab", None),
        (None, None),
    ],
)
def test_the_algorithm_is_read_from_the_recorded_digest(digest, algorithm):
    assert algorithm_of(digest) == algorithm


def test_a_folder_digest_skips_spark_markers_checksums_and_the_sidecar(tmp_path):
    plain = folder(tmp_path / "plain", PARTS)
    marked = folder(
        tmp_path / "marked",
        {**PARTS, "_SUCCESS": b"", ".part-0.parquet.crc": b"crc", "_ubunye.json": b"{}"},
    )
    assert folder_digest(LOCAL, plain) == folder_digest(LOCAL, marked)
    assert not is_data_file("_delta_log/0.json") and is_data_file("day=1/part-0.parquet")


@pytest.mark.parametrize(
    "changed",
    [
        {"part-0.parquet": b"first part", "part-1.parquet": b"second parT"},
        {"part-0.parquet": b"first part", "part-2.parquet": b"second part"},
        {"part-0.parquet": b"first part"},
        {"part-0.parquet": b"first partsecond part", "part-1.parquet": b""},
    ],
    ids=["a byte", "a name", "a file gone", "bytes moved between files"],
)
def test_a_folder_digest_changes_with_any_data_file(tmp_path, changed):
    assert folder_digest(LOCAL, folder(tmp_path / "a", PARTS)) != folder_digest(
        LOCAL, folder(tmp_path / "b", changed)
    )


def test_a_folder_digest_is_the_same_for_the_same_files_on_another_file_system(tmp_path):
    memory = fsspec.filesystem("memory")
    for name, data in PARTS.items():
        memory.pipe_file(f"/bucket/table/{name}", data)
    assert folder_digest(memory, "/bucket/table") == folder_digest(
        LOCAL, folder(tmp_path / "table", PARTS)
    )


def test_a_small_local_file_is_digested_on_the_calling_thread_even_when_every_core_may_be_used(
    tmp_path, monkeypatch
):
    from ubunye_core.materialisations import byte_digest

    asked: list[bool] = []
    make = byte_digest.new_hasher

    def note(algorithm="blake3", *, every_core=False):
        asked.append(every_core)
        return make(algorithm, every_core=every_core)

    small, large = tmp_path / "small.parquet", tmp_path / "large.parquet"
    small.write_bytes(b"PAR1" * 1_000)
    large.write_bytes(b"PAR1" * (byte_digest.EVERY_CORE_ABOVE_BYTES // 4 + 1))
    expected = [bytes_digest(path.read_bytes()) for path in (small, large)]
    monkeypatch.setattr(byte_digest, "new_hasher", note)
    found = [local_file_digest(str(path), every_core=True) for path in (small, large)]
    assert found == expected
    assert asked == [False, True]
