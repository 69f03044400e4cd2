"""The tests' dbt launcher (tests/dbt_forks.py) runs dbt forked from a process that imported it
once, and behaves as the ``dbt`` it stands for: the same output and exit status, signals passed
on, and its dbt gone when it is killed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("dbt.cli.main", reason="the dbt extra is not installed")

from dbt_forks import dbt_launcher

INSTALLED_DBT = str(Path(sys.executable).with_name("dbt"))


def run(executable: str, args: list[str], folder: Path) -> tuple[int, str]:
    """Exit status and output of ``executable args`` run in ``folder``."""
    done = subprocess.run(
        [executable, *args], cwd=folder, capture_output=True, text=True, timeout=120
    )
    return done.returncode, done.stdout + done.stderr


def processes_in(folder: Path) -> list[int]:
    """The pids of the processes whose working folder is ``folder``."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "cwd").resolve() == folder.resolve():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def waiting_dbt_init(folder: Path) -> subprocess.Popen:
    """``dbt init`` through the launcher in ``folder``, once its dbt waits for a project name."""
    folder.mkdir()
    launched = subprocess.Popen(
        [dbt_launcher(), "init"],
        cwd=folder,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while len(processes_in(folder)) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(processes_in(folder)) == 2, "the launcher and its dbt"
    return launched


def test_dbt_through_the_launcher_prints_and_exits_as_the_installed_dbt(tmp_path):
    missing = ["--quiet", "parse", "--project-dir", str(tmp_path / "no-project")]
    for args in (["--version"], missing):
        assert run(dbt_launcher(), args, tmp_path) == run(INSTALLED_DBT, args, tmp_path)
    assert run(dbt_launcher(), missing, tmp_path)[0] != 0


def test_a_signal_to_the_launcher_ends_its_dbt_and_the_launcher_ends_by_it(tmp_path):
    launched = waiting_dbt_init(tmp_path / "init")

    launched.send_signal(signal.SIGTERM)

    assert launched.wait(timeout=60) == -signal.SIGTERM
    assert processes_in(tmp_path / "init") == []


def test_a_killed_launcher_leaves_no_dbt_running(tmp_path):
    launched = waiting_dbt_init(tmp_path / "init")
    (dbt_pid,) = [pid for pid in processes_in(tmp_path / "init") if pid != launched.pid]

    launched.kill()
    launched.wait(timeout=60)

    deadline = time.monotonic() + 60
    while processes_in(tmp_path / "init") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert processes_in(tmp_path / "init") == []
    with pytest.raises(ProcessLookupError):
        os.kill(dbt_pid, 0)
