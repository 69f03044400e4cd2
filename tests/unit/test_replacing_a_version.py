"""A local write replaces the stored version in one atomic rename and leaves freeing the old
version's blocks to a daemon thread: the new version is in place at once, the old one is gone
once the removals settle, and what a killed process left aside is a dead writer's staging entry."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import fsspec

from ubunye_core.materialisations import removals
from ubunye_core.materialisations.removals import replace_local, settle_removals
from ubunye_core.materialisations.staging import TEMP_MARK, remove_dead_staging, writer_of


def written(path, text: str):
    path.write_text(text)
    return path


def test_a_replaced_file_is_the_new_version_at_once_and_alone_once_removals_settle(tmp_path):
    final = written(tmp_path / "prices.parquet", "old")
    replace_local(str(written(tmp_path / "staged", "new")), str(final))
    assert final.read_text() == "new"
    settle_removals()
    assert [p.name for p in tmp_path.iterdir()] == ["prices.parquet"]


def test_a_reader_of_the_old_version_reads_it_whole_after_the_replace(tmp_path):
    final = written(tmp_path / "prices.parquet", "old version")
    with open(final) as reader:
        assert reader.read(4) == "old "
        replace_local(str(written(tmp_path / "staged", "new")), str(final))
        settle_removals()
        assert reader.read() == "version"
    assert final.read_text() == "new"


def test_a_replaced_folder_is_the_new_folder_at_once_and_alone_once_removals_settle(tmp_path):
    final, staged = tmp_path / "table", tmp_path / "staged"
    final.mkdir()
    written(final / "part-0", "old")
    staged.mkdir()
    written(staged / "part-0", "new")
    replace_local(str(staged), str(final))
    assert (final / "part-0").read_text() == "new"
    settle_removals()
    assert [p.name for p in tmp_path.iterdir()] == ["table"]


def test_a_first_write_and_a_file_system_without_hard_links_rename_in_one_step(
    tmp_path, monkeypatch
):
    final = tmp_path / "prices.parquet"
    replace_local(str(written(tmp_path / "staged", "first")), str(final))
    assert final.read_text() == "first"

    def no_hard_links(source, target):
        raise OSError(95, "Operation not supported", source)

    monkeypatch.setattr(removals.os, "link", no_hard_links)
    replace_local(str(written(tmp_path / "staged", "second")), str(final))
    settle_removals()
    assert final.read_text() == "second"
    assert [p.name for p in tmp_path.iterdir()] == ["prices.parquet"]


#: A process that replaces TARGET while its removal thread is busy, then dies before removing.
KILLED_BEFORE_REMOVING = textwrap.dedent(
    """
    import os, sys, threading
    from ubunye_core.materialisations import removals

    busy = threading.Event()
    removals._REMOVALS.queue(busy.wait)
    with open(sys.argv[2], "w") as staged:
        staged.write("new")
    removals.replace_local(sys.argv[2], sys.argv[1])
    os._exit(0)
    """
)


def test_what_a_process_left_aside_when_it_died_is_removed_by_the_next_sweep(tmp_path):
    final = written(tmp_path / "prices.parquet", "old")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    subprocess.run(
        [sys.executable, "-c", KILLED_BEFORE_REMOVING, str(final), str(tmp_path / "staged")],
        check=True,
        env=env,
    )
    [aside] = [p for p in tmp_path.iterdir() if p.name.startswith(TEMP_MARK)]
    assert writer_of(aside.name) is not None and aside.read_text() == "old"
    assert final.read_text() == "new"

    removed = remove_dead_staging(fsspec.filesystem("file"), str(tmp_path))
    assert [os.path.basename(path) for path in removed] == [aside.name]
    assert [p.name for p in tmp_path.iterdir()] == ["prices.parquet"]
