"""``ubunye-dagster lineage``: the reference's flags, --asset, --json documents, one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid

import pytest
from sample_records import sample_environment

from ubunye_core.cli import main
from ubunye_core.records.model import RunRecord, StepRecord
from ubunye_core.store import LineageStore, task_name_for_key

# Runs no Dagster: CI runs it on the newest Dagster only (tests/unit/test_code_shape.py checks).
pytestmark = pytest.mark.dagster_free

H1, H2 = "sha256:" + "1" * 64, "sha256:" + "2" * 64
TASK = task_name_for_key(["raw", "orders"])
ENV = sample_environment(dagster="1.13.27", pandas="3.1.1")


def record(run_id: str, day: int, data_hash: str = H1, **fields) -> RunRecord:
    values = dict(
        run_id=run_id,
        usecase="dagster",
        package="default",
        task_name=TASK,
        started_at=f"2026-01-0{day}T10:00:00+00:00",
        ended_at=f"2026-01-0{day}T10:00:02+00:00",
        duration_sec=2.0,
        status="success",
        inputs=[
            StepRecord(name="source", direction="input", format="csv", location="/in.csv",
                       row_count=None, hash_error="not hashed: hash_inputs is off"),
        ],
        outputs=[
            StepRecord(name="result", direction="output", format="parquet",
                       location="/out/raw/orders.parquet", row_count=1234, schema_hash=H1,
                       data_hash=data_hash, hash_method="rows-v1", hash_seconds=0.0123,
                       hash_basis="materialised"),
        ],
        code_hash="sha256:" + "c" * 64,
        environment=ENV,
        environment_hash="sha256:" + "e" * 64,
        timings=[{"step": "write", "output": "result", "seconds": 0.5}],
        expectations=[{"output": "result", "rule": "not_null(id)", "kind": "not_null",
                       "severity": "error", "column": "id", "failed": 2, "total": 1234,
                       "passed": False, "detail": "2 nulls"}],
    )  # fmt: skip
    values.update(fields)
    return RunRecord(**values)


@pytest.fixture
def usecase_dir(tmp_path):
    store = LineageStore.for_usecase_dir(tmp_path)
    for i, (run_id, data_hash) in enumerate((("run-aaa1", H1), ("run-bbb2", H2)), start=1):
        path = store.save(record(run_id, i, data_hash))
        os.utime(path.path, (1_700_000_000 + i, 1_700_000_000 + i))
    return tmp_path


def run_cli(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def by_task(usecase_dir) -> list[str]:
    return ["-d", str(usecase_dir), "-u", "dagster", "-p", "default", "-t", TASK]


def test_list_json_is_every_record_newest_first(capsys, usecase_dir):
    code, out, _ = run_cli(capsys, "lineage", "list", *by_task(usecase_dir), "--json")
    assert code == 0
    runs = json.loads(out)
    assert [r["run_id"] for r in runs] == ["run-bbb2", "run-aaa1"]
    assert (
        runs[0]
        == LineageStore.for_usecase_dir(usecase_dir)
        .load(f"dagster/default/{TASK}", "run-bbb2")
        .to_dict()
    )


def test_list_shows_a_table_of_runs(capsys, usecase_dir):
    code, out, _ = run_cli(capsys, "lineage", "list", *by_task(usecase_dir), "-n", "1")
    assert code == 0
    assert "run-bbb2" in out and "run-aaa1" not in out
    assert "1,234" in out and "success" in out


def test_list_of_a_task_without_runs_says_so(capsys, usecase_dir):
    args = ["-d", str(usecase_dir), "-u", "dagster", "-p", "default", "-t", "nothing"]
    code, out, _ = run_cli(capsys, "lineage", "list", *args)
    assert code == 0 and "No lineage records" in out
    code, out, _ = run_cli(capsys, "lineage", "list", *args, "--json")
    assert code == 0 and json.loads(out) == []


def test_show_prints_the_record_document(capsys, usecase_dir):
    code, out, _ = run_cli(capsys, "lineage", "show", *by_task(usecase_dir), "--run-id", "run-a")
    assert code == 0
    assert RunRecord.from_json(out) == record("run-aaa1", 1, H1)


def test_trace_json_has_the_reference_keys_and_the_evidence(capsys, usecase_dir):
    code, out, _ = run_cli(capsys, "lineage", "trace", *by_task(usecase_dir), "--json")
    assert code == 0
    trace = json.loads(out)
    assert {"task", "run_id", "status", "error", "inputs", "transform", "outputs"} <= set(trace)
    assert trace["run_id"] == "run-bbb2" and trace["task"] == f"dagster/default/{TASK}"
    assert trace["outputs"][0]["data_hash"] == H2
    assert trace["environment"] == ENV and trace["code_hash"].startswith("sha256:")
    assert trace["timings"] and trace["expectations"]


def test_trace_prints_steps_hashes_rows_code_environment_timings_and_expectations(
    capsys, usecase_dir
):
    code, out, _ = run_cli(capsys, "lineage", "trace", *by_task(usecase_dir), "--run-id", "run-a")
    assert code == 0
    for expected in (
        "Lineage trace: dagster/default/raw.orders",
        "run-aaa1",
        "INPUTS",
        "[csv] source",
        "rows     : -",
        "unavailable (not hashed: hash_inputs is off)",
        "OUTPUTS",
        "[parquet] result",
        "rows     : 1,234",
        f"data     : {H1}",
        f"schema   : {H1}",
        "method   : rows-v1",
        "code        : sha256:" + "c" * 64,
        "python      : 3.11.7 (CPython) on linux x86_64",
        "dagster     : 1.13.27",
        "dagster",
        "TIMINGS",
        "EXPECTATIONS",
        "result.not_null(id)  2/1234",
        "2 nulls",
    ):
        assert expected in out, expected


@pytest.mark.parametrize(
    ("model", "version", "shown"),
    [
        ("asset", "7", "code version: 7 (the asset's code_version)"),
        ("asset", "", "code version: not set (the asset has no code_version)"),
        ("", "2", "code version: 2 (the step's code_version)"),
    ],
)
def test_trace_says_in_dagster_words_which_code_version_made_the_rows(
    capsys, tmp_path, model, version, shown
):
    LineageStore.for_usecase_dir(tmp_path).save(record("run-v", 1, model=model, version=version))
    code, out, _ = run_cli(capsys, "lineage", "trace", "-d", str(tmp_path), "--asset", "raw/orders")
    assert code == 0
    assert shown in out
    assert "version: asset" not in out and " -\n" not in out.split("INPUTS")[0]


def trace_lines(capsys, tmp_path, **fields) -> list[str]:
    """The lines ``lineage trace`` prints for one record of ``raw/orders`` with ``fields``."""
    LineageStore.for_usecase_dir(tmp_path).save(record("run-t", 1, **fields))
    code, out, _ = run_cli(capsys, "lineage", "trace", "-d", str(tmp_path), "--asset", "raw/orders")
    assert code == 0
    return out.splitlines()


def test_a_long_source_line_wraps_at_word_boundaries_under_its_first_word(capsys, tmp_path):
    note = "verified: " + " ".join(f"word{i:03d}" for i in range(60)) + " (not hashed again)"
    source = StepRecord(name="source", direction="input", format="csv", location="/in.csv",
                        row_count=3, source_note=note)  # fmt: skip
    lines = trace_lines(capsys, tmp_path, inputs=[source])
    first = next(i for i, line in enumerate(lines) if "source   : verified:" in line)
    column = lines[first].index("verified:")
    following = []
    for line in lines[first + 1 :]:
        if line[column - 1 : column] != " " or not line[column : column + 1].strip():
            break
        following.append(line)
    assert following, "the note wraps"
    for line in following:
        assert line[:column].strip(" │") == "", line  # nothing but the tree's guide before it
    text = " ".join([lines[first][column:], *(line[column:] for line in following)])
    assert text.split() == note.split()  # no word is cut, none is lost


def test_timings_columns_line_up_by_the_longest_name(capsys, tmp_path):
    timings = [
        {"step": "Reader:pandas-parquet", "input": "raw", "seconds": 0.006},
        {"step": "Transform:sales__order_lines_with_a_long_name", "seconds": 0.021},
        {"step": "Writer:pandas-parquet", "output": "sales/order_lines", "seconds": 12.5},
    ]
    lines = trace_lines(capsys, tmp_path, timings=timings)
    start = lines.index(next(line for line in lines if line.endswith("TIMINGS")))
    shown = lines[start + 1 : start + 4]
    assert [line.split()[2] for line in shown] == [t["step"] for t in timings]
    ends = {len(line.rstrip()) for line in shown}
    assert len(ends) == 1, shown  # the seconds end in one column
    wheres = {line.index("raw") for line in shown[:1]} | {
        line.index("sales/") for line in shown[2:]
    }
    assert len(wheres) == 1, shown  # the frames start in one column


def test_trace_of_a_version_1_record_says_it_has_no_evidence(capsys, tmp_path):
    store = LineageStore.for_usecase_dir(tmp_path)
    old = record("old", 1).to_dict()
    for key in ("record_version", "code_hash", "environment", "environment_hash", "timings"):
        old.pop(key)
    store.save(RunRecord.model_validate(old))
    code, out, _ = run_cli(capsys, "lineage", "trace", "-d", str(tmp_path), "--asset", "raw/orders")
    assert code == 0 and "record version 1" in out and "CODE AND ENVIRONMENT" not in out


@pytest.mark.parametrize("index", [True, False], ids=["index", "files"])
@pytest.mark.parametrize("as_json", [False, True], ids=["tree", "json"])
def test_trace_of_the_newest_run_prints_what_trace_of_it_by_run_id_prints(
    capsys, tmp_path, index, as_json
):
    # The newest run is printed from its listed document, a named one through the record
    # model: the same text, for a version 1 file written by hand with nulls and gaps too.
    old = record("old-1", 1, duration_sec=3, version="v3", model="asset").to_dict()
    for key in ("record_version", "code_hash", "environment_hash", "timings", "profile"):
        old.pop(key)
    old["expectations"] = None
    folder = tmp_path / ".ubunye" / "lineage" / "dagster" / "default" / TASK
    folder.mkdir(parents=True)
    (folder / "old-1.json").write_text(json.dumps(old), encoding="utf-8")
    options = [*by_task(tmp_path), *([] if index else ["--no-index"])]
    options += ["--json"] if as_json else []

    newest = run_cli(capsys, "lineage", "trace", *options)
    named = run_cli(capsys, "lineage", "trace", *options, "--run-id", "old-1")

    assert newest == named and newest[0] == 0
    assert "old-1" in newest[1] and ("record version 1" in newest[1]) is not as_json


def test_asset_compare_without_run_ids_compares_the_latest_two(capsys, usecase_dir):
    args = ["-d", str(usecase_dir), "--asset", "raw/orders", "--json"]
    code, out, _ = run_cli(capsys, "lineage", "compare", *args)
    assert code == 0
    result = json.loads(out)
    assert (result["a"]["run_id"], result["b"]["run_id"]) == ("run-aaa1", "run-bbb2")
    assert result["outputs"]["result"]["data_hash"]["state"] == "changed"
    assert result["inputs"]["source"]["data_hash"]["state"] == "unknown"
    assert result["code_hash"]["changed"] is False


def test_compare_by_run_id_prefixes_prints_a_table(capsys, usecase_dir):
    args = [*by_task(usecase_dir), "--run-id1", "run-b", "--run-id2", "run-a"]
    code, out, _ = run_cli(capsys, "lineage", "compare", *args)
    assert code == 0
    assert "A: run-bbb2" in out and "B: run-aaa1" in out
    assert "CHANGED" in out and "unknown (not hashed: hash_inputs is off)" in out
    assert "(not hashed: hash_inputs is off; not" not in out


def test_compare_needs_both_run_ids_or_neither(capsys, usecase_dir):
    args = [*by_task(usecase_dir), "--run-id1", "x"]
    code, _, err = run_cli(capsys, "lineage", "compare", *args)
    assert code == 1 and err.startswith("error: ") and "both --run-id1 and --run-id2" in err


def test_search_filters_by_status_and_since(capsys, usecase_dir):
    store = LineageStore.for_usecase_dir(usecase_dir)
    store.save(record("run-ccc3", 3, status="error", task_name="other", task_path=None))
    code, out, _ = run_cli(capsys, "lineage", "search", "-d", str(usecase_dir), "--json")
    assert code == 0 and len(json.loads(out)) == 3
    args = ["-d", str(usecase_dir), "--status", "success", "--since", "2026-01-02", "--json"]
    code, out, _ = run_cli(capsys, "lineage", "search", *args)
    assert [r["run_id"] for r in json.loads(out)] == ["run-bbb2"]
    code, out, _ = run_cli(capsys, "lineage", "search", "-d", str(usecase_dir), "-u", "dagster")
    assert code == 0 and "run-ccc3" in out and "dagster/default/other" in out
    code, out, _ = run_cli(capsys, "lineage", "search", "-d", str(usecase_dir), "--asset", "other")
    assert "run-ccc3" in out and "run-aaa1" not in out


def test_asset_finds_its_task_folder_under_any_usecase_and_package(capsys, tmp_path):
    store = LineageStore.for_usecase_dir(tmp_path)
    store.save(record("r1", 1, usecase="shop", package="sales", task_path=None))
    code, out, _ = run_cli(capsys, "lineage", "list", "-d", str(tmp_path), "--asset", "raw/orders")
    assert code == 0 and "shop/sales/raw.orders" in out
    store.save(record("r2", 2, usecase="bank", package="risk", task_path=None))
    code, out, err = run_cli(
        capsys, "lineage", "list", "-d", str(tmp_path), "--asset", "raw/orders"
    )
    assert code == 1
    assert "bank/risk/raw.orders" in err and "shop/sales/raw.orders" in err and "-u/-p" in err
    args = ["-d", str(tmp_path), "--asset", "raw/orders", "-u", "bank", "--json"]
    code, out, _ = run_cli(capsys, "lineage", "list", *args)
    assert code == 0 and [r["run_id"] for r in json.loads(out)] == ["r2"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["show", "--run-id", "nope"], "no run 'nope'"),
        (["show", "--run-id", "run-"], "fits 2 runs"),
        (["show", "--run-id", "../x"], "run id"),
        (["trace", "-t", "missing"], "no lineage records for task"),
        (["list", "--asset", "no/such"], "no records of asset 'no/such'"),
        (["list", "--asset", "raw/orders", "-t", "x"], "not both"),
    ],
)
def test_errors_are_one_line_on_stderr_with_exit_code_1(capsys, usecase_dir, args, message):
    command, *rest = args
    base = ["-d", str(usecase_dir)]
    if "-t" not in rest and "--asset" not in rest:
        base += ["-u", "dagster", "-p", "default", "-t", TASK]
    elif "-t" in rest and "--asset" not in rest:
        base += ["-u", "dagster", "-p", "default"]
    code, out, err = run_cli(capsys, "lineage", command, *base, *rest)
    assert code == 1
    assert out == ""
    assert err.startswith("error: ") and err.count("\n") == 1 and message in err
    assert "Traceback" not in err


def test_a_json_error_is_also_a_json_document(capsys, usecase_dir):
    args = [*by_task(usecase_dir), "--run-id", "nope", "--json"]
    code, out, err = run_cli(capsys, "lineage", "trace", *args)
    assert code == 1
    document = json.loads(out)
    assert document["ok"] is False and "no run 'nope'" in document["error"]
    assert err.startswith("error: ")


def test_a_wrong_command_line_is_one_line_and_exit_code_2(capsys, usecase_dir):
    code, _, err = run_cli(capsys, "lineage", "list", "--bogus")
    assert code == 2 and err.startswith("error: No such option") and err.count("\n") == 1


# click 8.1 (held by Dagster 1.10) and click 8.2+ treat a bare group differently; the CLI
# decides it itself (ubunye_core.cli.BareGroupPrintsHelp), so this holds on both.
@pytest.mark.parametrize("args", [(), ("lineage",)], ids=["top", "lineage"])
def test_a_bare_command_group_prints_its_help_on_stderr_and_exits_2(capsys, args):
    code, out, err = run_cli(capsys, *args)
    assert (code, out) == (2, "")
    assert err.startswith(f"Usage: ubunye-dagster {' '.join(args)}".rstrip()) and "Commands:" in err
    assert "error:" not in err


def test_a_corrupt_record_is_a_warning_on_stderr_and_the_listing_goes_on(capsys, usecase_dir):
    store = LineageStore.for_usecase_dir(usecase_dir)
    store.path_for(f"dagster/default/{TASK}", "broken").write_text("{", encoding="utf-8")
    code, out, err = run_cli(capsys, "lineage", "list", *by_task(usecase_dir), "--json")
    assert code == 0 and len(json.loads(out)) == 2
    assert err.startswith("warning: ") and "broken.json" in err


def test_lineage_dir_may_be_an_fsspec_url(capsys):
    root = f"memory://cli-{uuid.uuid4().hex}/lineage"
    LineageStore(root).save(record("mem-1", 1))
    args = ["--lineage-dir", root, "--asset", "raw/orders", "--json"]
    code, out, _ = run_cli(capsys, "lineage", "list", *args)
    assert code == 0 and [r["run_id"] for r in json.loads(out)] == ["mem-1"]


def test_the_console_script_is_installed_and_runs(usecase_dir):
    result = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "ubunye-dagster"), "lineage", "trace",
         "-d", str(usecase_dir), "--asset", "raw/orders", "--json"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["run_id"] == "run-bbb2"


def test_trace_prints_a_listed_document_only_when_it_holds_every_field_trace_prints():
    # Else (an index written by an older record model) the newest run is loaded through the model.
    from ubunye_core.cli.render import holds_every_traced_field

    document = record("run-1", 1).to_dict()
    without_model = {key: value for key, value in document.items() if key != "model"}
    step_without_basis = {k: v for k, v in document["outputs"][0].items() if k != "hash_basis"}

    assert holds_every_traced_field(document)
    assert not holds_every_traced_field(without_model)
    assert not holds_every_traced_field({**document, "outputs": [step_without_basis]})
    assert holds_every_traced_field(RunRecord.model_validate(without_model).to_dict())


def test_version_prints_the_installed_versions_of_ubunye_dagster_and_ubunye_rows(capsys):
    from importlib.metadata import version

    code, out, err = run_cli(capsys, "--version")
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        f"ubunye-dagster {version('ubunye-dagster')}",
        f"ubunye-rows {version('ubunye-rows')}",
    ]
