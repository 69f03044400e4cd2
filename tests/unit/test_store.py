"""The lineage store: layout, names, atomic writes across processes, listing and search."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
import warnings
from itertools import islice

import pytest
from disk_flushes import NAMES_FDS, flushed_files
from hypothesis import given, settings
from hypothesis import strategies as st
from upath import UPath

from ubunye_core.records.model import RunRecord
from ubunye_core.store import (
    AmbiguousRunIdError,
    LineageStore,
    RecordNotFoundError,
    UnreadableRecordError,
    UnreadableRecordWarning,
    decode_name,
    encode_name,
    key_for_task_name,
    task_name_for_key,
)

# Runs no Dagster: CI runs it on the newest Dagster only (tests/unit/test_code_shape.py checks).
pytestmark = pytest.mark.dagster_free

TASK = "shop/sales/raw.orders"


def make_record(run_id: str, *, task_path: str = TASK, **fields) -> RunRecord:
    usecase, package, task = task_path.split("/")
    fields.setdefault("started_at", "2026-01-01T00:00:00+00:00")
    fields.setdefault("status", "success")
    return RunRecord(run_id=run_id, usecase=usecase, package=package, task_name=task, **fields)


@pytest.fixture(params=["local", "memory"])
def store(request, tmp_path):
    if request.param == "local":
        yield LineageStore(tmp_path / "lineage")
        return
    root = f"memory://store-{uuid.uuid4().hex}/lineage"
    yield LineageStore(root)
    if UPath(root).exists():
        UPath(root).fs.rm(UPath(root).path, recursive=True)


def set_mtime(store: LineageStore, record: RunRecord, when: float) -> None:
    os.utime(store.path_for(record.task_path, record.run_id).path, (when, when))


# --- names --------------------------------------------------------------------------------


def test_encode_name_keeps_letters_digits_underscore_and_hyphen():
    assert encode_name("Raw_orders-2026") == "Raw_orders-2026"


def test_encode_name_writes_every_other_character_as_upper_case_utf8_bytes():
    assert encode_name("a.b") == "a%2Eb"
    assert encode_name("100%") == "100%25"
    assert encode_name("a/b\\c") == "a%2Fb%5Cc"
    assert encode_name("..") == "%2E%2E"
    assert encode_name("x y") == "x%20y"
    assert encode_name("é") == "%C3%A9"
    assert encode_name("\0") == "%00"
    assert encode_name("2026-01-01|us") == "2026-01-01%7Cus"


def test_an_empty_name_is_refused():
    with pytest.raises(ValueError, match="empty"):
        encode_name("")
    with pytest.raises(ValueError, match="empty"):
        decode_name("")


def test_a_name_too_long_for_a_file_name_is_refused():
    with pytest.raises(ValueError, match="too long"):
        encode_name("é" * 40)


# 16 characters of at most 4 UTF-8 bytes each stay within the 200-character limit once encoded.
@settings(max_examples=200, deadline=None)
@given(st.text(min_size=1, max_size=16))
def test_decode_name_reverses_encode_name(text):
    encoded = encode_name(text)
    assert decode_name(encoded) == text
    assert set(encoded) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-%")


@pytest.mark.parametrize("text", ["a.b", "%2e", "%41", "%C3", "%2", "a%zz", "a b"])
def test_decode_name_refuses_text_encode_name_cannot_produce(text):
    with pytest.raises(ValueError, match="not an encoded name"):
        decode_name(text)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=12), min_size=1, max_size=4))
def test_an_asset_key_and_its_task_name_convert_both_ways(parts):
    name = task_name_for_key(parts)
    assert key_for_task_name(name) == parts
    assert "/" not in name and name not in (".", "..")


def test_an_asset_key_becomes_a_dotted_task_name():
    assert task_name_for_key(["raw", "orders"]) == "raw.orders"
    assert task_name_for_key(["a.b"]) == "a%2Eb"
    assert task_name_for_key(["a", "b"]) != task_name_for_key(["a.b"])
    with pytest.raises(ValueError):
        task_name_for_key([])


# --- layout -------------------------------------------------------------------------------


def test_records_live_at_usecase_package_task_run_id_json(tmp_path):
    store = LineageStore.for_usecase_dir(tmp_path)
    path = store.save(make_record("run-1"))
    assert path == UPath(tmp_path / ".ubunye/lineage/shop/sales/raw.orders/run-1.json")
    assert path == store.path_for(TASK, "run-1")
    assert json.loads(path.read_text(encoding="utf-8"))["run_id"] == "run-1"


def test_a_store_opens_on_a_path_a_upath_or_an_fsspec_url(tmp_path):
    by_text = LineageStore(str(tmp_path))
    by_upath = LineageStore(UPath(tmp_path))
    by_url = LineageStore(f"file://{tmp_path}")
    by_text.save(make_record("r"))
    for store in (by_upath, by_url):
        assert store.load(TASK, "r").run_id == "r"


def test_a_upath_keeps_its_storage_options(tmp_path):
    root = UPath(f"memory://opts-{uuid.uuid4().hex}/lineage", skip_instance_cache=True)
    store = LineageStore(root)
    assert store.root.storage_options == root.storage_options
    assert store.path_for(TASK, "r").storage_options == root.storage_options


@pytest.mark.parametrize("bad", ["", ".", "..", "a/b", "a\\b", "a\0b", "tab\there"])
def test_names_that_would_escape_or_break_a_path_are_refused(store, bad):
    with pytest.raises(ValueError):
        store.path_for(TASK, bad)
    with pytest.raises(ValueError):
        store.load(TASK, bad)
    with pytest.raises(ValueError):
        store.path_for(f"shop/{bad}/t", "r")
    with pytest.raises(ValueError):
        store.save(make_record("r").model_copy(update={"package": bad, "task_path": f"u/{bad}/t"}))


def test_a_task_path_has_three_parts(store):
    with pytest.raises(ValueError, match="usecase/package/task"):
        store.list_runs("shop/sales")


def test_save_refuses_a_task_path_that_disagrees_with_its_parts(store):
    record = make_record("r").model_copy(update={"task_path": "other/place/task"})
    with pytest.raises(ValueError, match="does not match"):
        store.save(record)


# --- save and load ------------------------------------------------------------------------


def test_a_saved_record_loads_back_equal(store):
    record = make_record("r1", variables={"dt": "2026-01-01"}, environment={"python": "3.11"})
    store.save(record)
    assert store.load(TASK, "r1") == record


def test_fields_from_a_newer_version_survive_the_store(store):
    data = make_record("r1").to_dict()
    data["from_the_future"] = {"kept": [1, "two"]}
    store.save(RunRecord.model_validate(data))
    assert store.load(TASK, "r1").to_dict() == data


def test_saving_a_run_again_replaces_it(store):
    store.save(make_record("r1", status="running"))
    store.save(make_record("r1", status="success", duration_sec=3.0))
    assert [r.status for r in store.list_runs(TASK)] == ["success"]


def test_a_unique_prefix_loads_its_run(store):
    store.save(make_record("abc123"))
    store.save(make_record("abd456"))
    assert store.load(TASK, "abc").run_id == "abc123"


def test_an_ambiguous_prefix_is_an_error_listing_the_candidates(store):
    store.save(make_record("abc123"))
    store.save(make_record("abd456"))
    with pytest.raises(AmbiguousRunIdError, match=r"fits 2 runs.*abc123, abd456"):
        store.load(TASK, "ab")


def test_an_unknown_run_is_a_clear_error(store):
    store.save(make_record("abc123"))
    with pytest.raises(RecordNotFoundError, match=r"no run .zzz.*\(it has 1 run: abc123\)"):
        store.load(TASK, "zzz")
    with pytest.raises(RecordNotFoundError, match="no records"):
        store.load("shop/sales/other", "abc")


def test_loading_a_corrupt_record_by_name_says_which_file(store):
    store.path_for(TASK, "bad").parent.mkdir(parents=True, exist_ok=True)
    store.path_for(TASK, "bad").write_text('{"run_id": "bad", "task', encoding="utf-8")
    with pytest.raises(UnreadableRecordError, match=r"bad\.json"):
        store.load(TASK, "bad")


def test_an_object_store_write_is_one_put(monkeypatch):
    store = LineageStore(f"memory://put-{uuid.uuid4().hex}")
    fs = store.root.fs
    puts = []
    real_pipe = fs.pipe_file

    def counting_pipe(path, data, **kwargs):
        puts.append((path, data))
        return real_pipe(path, data, **kwargs)

    monkeypatch.setattr(fs, "pipe_file", counting_pipe)
    record = make_record("r1")
    path = store.save(record)
    assert [p for p, _ in puts] == [path.path]
    assert RunRecord.from_json(puts[0][1]) == record


def test_a_local_write_leaves_no_temporary_file(tmp_path):
    store = LineageStore(tmp_path)
    for i in range(3):
        store.save(make_record(f"r{i}"))
    assert sorted(os.listdir(tmp_path / "shop/sales/raw.orders")) == [
        "r0.json",
        "r1.json",
        "r2.json",
    ]


def test_a_new_record_file_gets_ordinary_permissions(tmp_path):
    mask = os.umask(0o022)
    os.umask(mask)
    path = LineageStore(tmp_path).save(make_record("r"))
    assert os.stat(path.path).st_mode & 0o777 == 0o666 & ~mask


@NAMES_FDS
def test_a_durable_store_flushes_each_record_then_its_folder_to_disk(tmp_path, monkeypatch):
    flushed = flushed_files(monkeypatch)
    path = LineageStore(tmp_path, durable=True).save(make_record("r"))
    folder = os.path.dirname(path.path)
    [temporary, renamed_into] = flushed
    assert os.path.dirname(temporary) == folder and temporary.endswith(".tmp")
    assert renamed_into == folder
    assert LineageStore(tmp_path).load(TASK, "r").run_id == "r"


@NAMES_FDS
def test_a_store_that_is_not_durable_writes_whole_records_without_flushing(tmp_path, monkeypatch):
    flushed = flushed_files(monkeypatch)
    store = LineageStore(tmp_path)
    for i in range(3):
        store.save(make_record(f"r{i}"))
    assert flushed == []
    assert [store.load(TASK, f"r{i}").run_id for i in range(3)] == ["r0", "r1", "r2"]


# --- listing and search -------------------------------------------------------------------


def test_list_runs_is_newest_first_by_file_modification_time(tmp_path):
    store = LineageStore(tmp_path)
    # started_at runs the other way, so the order can only come from the files.
    records = [
        make_record(f"r{i}", started_at=f"2026-01-0{9 - i}T00:00:00+00:00") for i in range(3)
    ]
    for i, record in enumerate(records):
        store.save(record)
        set_mtime(store, record, 1_700_000_000 + i * 10)
    assert [r.run_id for r in store.list_runs(TASK)] == ["r2", "r1", "r0"]
    assert [r.run_id for r in store.list_runs(TASK, limit=2)] == ["r2", "r1"]
    assert store.list_runs(TASK, limit=0) == []
    assert store.latest(TASK).run_id == "r2"


def test_runs_written_at_the_same_moment_are_ordered_by_started_at(tmp_path):
    store = LineageStore(tmp_path)
    for run_id, day in (("b", 2), ("c", 3), ("a", 1)):
        record = make_record(run_id, started_at=f"2026-01-0{day}T00:00:00Z")
        store.save(record)
        set_mtime(store, record, 1_700_000_000)
    assert [r.run_id for r in store.list_runs(TASK)] == ["c", "b", "a"]
    assert [r.run_id for r in store.list_runs(TASK, limit=1)] == ["c"]


def test_a_limited_listing_reads_only_the_newest_files(tmp_path):
    store = LineageStore(tmp_path)
    records = [make_record(run_id) for run_id in ("old", "mid", "new")]
    for record in records:
        store.save(record)
    # The oldest file is corrupt: a listing that reads it would warn.
    store.path_for(TASK, "old").write_bytes(b"not json")
    for i, record in enumerate(records):
        set_mtime(store, record, 1_700_000_000 + i * 10)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnreadableRecordWarning)
        assert [r.run_id for r in store.list_runs(TASK, limit=2)] == ["new", "mid"]
        assert [r.run_id for r in islice(store.iter_runs(TASK), 2)] == ["new", "mid"]


def test_a_task_without_records_lists_nothing(store):
    assert store.list_runs("shop/sales/none") == []
    assert store.latest("shop/sales/none") is None
    assert store.search() == []


@pytest.mark.parametrize(
    "damage",
    ['{"run_id": "broken", "usecase"', "", "[]", '{"run_id": 1}', "\xff not utf8"],
    ids=["truncated", "empty", "not-an-object", "wrong-types", "not-utf8"],
)
def test_a_corrupt_or_truncated_record_is_skipped_with_a_warning_naming_it(store, damage):
    store.save(make_record("good"))
    broken = store.path_for(TASK, "broken")
    broken.write_bytes(damage.encode("latin-1"))
    with pytest.warns(UnreadableRecordWarning, match=r"broken\.json"):
        assert [r.run_id for r in store.list_runs(TASK)] == ["good"]
    with pytest.warns(UnreadableRecordWarning, match=r"broken\.json"):
        assert [r.run_id for r in store.search()] == ["good"]


def test_search_filters_by_status_and_since(store):
    store.save(make_record("old-ok", started_at="2025-12-31T23:59:59+00:00"))
    store.save(make_record("new-bad", started_at="2026-01-02T00:00:00+00:00", status="error"))
    store.save(make_record("new-ok", started_at="2026-01-03T00:00:00Z"))
    # 2026-01-01T01:00 in Sao Paulo is 04:00 UTC: still after the cut.
    store.save(make_record("zoned", started_at="2026-01-01T01:00:00-03:00"))
    assert {r.run_id for r in store.search(status="error")} == {"new-bad"}
    assert {r.run_id for r in store.search(since="2026-01-01")} == {"new-bad", "new-ok", "zoned"}
    assert {r.run_id for r in store.search(status="success", since="2026-01-01T03:30:00Z")} == {
        "new-ok",
        "zoned",
    }
    with pytest.raises(ValueError, match="since"):
        store.search(since="yesterday")


def test_search_narrows_by_usecase_package_and_task(store):
    store.save(make_record("a", task_path="shop/sales/raw.orders"))
    store.save(make_record("b", task_path="shop/sales/daily"))
    store.save(make_record("c", task_path="shop/ops/raw.orders"))
    store.save(make_record("d", task_path="bank/risk/raw.orders"))
    assert {r.run_id for r in store.search("shop")} == {"a", "b", "c"}
    assert {r.run_id for r in store.search("shop/sales")} == {"a", "b"}
    assert {r.run_id for r in store.search("shop/sales/daily")} == {"b"}
    assert {r.run_id for r in store.search(task="raw.orders")} == {"a", "c", "d"}
    assert {r.run_id for r in store.search("shop", task="raw.orders")} == {"a", "c"}
    assert store.task_paths(task="raw.orders") == [
        "bank/risk/raw.orders",
        "shop/ops/raw.orders",
        "shop/sales/raw.orders",
    ]


# --- atomic writes across processes ---------------------------------------------------------


_WRITER = textwrap.dedent(
    """
    import sys
    from ubunye_core.records.model import RunRecord
    from ubunye_core.store import LineageStore

    root, writer, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    store = LineageStore(root)
    padding = f"writer {writer} " * 5_000  # a large record widens any window for mixed bytes

    def record(run_id, **variables):
        return RunRecord(run_id=run_id, usecase="shop", package="sales", task_name="raw.orders",
                         started_at="2026-01-01T00:00:00Z", variables=variables)

    for i in range(count):
        store.save(record(f"w{writer}-{i}", writer=writer))
        store.save(record("contested", writer=writer, i=i, pad=padding))
    """
)


def test_concurrent_writers_in_separate_processes_never_corrupt_each_other(tmp_path):
    root = str(tmp_path / "lineage")
    workers = [
        subprocess.Popen([sys.executable, "-c", _WRITER, root, str(w), "15"]) for w in range(4)
    ]
    store = LineageStore(root)
    contested_path = store.path_for(TASK, "contested")
    # A reader during the writes only ever sees whole records.
    while any(worker.poll() is None for worker in workers):
        if contested_path.exists():
            assert store.read(contested_path).run_id == "contested"
        time.sleep(0.02)
    assert [worker.wait(timeout=120) for worker in workers] == [0, 0, 0, 0]
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnreadableRecordWarning)
        runs = store.list_runs(TASK)
    assert len(runs) == 4 * 15 + 1
    contested = store.load(TASK, "contested")
    writer = contested.variables["writer"]
    assert contested.variables["pad"] == f"writer {writer} " * 5_000
    assert not [n for n in os.listdir(store.task_dir(TASK).path) if not n.endswith(".json")]


_KILLED_WRITER = textwrap.dedent(
    """
    import os, sys, time
    from ubunye_core.records.model import RunRecord
    from ubunye_core.store import LineageStore

    real_fdopen = os.fdopen

    class HalfThenHang:
        # Writes half of what it is given, says so, then hangs until it is killed.
        def __init__(self, handle):
            self.handle = handle
        def __enter__(self):
            return self
        def __exit__(self, *exc):
            self.handle.close()
        def write(self, data):
            self.handle.write(data[: len(data) // 2])
            self.handle.flush()
            print("half written", flush=True)
            time.sleep(120)
        def flush(self):
            self.handle.flush()
        def fileno(self):
            return self.handle.fileno()

    os.fdopen = lambda fd, mode="r", *a, **k: HalfThenHang(real_fdopen(fd, mode, *a, **k))
    record = RunRecord(run_id=sys.argv[2], usecase="shop", package="sales",
                       task_name="raw.orders", started_at="2026-01-01T00:00:00Z",
                       status="success", variables={"pad": "new " * 50000})
    LineageStore(sys.argv[1]).save(record)
    """
)


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX signals")
@pytest.mark.parametrize("had_a_version", [True, False], ids=["overwrite", "first-write"])
def test_a_writer_killed_mid_write_never_leaves_a_half_written_record(tmp_path, had_a_version):
    store = LineageStore(tmp_path)
    if had_a_version:
        store.save(make_record("run-1", status="running"))
    child = subprocess.Popen(
        [sys.executable, "-c", _KILLED_WRITER, str(tmp_path), "run-1"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout.readline().strip() == "half written"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnreadableRecordWarning)
        runs = store.list_runs(TASK)
    if had_a_version:
        assert [(r.run_id, r.status) for r in runs] == [("run-1", "running")]
    else:
        assert runs == []
        with pytest.raises(RecordNotFoundError):
            store.load(TASK, "run-1")
    leftovers = [n for n in os.listdir(store.task_dir(TASK).path) if not n.endswith(".json")]
    assert leftovers and all(n.startswith(".") and n.endswith(".tmp") for n in leftovers)
