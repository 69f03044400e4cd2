"""Code and environment evidence (ADR 006 v2), checked against the reference as the oracle."""

from __future__ import annotations

import importlib.metadata
import os

import pytest

from ubunye_rows.evidence import RESULT_PACKAGES, code_hash, environment, environment_hash

ref_evidence = pytest.importorskip("ubunye.lineage.evidence")


def write(root, files: dict[str, bytes]) -> None:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)


@pytest.fixture
def task_folder(tmp_path):
    root = tmp_path / "task"
    write(
        root,
        {
            "transformations.py": b"def run(df):\r\n    return df\r\n",
            "a/b.py": b"x = 1\n",
            "a-b.py": b"y = 2\n",
            "a/deeper/c.py": "z = 'é'\n".encode(),
            "config.yaml": b"not python\n",
            "__pycache__/transformations.cpython-311.py": b"cache\n",
            ".hidden/secret.py": b"hidden\n",
            "a/.venv/lib.py": b"hidden too\n",
        },
    )
    return root


def test_code_hash_is_the_reference_code_hash(task_folder):
    assert code_hash(task_folder) == ref_evidence.code_hash(str(task_folder))
    assert code_hash(str(task_folder)).startswith("sha256:")


def test_code_hash_ignores_line_endings(tmp_path):
    write(tmp_path / "unix", {"t.py": b"a = 1\nb = 2\n"})
    write(tmp_path / "windows", {"t.py": b"a = 1\r\nb = 2\r\n"})
    assert code_hash(tmp_path / "unix") == code_hash(tmp_path / "windows")


def test_code_hash_skips_caches_hidden_folders_and_other_files(task_folder):
    before = code_hash(task_folder)
    write(
        task_folder,
        {
            "__pycache__/more.py": b"changed\n",
            ".hidden/secret.py": b"changed\n",
            "config.yaml": b"changed\n",
        },
    )
    assert code_hash(task_folder) == before


def test_code_hash_sees_an_edit_and_a_rename(task_folder):
    before = code_hash(task_folder)
    (task_folder / "a" / "b.py").write_bytes(b"x = 2\n")
    edited = code_hash(task_folder)
    assert edited != before
    (task_folder / "a" / "b.py").rename(task_folder / "a" / "renamed.py")
    assert code_hash(task_folder) not in (before, edited)


def test_code_hash_sees_an_edit_of_the_same_size_with_its_old_modification_time(task_folder):
    # The hash of an unchanged folder is kept for the process; an edit must still be seen.
    target = task_folder / "a" / "b.py"
    before = code_hash(task_folder)
    stat = target.stat()
    target.write_bytes(b"x = 7\n")
    os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert target.stat().st_size == stat.st_size and target.stat().st_mtime_ns == stat.st_mtime_ns
    assert code_hash(task_folder) == ref_evidence.code_hash(task_folder) != before


def test_code_hash_is_none_when_there_is_no_code(tmp_path):
    write(tmp_path / "empty", {"readme.md": b"no code"})
    assert code_hash(tmp_path / "empty") is None
    assert code_hash(tmp_path / "missing") is None
    assert code_hash(None) is None
    assert code_hash("") is None


def test_a_single_file_hashes_as_a_folder_holding_only_it(tmp_path):
    write(tmp_path / "alone", {"assets.py": b"asset = 1\n"})
    write(tmp_path / "crowd", {"assets.py": b"asset = 1\n", "other.py": b"other\n"})
    assert code_hash(tmp_path / "crowd" / "assets.py") == code_hash(tmp_path / "alone")


def test_environment_names_the_machine_and_the_result_packages():
    env = environment()
    assert set(env) == {"python", "implementation", "platform", "machine", "packages"}
    for name in ("ubunye-rows", "dagster", "polars", "pandas", "pyarrow"):
        assert env["packages"][name] == importlib.metadata.version(name)
    assert set(env["packages"]) <= set(RESULT_PACKAGES)


def test_an_environment_a_caller_changes_is_not_the_next_callers():
    first = environment()
    first["packages"]["pandas"] = "0.0.0"
    first["python"] = "changed"
    assert environment()["packages"]["pandas"] == importlib.metadata.version("pandas")
    assert environment()["python"] != "changed"


def test_environment_keeps_everything_the_reference_records():
    ours, theirs = environment(), ref_evidence.environment()
    for key in ("python", "implementation", "platform", "machine"):
        assert ours[key] == theirs[key]
    assert theirs["packages"].items() <= ours["packages"].items()
    assert {"dagster", "dagster-pyspark", "polars"} <= set(RESULT_PACKAGES)
    assert set(ref_evidence.PACKAGES) <= set(RESULT_PACKAGES)


def test_environment_hash_is_the_reference_environment_hash():
    env = environment()
    assert environment_hash(env) == ref_evidence.environment_hash(env)
    odd = {"python": "3.x", "packages": {"é": "1", "a": None}, "machine": ["list"]}
    assert environment_hash(odd) == ref_evidence.environment_hash(odd)


def test_environment_hash_does_not_depend_on_key_order():
    env = environment()
    reordered = dict(reversed(list(env.items())))
    reordered["packages"] = dict(reversed(list(env["packages"].items())))
    assert environment_hash(reordered) == environment_hash(env)
    moved = {**env, "packages": {**env["packages"], "pandas": "0.0.1"}}
    assert environment_hash(moved) != environment_hash(env)
