"""The lineage CLI as a user meets it: each command's wall time as its own process, beside the
interpreter's own start (``python -c pass``) measured in the same rounds, and what keeping the
index in step with the record files costs each command.

Generates the records as ``store_bench.py`` does (100,000 over 50 tasks, 20,000 in task X),
builds the index, runs every command once to warm up, then ``--repeats`` rounds, each running
the baseline and every command once in turn; prints medians of wall and CPU seconds.

    python bench/cli_bench.py                          # 100,000 records, 50 tasks
    python bench/cli_bench.py --usecase-dir /tmp/x     # reuse (or generate into and keep) /tmp/x
    python bench/cli_bench.py --records 2000 --tasks 5 --big-task 800 --repeats 2   # smoke
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from store_bench import BIG_ASSET, PACKAGE, USECASE, generate, machine

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

#: (label, command line, goal in seconds or None)
COMMANDS = [
    ("--help", ["--help"], None),
    ("lineage list --asset X", ["lineage", "list", "--asset", BIG_ASSET], 0.3),
    ("lineage trace --asset X", ["lineage", "trace", "--asset", BIG_ASSET], 0.3),
    ("lineage list --asset X --json", ["lineage", "list", "--asset", BIG_ASSET, "--json"], 0.3),
    ("lineage search --status error", ["lineage", "search", "--status", "error"], 1.0),
    ("lineage search --status running -t X",
     ["lineage", "search", "--status", "running", "-u", USECASE, "-p", PACKAGE, "--asset",
      BIG_ASSET], 1.0),
]  # fmt: skip
BASELINE = ["-c", "pass"]


def child_env(pycache: str | None) -> dict[str, str]:
    """The commands' environment: this repository first on the path; with ``pycache``, compiled
    modules kept in that folder, as an installed package has them (pip compiles them; a source
    tree under ``PYTHONDONTWRITEBYTECODE`` compiles every module at every start)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "rows")])}
    if pycache is not None:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = pycache
    return env


def run(args: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of ``python args`` in a process of its own."""
    started = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, *args], cwd=cwd, env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        print(f"  ! python {' '.join(args)} exited {os.waitstatus_to_exitcode(status)}")
    return seconds, usage.ru_utime + usage.ru_stime


def in_step_costs(root: Path, repeats: int) -> str:
    """Medians, in this process, of what keeping the index in step costs: listing task X's
    files (one stat each), the whole sync of X, and the sync of every folder (search)."""
    from ubunye_core.store import LineageStore

    store = LineageStore(root)
    task = next(t for t in store.task_paths() if t.endswith(BIG_ASSET.replace("/", ".")))
    every = store.task_paths()
    listing, sync_x, sync_all = [], [], []
    for _ in range(repeats):
        started = time.perf_counter()
        count = len(store._record_entries(store._task_folder(task)))
        listing.append(time.perf_counter() - started)
        started = time.perf_counter()
        store._synced_index([task], whole_store=False)
        sync_x.append(time.perf_counter() - started)
        started = time.perf_counter()
        store._synced_index(every, whole_store=True)
        sync_all.append(time.perf_counter() - started)
    med = statistics.median
    return (
        f"keeping the index in step (in one process, medians of {repeats}): listing task X's "
        f"{count:,} files {med(listing):.3f} s; sync of X (listing + compare with the index) "
        f"{med(sync_x):.3f} s; sync of all {len(every)} folders (a search) {med(sync_all):.3f} s"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--tasks", type=int, default=50)
    parser.add_argument("--big-task", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--usecase-dir", default=None, help="reuse or keep this folder")
    parser.add_argument(
        "--no-bytecode-cache",
        action="store_true",
        help="leave PYTHONDONTWRITEBYTECODE as it is (every module compiled at every start)",
    )
    options = parser.parse_args()
    print(machine())
    print(f"load average {os.getloadavg()[0]:.2f} at the start; "
          f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC")  # fmt: skip
    usecase_dir = Path(options.usecase_dir or tempfile.mkdtemp(prefix="cli-bench-"))
    pycache = None if options.no_bytecode_cache else tempfile.mkdtemp(prefix="cli-bench-pyc-")
    env = child_env(pycache)
    print("bytecode: " + ("as the environment says (PYTHONDONTWRITEBYTECODE="
          f"{os.environ.get('PYTHONDONTWRITEBYTECODE', '')!r})" if pycache is None
          else "cached after the warm-up (as installed packages have it)"))  # fmt: skip
    root = usecase_dir / ".ubunye" / "lineage"
    try:
        if not root.exists():
            started = time.perf_counter()
            generate(root, options.records, options.tasks, options.big_task)
            print(f"generated {options.records:,} records over {options.tasks} tasks "
                  f"({options.big_task:,} in task X, {BIG_ASSET}) in "
                  f"{time.perf_counter() - started:.0f} s")  # fmt: skip
        cli = ["-m", "ubunye_core.cli"]
        seconds, _ = run([*cli, "lineage", "reindex"], usecase_dir, env)
        print(f"reindex (brings the index in step first): {seconds:.1f} s")
        for _, args, _ in COMMANDS:  # warm-up: the OS cache holds the files and the index
            run([*cli, *args], usecase_dir, env)
        times: dict[str, list[tuple[float, float]]] = {"python -c pass": []}
        times.update({label: [] for label, _, _ in COMMANDS})
        for _ in range(options.repeats):
            times["python -c pass"].append(run(BASELINE, usecase_dir, env))
            for label, args, _ in COMMANDS:
                times[label].append(run([*cli, *args], usecase_dir, env))
        base = statistics.median(t[0] for t in times["python -c pass"])
        goals = {label: goal for label, _, goal in COMMANDS}
        print(f"\n| command (median of {options.repeats}) | wall | CPU | wall - baseline | goal |")
        print("|---|---|---|---|---|")
        for label, found in times.items():
            wall = statistics.median(t[0] for t in found)
            cpu = statistics.median(t[1] for t in found)
            goal = goals.get(label)
            verdict = "-" if goal is None else f"< {goal} s: {'met' if wall < goal else 'not met'}"
            print(f"| `{label}` | {wall:.3f} s | {cpu:.3f} s | {wall - base:+.3f} s | {verdict} |")
        print()
        print(in_step_costs(root, options.repeats))
        print(f"load average {os.getloadavg()[0]:.2f} at the end")
    finally:
        if options.usecase_dir is None:
            shutil.rmtree(usecase_dir, ignore_errors=True)
        if pycache is not None:
            shutil.rmtree(pycache, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
