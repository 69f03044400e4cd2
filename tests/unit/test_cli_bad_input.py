"""``ubunye-dagster`` answering bad input as a new user meets it: a missing folder, a wrong value, a
bad flag, a run that does not exist, an object store without credentials. Each answer is one
``error:`` line on stderr and a non-zero exit, never a traceback; counts agree with their noun."""

from __future__ import annotations

import dataclasses
import os
import re
import socket
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_cli import run_cli as cli

from ubunye_core.records.model import RunRecord, StepRecord
from ubunye_core.store import LineageStore
from ubunye_rows import fingerprint

# Runs no Dagster: CI runs it on the newest Dagster only (tests/unit/test_code_shape.py checks).
pytestmark = pytest.mark.dagster_free

TASK = "shop/sales/orders"
BY_TASK = ("-u", "shop", "-p", "sales", "-t", "orders")
LINEAGE_COMMANDS = ("list", "show", "trace", "compare", "search", "digest", "reindex", "diff")


def run(
    run_id: str, day: int, *, partition: str | None = None, rows: int = 3, sketch: bool = True
) -> RunRecord:
    """A finished run of ``TASK`` whose one output carries a rows-v1 digest (and its sketch)."""
    fp = fingerprint(pa.table({"id": list(range(rows))}))
    output = StepRecord.from_fingerprint(
        fp if sketch else dataclasses.replace(fp, sketch=None),
        name="result",
        direction="output",
        format="parquet",
        location=f"/data/{run_id}.parquet",
    )
    return RunRecord(
        run_id=run_id,
        usecase="shop",
        package="sales",
        task_name="orders",
        started_at=f"2026-01-0{day}T10:00:00+00:00",
        status="success",
        outputs=[output],
        variables={"partition_key": partition} if partition else {},
    )


def usecase_with(tmp_path, *runs: RunRecord):
    store = LineageStore.for_usecase_dir(tmp_path)
    for i, record in enumerate(runs, start=1):
        path = store.save(record)
        os.utime(path.path, (1_700_000_000 + i, 1_700_000_000 + i))
    return tmp_path


def one_error_line(err: str) -> str:
    """The message of ``err``, which must be exactly one ``error:`` line."""
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    return err[len("error: ") : -1]


@pytest.mark.parametrize("command", LINEAGE_COMMANDS)
def test_each_lineage_command_in_a_missing_use_case_folder_says_the_folder_does_not_exist(
    capsys, tmp_path, command
):
    missing = tmp_path / "nonexistent" / "dir"
    task = BY_TASK if command != "reindex" else ()
    code, out, err = cli(capsys, "lineage", command, "-d", str(missing), *task)
    # diff's exit codes are diff's: 1 would mean "the rows differ".
    assert code == (2 if command == "diff" else 1) and out == ""
    assert one_error_line(err) == f"the use case folder {missing} does not exist"
    assert not missing.exists() and not missing.parent.exists()


def test_a_use_case_folder_that_is_a_file_is_said_to_be_a_file(capsys, tmp_path):
    file = tmp_path / "notes.txt"
    file.write_text("not a folder")
    code, _, err = cli(capsys, "lineage", "list", "-d", str(file), *BY_TASK)
    assert code == 1
    assert one_error_line(err) == f"the use case folder {file} is a file, not a folder"


@pytest.mark.parametrize("where", ["absolute", "memory"])
def test_a_lineage_dir_that_does_not_exist_is_named(capsys, tmp_path, where):
    lineage_dir = str(tmp_path / "nowhere") if where == "absolute" else "memory://nowhere/lineage"
    code, _, err = cli(capsys, "lineage", "search", "--lineage-dir", lineage_dir)
    assert code == 1
    assert one_error_line(err) == f"the lineage folder {lineage_dir} does not exist"


def test_clean_of_a_missing_folder_says_it_does_not_exist(capsys, tmp_path):
    missing = tmp_path / "nonexistent"
    code, out, err = cli(capsys, "clean", str(missing))
    assert (code, out) == (1, "")
    assert one_error_line(err) == f"the base path {missing} does not exist"


def test_clean_of_a_file_says_it_is_not_a_folder(capsys, tmp_path):
    file = tmp_path / "orders.parquet"
    file.write_bytes(b"PAR1")
    code, _, err = cli(capsys, "clean", str(file))
    assert code == 1 and one_error_line(err).endswith("is a file, not a folder")


def test_a_wrong_search_status_is_a_usage_error_listing_the_statuses(capsys, tmp_path):
    code, out, err = cli(capsys, "lineage", "search", "-d", str(tmp_path), "--status", "nonsense")
    assert (code, out) == (2, "")
    message = one_error_line(err)
    assert "'nonsense'" in message and all(
        f"'{status}'" in message for status in ("success", "error", "running")
    )


def test_search_status_is_read_in_any_case(capsys, tmp_path):
    usecase_with(tmp_path, run("r1", 1))
    code, out, _ = cli(capsys, "lineage", "search", "-d", str(tmp_path), "--status", "SUCCESS")
    assert code == 0 and "r1" in out


@pytest.mark.parametrize(
    ("args", "help_of"),
    [
        (["--bogus"], "ubunye-dagster"),
        (["nonsense"], "ubunye-dagster"),
        (["lineage", "nonsense"], "ubunye-dagster lineage"),
        (["lineage", "list", "--bogus"], "ubunye-dagster lineage list"),
        (["lineage", "search", "--jsn"], "ubunye-dagster lineage search"),
        (["clean"], "ubunye-dagster clean"),
        (["clean", ".", "--older-than", "-1"], "ubunye-dagster clean"),
    ],
    ids=["flag", "command", "lineage command", "list flag", "search flag", "clean", "clean value"],
)
def test_a_wrong_command_line_says_how_to_get_help(capsys, args, help_of):
    code, out, err = cli(capsys, *args)
    assert (code, out) == (2, "")
    assert one_error_line(err).endswith(f". Try '{help_of} --help' for help.")


def test_a_since_that_is_not_an_iso_date_is_a_usage_error(capsys, tmp_path):
    code, _, err = cli(capsys, "lineage", "search", "-d", str(tmp_path), "--since", "yesterday")
    assert code == 2
    message = one_error_line(err)
    assert "'yesterday' is not an ISO date or time" in message and "--help" in message


@pytest.mark.parametrize(
    "args",
    [["list", *BY_TASK, "-n", "-1"], ["diff", "a.parquet", "b.parquet", "--limit", "-1"]],
    ids=["list -n", "diff --limit"],
)
def test_a_negative_count_is_a_usage_error(capsys, tmp_path, args):
    usecase_with(tmp_path, run("r1", 1))
    code, out, err = cli(capsys, "lineage", *args[:1], "-d", str(tmp_path), *args[1:])
    assert (code, out) == (2, "")
    assert "-1 is not in the range" in one_error_line(err)


@pytest.mark.parametrize(
    ("options", "said"),
    [("{bad", "is not JSON"), ("[1]", "is not a JSON object")],
)
def test_clean_storage_options_that_are_not_a_json_object_are_a_usage_error(
    capsys, tmp_path, options, said
):
    code, _, err = cli(capsys, "clean", str(tmp_path), "--storage-options", options)
    assert code == 2
    message = one_error_line(err)
    assert message.startswith("Invalid value for '--storage-options'") and said in message


def test_an_unknown_run_id_names_the_tasks_runs_in_words_that_agree_with_their_count(
    capsys, tmp_path
):
    usecase_with(tmp_path, run("run-aaa1", 1))
    args = ["-d", str(tmp_path), *BY_TASK, "--run-id", "nope"]
    code, _, err = cli(capsys, "lineage", "show", *args)
    assert code == 1 and one_error_line(err).endswith("(it has 1 run: run-aaa1)")
    usecase_with(tmp_path, run("run-bbb2", 2))
    code, _, err = cli(capsys, "lineage", "trace", *args)
    assert code == 1 and one_error_line(err).endswith("(it has 2 runs: run-aaa1, run-bbb2)")


@pytest.mark.parametrize(
    ("partition", "said"),
    [(None, "is its only unpartitioned run"), ("2026-01-01", "is its only run of partition")],
)
def test_compare_of_a_run_without_a_predecessor_says_it_is_the_only_one(
    capsys, tmp_path, partition, said
):
    usecase_with(tmp_path, run("r1", 1, partition="2025-12-31"), run("r2", 2, partition=partition))
    code, _, err = cli(capsys, "lineage", "compare", "-d", str(tmp_path), *BY_TASK)
    message = one_error_line(err)
    assert code == 1 and f"the newest run r2 of {TASK} {said}" in message
    assert "only one of" not in message


def test_search_counts_one_matching_run_in_the_singular(capsys, tmp_path):
    usecase_with(tmp_path, run("r1", 1))
    code, out, _ = cli(capsys, "lineage", "search", "-d", str(tmp_path))
    assert code == 0 and out.splitlines()[-1] == "1 matching run"
    usecase_with(tmp_path, run("r2", 2))
    code, out, _ = cli(capsys, "lineage", "search", "-d", str(tmp_path))
    assert out.splitlines()[-1] == "2 matching runs"


def test_reindex_counts_one_record_in_the_singular(capsys, tmp_path):
    usecase_with(tmp_path, run("r1", 1))
    code, out, _ = cli(capsys, "lineage", "reindex", "-d", str(tmp_path))
    assert code == 0 and out.startswith("Indexed 1 record of ")


def test_digest_counts_one_partition_and_one_row_in_the_singular(capsys, tmp_path):
    usecase_with(tmp_path, run("r1", 1, rows=1))
    code, out, _ = cli(capsys, "lineage", "digest", "-d", str(tmp_path), *BY_TASK)
    lines = out.splitlines()
    assert code == 0 and lines[0] == f"Digest of {TASK}: 1 partition"
    assert lines[-1] == "  (unpartitioned)  run r1  1 row"


def test_digest_of_an_unpartitioned_run_without_a_sketch_does_not_say_partition_none(
    capsys, tmp_path
):
    usecase_with(tmp_path, run("r1", 1, sketch=False))
    code, _, err = cli(capsys, "lineage", "digest", "-d", str(tmp_path), *BY_TASK)
    assert code == 1
    assert one_error_line(err).startswith(f"run r1 (unpartitioned) of {TASK} recorded no sketch")


def parquet(path, ids) -> str:
    pq.write_table(pa.table({"id": ids}), path)
    return str(path)


def test_diff_of_a_path_that_never_existed_says_nothing_is_stored_there(capsys, tmp_path):
    there = parquet(tmp_path / "a.parquet", [1, 2])
    never = str(tmp_path / "never.parquet")
    code, out, err = cli(capsys, "lineage", "diff", there, never)
    assert (code, out) == (2, "")
    assert one_error_line(err) == f"nothing is stored at {never}"


def test_a_delta_version_of_a_parquet_path_is_an_error_not_ignored(capsys, tmp_path):
    a, b = parquet(tmp_path / "a.parquet", [1, 2]), parquet(tmp_path / "b.parquet", [1, 3])
    code, out, err = cli(capsys, "lineage", "diff", f"{a}@v3", b)
    assert (code, out) == (2, "")
    assert "@v3 names a version of a Delta table" in one_error_line(err)


def test_a_missing_key_column_is_named_with_the_tables_columns(capsys, tmp_path):
    a, b = parquet(tmp_path / "a.parquet", [1, 2]), parquet(tmp_path / "b.parquet", [1, 3])
    code, _, err = cli(capsys, "lineage", "diff", a, b, "--key", "nope")
    assert code == 2
    assert one_error_line(err) == "key column 'nope' is not in the before table (its columns: id)"


def test_diff_counts_at_most_one_row_removed_in_the_singular(capsys, tmp_path):
    a, b = parquet(tmp_path / "a.parquet", [1, 2]), parquet(tmp_path / "b.parquet", [1, 3])
    code, out, _ = cli(capsys, "lineage", "diff", a, b)
    assert code == 1 and "(at most 1 row removed, 1 added)" in out


@pytest.mark.parametrize("args", [["--help"], ["lineage", "--help"]], ids=["top", "lineage"])
def test_the_help_lists_each_command_in_a_whole_sentence_without_markup(capsys, monkeypatch, args):
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = cli(capsys, *args)
    listed = out.split("Commands:\n", 1)[1].splitlines()
    assert code == 0 and listed
    for line in listed:
        assert re.fullmatch(r"  [a-z]+ +[A-Z].*\.", line) and not line.endswith("..."), line
    assert "``" not in out


def test_no_commands_help_shows_restructuredtext_markup(capsys):
    for command in (["clean"], *(["lineage", name] for name in LINEAGE_COMMANDS)):
        code, out, _ = cli(capsys, *command, "--help")
        assert code == 0 and "Usage: ubunye-dagster" in out and "``" not in out, command


def unused_loopback_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.parametrize(
    ("args", "exit_code"),
    [
        (["lineage", "search", "--lineage-dir", "s3://no-credentials/lineage"], 1),
        (["clean", "s3://no-credentials/data"], 1),
        (["lineage", "diff", "s3://no-credentials/a.parquet", "b.parquet"], 2),
    ],
    ids=["search", "clean", "diff"],
)
def test_an_object_store_without_credentials_is_one_line_naming_the_url(tmp_path, args, exit_code):
    url = next(arg for arg in args if arg.startswith("s3://"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(
        HOME=str(tmp_path),
        AWS_CONFIG_FILE=str(tmp_path / "no-config"),
        AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "no-credentials"),
        # Nothing leaves the machine: no instance metadata, and any request goes to loopback.
        AWS_EC2_METADATA_DISABLED="true",
        AWS_ENDPOINT_URL=f"http://127.0.0.1:{unused_loopback_port()}",
    )
    result = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "ubunye-dagster"), *args],
        capture_output=True, text=True, timeout=120, check=False, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert (result.returncode, result.stdout) == (exit_code, "")
    message = one_error_line(result.stderr)
    assert message.startswith("cannot read ") and url in message
    assert message.endswith("Unable to locate credentials (NoCredentialsError)")
