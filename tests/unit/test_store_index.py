"""The lineage index: it answers exactly as reading the folders does, whatever happens to them.

Generated stores (hypothesis) are asked every listing and search with and without the index,
before and after records are added, rewritten, deleted or corrupted behind the index's back;
real subprocesses write concurrently; the index is deleted and damaged; object stores keep theirs
in a cache folder.
"""

from __future__ import annotations

import json
import os
import pty
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import threading
import uuid
import warnings
from itertools import islice
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from upath import UPath

from ubunye_core.cli import main
from ubunye_core.records.model import RunRecord
from ubunye_core.store import LineageStore
from ubunye_core.store.index import CACHE_DIR_ENV, INDEX_FILE_NAME
from ubunye_core.store.later import queue_index_update, settle_index_updates
from ubunye_core.store.listing import FileEntry
from ubunye_core.store.queries import RunSearch

# Runs no Dagster: CI runs it on the newest Dagster only (tests/unit/test_code_shape.py checks).
pytestmark = pytest.mark.dagster_free

TASKS = ["shop/sales/raw.orders", "shop/sales/daily", "shop/ops/raw.orders", "bank/risk/raw.orders"]
SCOPES = [None, "shop", "shop/sales", "shop/sales/daily"]
STARTS = [
    "2026-01-01T00:00:00+00:00",
    "2026-01-01T01:00:00-03:00",  # 04:00 UTC ...
    "2026-01-01T04:00:00Z",  # ... the same instant written another way
    "2025-12-31T23:59:59",
    "2026-01-02",
    "0001-01-01T00:00:00+01:00",
    "not a time",
    "",
]
SINCES = [None, "2026-01-01", "2026-01-01T03:30:00Z"]
T0 = 1_700_000_000
MTIMES = [T0, T0, T0 + 10, T0 + 10.5, T0 + 20]
DAMAGE = [b'{"run_id": "x", "usecase"', b"", b"[]", b'{"run_id": 1}', b"\xff not utf8"]


def make_record(run_id: str, task_path: str = TASKS[0], **fields) -> RunRecord:
    usecase, package, task = task_path.split("/")
    fields.setdefault("started_at", STARTS[0])
    return RunRecord(run_id=run_id, usecase=usecase, package=package, task_name=task, **fields)


runs = st.lists(
    st.tuples(
        st.sampled_from(TASKS),
        st.sampled_from(STARTS),
        st.sampled_from(["success", "error", "running"]),
        st.sampled_from([None, "2026-01-01", "2026-01-02"]),
        st.sampled_from(MTIMES),
        st.sampled_from([None, 0.5, 2.0]),
    ),
    max_size=14,
)
changes = st.lists(
    st.tuples(
        st.sampled_from(["add", "rewrite", "delete", "corrupt", "touch"]),
        st.integers(min_value=0, max_value=30),
        st.sampled_from(MTIMES),
    ),
    max_size=8,
)


def write_behind_the_index(path: str, data: bytes, mtime: float) -> None:
    """Write a file as another tool would: in place, no store involved."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as handle:
        handle.write(data)
    os.utime(path, (mtime, mtime))


def fill(store: LineageStore, spec) -> list[str]:
    """Save the generated runs through the store, then give each file its generated time."""
    paths = []
    for i, (task, start, status, partition, mtime, duration) in enumerate(spec):
        variables = {"partition_key": partition} if partition else {}
        record = make_record(f"r{i:02d}", task, started_at=start, status=status,
                             variables=variables, duration_sec=duration)  # fmt: skip
        path = store.save(record).path
        os.utime(path, (mtime, mtime))
        paths.append(path)
    return paths


def change(store: LineageStore, paths: list[str], steps) -> None:
    """Add, rewrite in place, delete, corrupt or touch record files without the store."""
    for i, (kind, pick, mtime) in enumerate(steps):
        if kind == "add" or not paths:
            task = TASKS[pick % len(TASKS)]
            record = make_record(f"new{i}", task, started_at=STARTS[pick % len(STARTS)],
                                 status=["success", "error"][pick % 2])  # fmt: skip
            path = store.path_for(task, record.run_id).path
            write_behind_the_index(path, record.to_json().encode(), mtime)
            paths.append(path)
            continue
        path = paths[pick % len(paths)]
        if not os.path.exists(path):
            continue
        if kind == "delete":
            os.unlink(path)
        elif kind == "corrupt":
            write_behind_the_index(path, DAMAGE[pick % len(DAMAGE)], mtime)
        elif kind == "touch":
            os.utime(path, (mtime, mtime))
        else:
            try:
                data = json.loads(Path(path).read_bytes())
            except ValueError:
                continue
            if not isinstance(data, dict) or "usecase" not in data:
                continue
            data["status"] = "success" if data.get("status") != "success" else "error"
            write_behind_the_index(path, json.dumps(data).encode(), mtime)


def entry_view(entry) -> tuple:
    return (entry.task_path, entry.file_name, entry.run_id, entry.status, entry.started_at,
            entry.duration_sec, entry.document())  # fmt: skip


def answers(store: LineageStore) -> dict:
    """Every listing and search of the store, each with the warnings it gave."""
    found = {}

    def ask(key, question, *args, **kwargs):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            answer = question(*args, **kwargs)
        found[key] = (answer, sorted(str(w.message) for w in caught))

    def pair(task):
        return [r.run_id for r in islice(store.iter_runs(task, same_partition_as_newest=True), 2)]

    def search(*args, **kwargs):
        return [entry_view(entry) for entry in store.iter_search(RunSearch(*args, **kwargs))]

    for task in TASKS:
        ask(("list", task), lambda task: [r.to_dict() for r in store.list_runs(task)], task)
        ask(("list 2", task), lambda task: [r.run_id for r in store.list_runs(task, 2)], task)
        ask(("latest", task), lambda task: getattr(store.latest(task), "run_id", None), task)
        ask(("pair", task), pair, task)
    for scope in SCOPES:
        for name in (None, "raw.orders"):
            for status in (None, "error"):
                for since in SINCES[::2]:
                    key = ("search", scope, name, status, since)
                    ask(key, search, scope, status, since, task=name)
    return found


def assert_same_answers(root) -> None:
    indexed, scanned = answers(LineageStore(root)), answers(LineageStore(root, use_index=False))
    for key, answer in scanned.items():
        assert indexed[key] == answer, key


# --- the index answers as the folders do -------------------------------------------------------


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=runs, steps=changes)
def test_the_index_answers_every_listing_and_search_as_the_folders_do(spec, steps):
    with tempfile.TemporaryDirectory() as folder:
        store = LineageStore(folder)
        paths = fill(store, spec)
        assert_same_answers(folder)
        change(store, paths, steps)
        assert_same_answers(folder)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=runs, steps=changes)
def test_every_cli_command_prints_the_same_with_and_without_the_index(spec, steps):
    with tempfile.TemporaryDirectory() as folder:
        store = LineageStore.for_usecase_dir(folder)
        paths = fill(store, spec)
        change(store, paths, steps)
        for args in cli_questions(folder):
            assert run_cli(args) == run_cli([*args, "--no-index"]), args


def cli_questions(folder: str) -> list[list[str]]:
    found = []
    for task_path in TASKS[:2]:
        usecase, package, task = task_path.split("/")
        selection = ["-d", folder, "-u", usecase, "-p", package, "-t", task]
        for command in ("list", "show", "trace", "compare"):
            found += [["lineage", command, *selection], ["lineage", command, *selection, "--json"]]
    for narrow in ([], ["-u", "shop", "-p", "sales"], ["-t", "raw.orders"]):
        for filters in ([], ["--status", "error"], ["--since", SINCES[2]]):
            args = ["lineage", "search", "-d", folder, *narrow, *filters]
            found += [args, [*args, "--json"]]
    return found


def run_cli(args: list[str]) -> tuple[int, str, str]:
    """Exit code, stdout and stderr of the CLI run in this process."""
    import contextlib
    import io

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    return code, out.getvalue(), err.getvalue()


# --- what the index is and where ----------------------------------------------------------


def test_the_index_lives_beside_the_records_and_the_reference_cli_ignores_it(tmp_path):
    store = LineageStore.for_usecase_dir(tmp_path)
    store.save(make_record("r1"))
    index = tmp_path / ".ubunye/lineage" / INDEX_FILE_NAME
    assert store.index_path() == index and index.exists()
    assert not INDEX_FILE_NAME.endswith(".json")
    reference = [sys.executable, "-c", "import sys; from ubunye.cli.main import main; "
                 "sys.argv[0] = 'ubunye'; sys.exit(main())"]  # fmt: skip
    pytest.importorskip("ubunye.cli.main")
    done = subprocess.run(
        [*reference, "lineage", "search", "-d", str(tmp_path), "--json"],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    assert [r["run_id"] for r in json.loads(done.stdout)] == ["r1"]


def test_the_index_is_sqlite_in_wal_mode(tmp_path):
    store = LineageStore(tmp_path)
    store.save(make_record("r1"))
    with sqlite3.connect(store.index_path()) as connection:
        assert connection.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert connection.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_a_saved_record_is_in_the_index_at_once(tmp_path):
    store = LineageStore(tmp_path)
    store.save(make_record("r1", status="error"))
    with sqlite3.connect(store.index_path()) as connection:
        rows = connection.execute("SELECT task_path, file, status FROM runs").fetchall()
    assert rows == [(TASKS[0], "r1.json", "error")]


def test_a_record_saved_without_telling_the_index_is_listed_and_then_indexed_when_final(tmp_path):
    store = LineageStore(tmp_path)
    store.save(make_record("r1"))
    runs_seen(store)
    store.save(make_record("r2", status="running"), index=False)
    assert runs_seen(store) == ([("r2", "running"), ("r1", "running")],) * 2
    store.save(make_record("r2", status="success"))
    with sqlite3.connect(store.index_path()) as connection:
        rows = connection.execute("SELECT file, status FROM runs ORDER BY file").fetchall()
    assert rows == [("r1.json", "running"), ("r2.json", "success")]


def indexed(store: LineageStore) -> list[tuple[str, str]]:
    """(file, status) of every run in the index file, as it is now."""
    with sqlite3.connect(store.index_path()) as connection:
        return connection.execute("SELECT file, status FROM runs ORDER BY file").fetchall()


def test_a_record_whose_index_update_is_left_for_later_is_listed_at_once_and_indexed_once_settled(
    tmp_path,
):
    store = LineageStore(tmp_path)
    store.save(make_record("r1"))
    gate = threading.Event()
    queue_index_update(gate.wait)  # the index thread is busy until the gate opens
    store.save(make_record("r2", status="success"), index_later=True)

    assert runs_seen(store) == ([("r2", "success"), ("r1", "running")],) * 2
    gate.set()
    settle_index_updates()
    assert indexed(store) == [("r1.json", "running"), ("r2.json", "success")]


def test_an_index_update_left_for_later_never_lands_after_a_newer_one(tmp_path):
    store = LineageStore(tmp_path)
    gate = threading.Event()
    queue_index_update(gate.wait)
    store.save(make_record("r1", status="success"), index_later=True)
    newer = threading.Thread(target=store.save, args=(make_record("r1", status="error"),))
    newer.start()
    newer.join(timeout=1)  # a save that did not wait for the queue would be done by now
    gate.set()
    newer.join()

    settle_index_updates()
    assert indexed(store) == [("r1.json", "error")]


def test_index_updates_left_for_later_are_settled_when_the_process_exits(tmp_path):
    script = textwrap.dedent(
        f"""
        from ubunye_core.records.model import RunRecord
        from ubunye_core.store import LineageStore
        store = LineageStore({str(tmp_path)!r})
        for i in range(20):
            record = RunRecord(run_id=f"r{{i:02d}}", usecase="u", package="p", task_name="t",
                               started_at="2026-01-01T00:00:00+00:00", status="success")
            store.save(record, index_later=True)
        """
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)

    rows = indexed(LineageStore(tmp_path))
    assert rows == [(f"r{i:02d}.json", "success") for i in range(20)]


def test_deleting_the_index_loses_nothing(tmp_path):
    store = LineageStore(tmp_path)
    for i in range(5):
        store.save(make_record(f"r{i}", status="error" if i % 2 else "success"))
    before = answers(store)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{store.index_path()}{suffix}").unlink(missing_ok=True)
    assert answers(store) == before
    assert store.index_path().exists()


@pytest.mark.parametrize(
    "damage",
    [b"this is not a database at all" * 100, None],
    ids=["garbage", "truncated"],
)
def test_a_damaged_index_is_rebuilt_and_answers_stay_right(tmp_path, damage):
    store = LineageStore(tmp_path)
    for i in range(40):
        store.save(make_record(f"r{i:02d}", status="error" if i % 3 else "success"))
    before = answers(LineageStore(tmp_path, use_index=False))
    index = store.index_path()
    with sqlite3.connect(index) as connection:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = index.read_bytes()
    index.write_bytes(damage if damage is not None else data[: len(data) // 2])
    assert answers(store) == before
    with sqlite3.connect(index) as connection:
        assert connection.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_a_record_the_reference_recorder_writes_is_picked_up(tmp_path):
    recorder_module = pytest.importorskip("ubunye.lineage.recorder")
    import types

    store = LineageStore.for_usecase_dir(tmp_path)
    ours = store.save(make_record("ours", "shop/ref/daily", started_at="2026-01-01T00:00:00Z"))
    os.utime(ours.path, (T0, T0))
    assert [r.run_id for r in store.list_runs("shop/ref/daily")] == ["ours"]
    recorder = recorder_module.LineageRecorder(base_dir=str(tmp_path / ".ubunye" / "lineage"))
    context = types.SimpleNamespace(
        run_id="theirs", task_name="shop/ref/daily", profile="dev", config_hash="",
        backend="pandas", task_dir=str(tmp_path), time_zone="UTC", variables={},
    )  # fmt: skip
    config = {"MODEL": "etl", "VERSION": "1", "CONFIG": {"inputs": {}, "outputs": {}}}
    recorder.task_start(context=context, config=config)
    if hasattr(recorder, "flush"):
        recorder.flush()
    recorder.task_end(context=context, config=config, outputs={}, inputs={}, status="success",
                      duration_sec=1.0)  # fmt: skip
    if hasattr(recorder, "flush"):
        recorder.flush()
    path = store.path_for("shop/ref/daily", "theirs").path
    os.utime(path, (T0 + 100, T0 + 100))
    newest = store.latest("shop/ref/daily")
    assert newest.run_id == "theirs" and newest.status == "success"
    assert answers(store) == answers(LineageStore.for_usecase_dir(tmp_path, use_index=False))


def test_a_record_rewritten_in_place_is_read_again(tmp_path):
    store = LineageStore(tmp_path)
    path = store.save(make_record("r1", status="running")).path
    os.utime(path, (T0, T0))
    assert store.latest(TASKS[0]).status == "running"
    # Same size, same modification time: only the inode or the content time could tell.
    data = Path(path).read_bytes().replace(b'"running"', b'"failed!"')
    write_behind_the_index(path, data, T0)
    assert store.latest(TASKS[0]).status == "failed!"


# --- a folder found in step is not compared file by file --------------------------------------


def runs_seen(store: LineageStore) -> tuple[list, list]:
    """(run id, status) of the task's runs as a listing and as a search see them."""
    listed = [(r.run_id, r.status) for r in store.list_runs(TASKS[0])]
    searched = [(r.run_id, r.status) for r in store.search(TASKS[0])]
    return listed, searched


def test_a_folder_found_in_step_is_synced_without_comparing_its_files(tmp_path):
    store = LineageStore(tmp_path)
    store.save(make_record("r1"))
    store.latest(TASKS[0])  # compares the files with the index and finds them in step
    folder = store._folder_state(TASKS[0])
    store._index().sync([folder], store._read_entries, still_gone=store._still_gone)
    assert "entries" not in vars(folder)


def replace_by_rename(path: str, data: bytes, mtime: float) -> None:
    """Write a file as an atomic writer does: a temporary file renamed over it."""
    temp = f"{path}.tmp"
    write_behind_the_index(temp, data, mtime)
    os.replace(temp, path)


@pytest.mark.parametrize(
    "writer", [write_behind_the_index, replace_by_rename], ids=["in place", "by a rename"]
)
def test_a_record_rewritten_in_a_folder_found_in_step_is_read_again(tmp_path, writer):
    store = LineageStore(tmp_path)
    path = store.save(make_record("r1", status="running")).path
    os.utime(path, (T0, T0))
    runs_seen(store)
    assert runs_seen(store) == ([("r1", "running")], [("r1", "running")])
    # Same size, same modification time, same folder listing times.
    data = Path(path).read_bytes().replace(b'"running"', b'"failed!"')
    writer(path, data, T0)
    assert runs_seen(store) == ([("r1", "failed!")], [("r1", "failed!")])


def test_a_record_added_to_a_folder_found_in_step_is_seen(tmp_path):
    store = LineageStore(tmp_path)
    store.save(make_record("r1"))
    runs_seen(store)
    path = store.path_for(TASKS[0], "r2").path
    write_behind_the_index(path, make_record("r2").to_json().encode(), T0 + 1e9)
    assert runs_seen(store) == ([("r2", "running"), ("r1", "running")],) * 2


def test_a_record_removed_from_a_folder_found_in_step_is_dropped(tmp_path):
    store = LineageStore(tmp_path)
    store.save(make_record("r1"))
    path = store.save(make_record("r2")).path
    runs_seen(store)
    os.unlink(path)
    assert runs_seen(store) == ([("r1", "running")],) * 2


def test_a_row_written_while_a_folder_is_compared_leaves_it_to_be_compared_again(tmp_path):
    store = LineageStore(tmp_path)
    store.save(make_record("r1"))
    runs_seen(store)
    # Another process saved a record the listing did not hold, then the file went: the listing
    # is the one found in step, but the rows are not.
    entry = FileEntry("ghost.json", T0, (T0, 1, 1))
    store._index().record_saved(TASKS[0], entry, make_record("ghost"))
    assert runs_seen(store) == ([("r1", "running")],) * 2


# --- concurrent writers -------------------------------------------------------------------

_WRITER = textwrap.dedent(
    """
    import sys, warnings
    from ubunye_core.records.model import RunRecord
    from ubunye_core.store import LineageStore

    root, writer, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    store = LineageStore(root)
    tasks = ["shop/sales/raw.orders", "shop/sales/daily", "bank/risk/raw.orders"]
    for i in range(count):
        usecase, package, task = tasks[(writer + i) % 3].split("/")
        store.save(RunRecord(run_id=f"w{writer}-{i}", usecase=usecase, package=package,
                             task_name=task, started_at=f"2026-01-01T00:00:{i % 60:02d}Z",
                             status="error" if i % 4 == 0 else "success"))
        if i % 5 == 0:
            store.search(status="error")  # a reader syncing while others write
            store.list_runs(f"{usecase}/{package}/{task}", limit=3)
        if writer == 0 and i == count // 2:
            open(store.path_for("shop/sales/daily", "w0-1").path, "wb").write(b"{torn")
    """
)


def test_concurrent_writers_and_readers_never_corrupt_the_index(tmp_path):
    root = str(tmp_path / "lineage")
    count = 30
    workers = [
        subprocess.Popen([sys.executable, "-c", _WRITER, root, str(w), str(count)])
        for w in range(4)
    ]
    assert [worker.wait(timeout=300) for worker in workers] == [0, 0, 0, 0]
    store = LineageStore(root)
    with sqlite3.connect(store.index_path()) as connection:
        assert connection.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        assert len(store.search()) == 4 * count - 1
    assert_same_answers(root)


# --- object stores ------------------------------------------------------------------------


def test_an_object_store_keeps_its_index_in_the_cache_folder_keyed_by_its_url(tmp_path):
    os.environ[CACHE_DIR_ENV]  # the session's cache folder (conftest) stands in for the user's
    first = LineageStore(f"memory://index-{uuid.uuid4().hex}/lineage")
    second = LineageStore(f"memory://index-{uuid.uuid4().hex}/lineage")
    assert first.index_path().parent == Path(os.environ[CACHE_DIR_ENV])
    assert first.index_path() != second.index_path()
    assert LineageStore(str(first.root)).index_path() == first.index_path()
    for i in range(4):
        first.save(make_record(f"r{i}", TASKS[i % 2], status="error" if i % 2 else "success"))
    assert first.index_path().exists()
    # Another tool writes an object: the listing brings it into the index.
    record = make_record("behind", TASKS[0], status="error")
    path = first.path_for(TASKS[0], "behind")
    path.fs.pipe_file(path.path, record.to_json().encode())
    assert "behind" in [r.run_id for r in first.search(status="error")]
    path.fs.rm_file(path.path)
    assert "behind" not in [r.run_id for r in first.search(status="error")]
    assert answers(first) == answers(LineageStore(str(first.root), use_index=False))
    UPath(str(first.root)).fs.rm(first.root.path, recursive=True)


def test_the_cache_folder_follows_the_environment_variable(tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "elsewhere"))
    store = LineageStore(f"memory://cache-{uuid.uuid4().hex}/lineage")
    store.save(make_record("r1"))
    assert store.index_path().parent == tmp_path / "elsewhere"
    assert store.index_path().exists()


# --- reindex ------------------------------------------------------------------------------


def test_reindex_reports_records_read_and_names_the_unreadable_ones(tmp_path, capsys):
    store = LineageStore.for_usecase_dir(tmp_path)
    for i in range(3):
        store.save(make_record(f"r{i}"))
    bad = store.path_for(TASKS[0], "bad").path
    write_behind_the_index(bad, b"{not json", T0)
    code = main(["lineage", "reindex", "-d", str(tmp_path), "--json"])
    out, err = capsys.readouterr()
    report = json.loads(out)
    assert code == 0 and report["read"] == 1 and report["unchanged"] == 3
    assert report["skipped"] == 1 and "bad.json" in report["unreadable"][0]["file"]
    assert "warning: skipped an unreadable lineage record" in err and "bad.json" in err
    code = main(["lineage", "reindex", "-d", str(tmp_path), "--full"])
    out, err = capsys.readouterr()
    assert code == 0 and "4 read, 0 unchanged" in out and "1 skipped as unreadable" in out
    assert "Indexing" not in err  # not a terminal: no progress bar


def reindex_on_a_terminal(folder: Path, *extra: str) -> str:
    """Run ``reindex --full`` with stderr on a pseudo-terminal; what the terminal showed."""
    leader, follower = pty.openpty()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "COLUMNS": "100", "TERM": "xterm"}
    child = subprocess.Popen(
        [sys.executable, "-m", "ubunye_core.cli", "lineage", "reindex", "--full",
         "-d", str(folder), *extra],
        stdout=subprocess.DEVNULL, stderr=follower, env=env,
    )  # fmt: skip
    os.close(follower)
    shown = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:
            break
        if not chunk:
            break
        shown += chunk
    assert child.wait(timeout=300) == 0
    os.close(leader)
    return shown.decode("utf-8", "replace")


def test_a_long_rebuild_shows_a_progress_bar_on_a_terminal_only(tmp_path):
    store = LineageStore.for_usecase_dir(tmp_path)
    text = make_record("template").to_json()
    folder = os.path.dirname(store.path_for(TASKS[0], "x").path)
    os.makedirs(folder)
    for i in range(400):
        Path(folder, f"r{i:04d}.json").write_text(text.replace('"template"', f'"r{i:04d}"'))
    assert "Indexing lineage records" in reindex_on_a_terminal(tmp_path)
    assert "Indexing lineage records" not in reindex_on_a_terminal(tmp_path, "--json")


def test_reindex_of_a_missing_folder_is_a_clear_error_and_creates_nothing(tmp_path, capsys):
    code = main(["lineage", "reindex", "-d", str(tmp_path)])
    _, err = capsys.readouterr()
    assert code == 1 and err.startswith("error: no lineage records folder at ")
    assert list(tmp_path.iterdir()) == []
