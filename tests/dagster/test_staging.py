"""What a killed writer staged beside the data is removed by a later write and by
`ubunye-dagster clean`; a live writer's staging entry is never touched."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from ubunye_core.cli import main
from ubunye_core.materialisations.staging import TEMP_MARK, staging_name, this_host, writer_of

#: A writer process: stages a partial file beside TARGET the way the IO manager does, prints its
#: name, then either is killed (-9) mid-write or keeps writing until its stdin closes.
WRITER = textwrap.dedent(
    """
    import os, signal, sys
    from upath import UPath
    from ubunye_dagster.io.handlers import arrow_files

    staged = arrow_files.temporary_sibling(UPath(sys.argv[1]))
    with open(str(staged), "wb") as handle:
        handle.write(b"PAR1 partial")
        handle.flush()
        print(staged, flush=True)
        if sys.argv[2] == "killed":
            os.kill(os.getpid(), signal.SIGKILL)
        sys.stdin.read()
    """
)


def start_writer(target: Path, fate: str) -> tuple[subprocess.Popen, Path]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    process = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(target), fate],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    staged = Path(process.stdout.readline().strip())
    assert staged.name.startswith(TEMP_MARK) and staged.exists()
    if fate == "killed":
        assert process.wait(timeout=30) == -9
    return process, staged


@pytest.fixture
def writers(tmp_path):
    """A killed writer's and a live writer's staging files beside data/prices.parquet."""
    target = tmp_path / "data" / "prices.parquet"
    target.parent.mkdir(parents=True)
    _, dead = start_writer(target, "killed")
    live_process, live = start_writer(target, "live")
    yield dead, live
    live_process.stdin.close()
    live_process.wait(timeout=30)


@dg.asset
def prices() -> pd.DataFrame:
    return pd.DataFrame({"sku": ["a"], "price": [1.0]})


def test_a_later_write_removes_a_killed_writers_staging_file_and_keeps_a_live_writers(
    tmp_path, writers
):
    from ubunye_dagster import UbunyeIOManager, UbunyeResource

    dead, live = writers
    manager = UbunyeIOManager(
        base_path=str(tmp_path / "data"), ubunye=UbunyeResource(usecase_dir=str(tmp_path))
    )
    assert dg.materialize([prices], resources={"io_manager": manager}).success
    assert not dead.exists()
    assert live.exists()
    assert sorted(p.name for p in dead.parent.iterdir()) == sorted(["prices.parquet", live.name])


def test_clean_removes_a_killed_writers_staging_file_and_keeps_a_live_writers(
    tmp_path, writers, capsys
):
    dead, live = writers
    assert main(["clean", str(tmp_path / "data"), "--dry-run"]) == 0
    assert dead.exists() and str(dead) in capsys.readouterr().out
    assert main(["clean", str(tmp_path / "data")]) == 0
    out = capsys.readouterr().out
    assert not dead.exists() and live.exists()
    assert out.splitlines() == [str(dead), "removed 1 staging entry left by dead writers"]


def test_another_hosts_staging_entry_is_removed_by_clean_only_once_it_is_old(tmp_path):
    folder = tmp_path / "data" / "nested"
    folder.mkdir(parents=True)
    name = staging_name("prices.parquet").replace(this_host(), "other-host", 1)
    assert writer_of(name).host == "other-host"
    fresh, old = folder / name, folder / name.replace("prices", "orders")
    for path in (fresh, old):
        path.write_bytes(b"PAR1")
    two_days_ago = time.time() - 2 * 24 * 3600
    os.utime(old, (two_days_ago, two_days_ago))

    assert main(["clean", str(tmp_path / "data")]) == 0
    assert fresh.exists() and not old.exists()
    assert main(["clean", str(tmp_path / "data"), "--older-than", "0"]) == 0
    assert not fresh.exists()


def test_a_staging_name_records_host_process_and_its_start_time():
    writer = writer_of(staging_name("x.parquet"))
    assert writer is not None
    assert (writer.host, writer.pid) == (this_host(), os.getpid())
    assert writer.start > 0 or not Path("/proc/self/stat").exists()
