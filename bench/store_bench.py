"""The lineage store at scale: each CLI command's time and peak memory, with and without the index.

Generates N records over T tasks (one task holds ``--big-task`` of them), copies of one real
record (real rows-v1 hashes of a small frame, this interpreter's environment, the example
project's code hash) with their own run ids, start times, statuses and partitions; file times
follow the start times. Then runs each command as its own process (``python -m
ubunye_core.cli``, output to /dev/null), with the index and with ``--no-index``, alternating,
and prints the median wall time and the peak resident set of the process (``wait4``).

    python bench/store_bench.py                          # 100,000 records, 50 tasks
    python bench/store_bench.py --records 2000 --tasks 5 --big-task 800 --repeats 1   # smoke
    python bench/store_bench.py --only-object-store --object-store-records 10000

It ends with the first use of an object store (``memory://``): the first search reads every
record into the local index cache, the second only lists.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

USECASE, PACKAGE = "bench", "daily"
BIG_ASSET = "sales/orders"
FIRST_START = datetime(2024, 1, 1, tzinfo=timezone.utc)
LAST_START = datetime(2026, 11, 30, tzinfo=timezone.utc)
SINCE = "2025-03-01"


def machine() -> str:
    """The CPU model and whether it has SHA-NI, as /proc/cpuinfo says."""
    model, sha_ni = platform.processor() or "unknown CPU", 0
    with open("/proc/cpuinfo", encoding="utf-8") as info:
        for line in info:
            if line.startswith("model name") and model in ("", "unknown CPU", "x86_64"):
                model = line.split(":", 1)[1].strip()
            if line.startswith("flags") and "sha_ni" in line.split():
                sha_ni += 1
    return (
        f"CPU: {model}, {os.cpu_count()} cores, SHA-NI: {'yes' if sha_ni else 'no'} "
        f"(sha_ni on {sha_ni} cores); Python {platform.python_version()}"
    )


def template_record() -> str:
    """One real run record as JSON text with the fields the copies change blanked."""
    import pandas as pd

    from ubunye_core.records.model import RunRecord, StepRecord
    from ubunye_rows import fingerprint
    from ubunye_rows.evidence import code_hash, environment, environment_hash

    frame = pd.DataFrame({"id": range(100), "amount": [i * 1.5 for i in range(100)]})
    env = environment()
    step = {"format": "parquet", "hash_seconds": 0.004, "hash_basis": "materialised"}
    record = RunRecord(
        run_id="RUN",
        usecase=USECASE,
        package=PACKAGE,
        task_name="TASK",
        started_at="START",
        ended_at="END",
        duration_sec=1.25,
        status="STATUS",
        inputs=[StepRecord.from_fingerprint(fingerprint(frame), name="raw", direction="input",
                                            location="/data/raw.parquet", **step)],
        outputs=[StepRecord.from_fingerprint(fingerprint(frame.head(50)), name="result",
                                             direction="output", location="/data/out.parquet",
                                             **step)],
        engine_version="ubunye-dagster 0.1.0",
        backend="pandas",
        variables={"partition_key": "PARTITION"},
        code_hash=code_hash(REPO / "example_project" / "assets"),
        environment=env,
        environment_hash=environment_hash(env),
        timings=[{"step": "write", "output": "result", "seconds": 0.006}],
        time_zone="UTC",
    )  # fmt: skip
    return record.to_json() + "\n"


def task_names(tasks: int) -> list[str]:
    from ubunye_core.store import task_name_for_key

    others = [task_name_for_key(["sales", f"asset_{i:03d}"]) for i in range(1, tasks)]
    return [task_name_for_key(BIG_ASSET.split("/")), *others]


def generate(root: Path, records: int, tasks: int, big_task: int) -> None:
    """Write ``records`` copies of the template: ``big_task`` in the first task, the rest spread
    over the others; 90 % success, 8 % error, 2 % running; monthly partitions; file time =
    start time + 1 s."""
    text = template_record()
    names = task_names(tasks)
    counts = [big_task] + [
        (records - big_task) // (tasks - 1) + (1 if i < (records - big_task) % (tasks - 1) else 0)
        for i in range(tasks - 1)
    ]
    span = (LAST_START - FIRST_START).total_seconds()
    for name, count in zip(names, counts, strict=True):
        folder = root / USECASE / PACKAGE / name
        folder.mkdir(parents=True)
        body = text.replace('"TASK"', f'"{name}"', 1).replace('/TASK"', f'/{name}"', 1)
        for i in range(count):
            start = FIRST_START + timedelta(seconds=span * (i + 0.5) / count)
            status = (
                "error" if i % 50 in (3, 17, 29, 41) else "running" if i % 50 == 7 else "success"
            )
            run_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{name}/{i}"))
            document = (
                body.replace('"RUN"', f'"{run_id}"', 1)
                .replace('"START"', f'"{start.isoformat()}"', 1)
                .replace('"END"', f'"{(start + timedelta(seconds=1.25)).isoformat()}"', 1)
                .replace('"STATUS"', f'"{status}"', 1)
                .replace('"PARTITION"', f'"{start:%Y-%m}"', 1)
            )
            path = folder / f"{run_id}.json"
            path.write_text(document, encoding="utf-8")
            stamp = start.timestamp() + 1
            os.utime(path, (stamp, stamp))


# Runs a command's Python code and, at exit, writes the process's peak resident set (VmHWM,
# which starts afresh at exec, unlike getrusage's ru_maxrss, which keeps the forking parent's).
_PEAK_WRAPPER = """
import atexit, os, sys
def _peak():
    with open("/proc/self/status") as status, open(os.environ["STORE_BENCH_PEAK"], "w") as out:
        out.write(next(line for line in status if line.startswith("VmHWM")).split()[1])
atexit.register(_peak)
code, sys.argv = sys.argv[1], ["bench", *sys.argv[2:]]
exec(compile(code, "<bench>", "exec"))
"""
CLI = "import sys; from ubunye_core.cli import main; sys.exit(main())"
REFERENCE = "import sys; from ubunye.cli.main import main; sys.argv[0] = 'ubunye'; sys.exit(main())"


def run(code: str, args: list[str], usecase_dir: Path) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds, peak resident MB) of ``code`` run with ``args`` in a process
    of its own (CPU time from ``wait4``: the machine is shared, wall time is noisy)."""
    with tempfile.NamedTemporaryFile("r", suffix=".peak") as peak:
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "rows")]),
            "STORE_BENCH_PEAK": peak.name,
        }
        started = time.perf_counter()
        child = subprocess.Popen(
            [sys.executable, "-c", _PEAK_WRAPPER, code, *args],
            cwd=usecase_dir,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        _, status, usage = os.wait4(child.pid, 0)
        seconds = time.perf_counter() - started
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode != 0:
            print(f"  ! {' '.join(args)} exited {child.returncode}")
        return seconds, usage.ru_utime + usage.ru_stime, int(peak.read() or 0) / 1024


def commands(big_task: str) -> list[tuple[str, list[str]]]:
    lineage = ["lineage"]
    return [
        ("list --asset X (newest 10)", [*lineage, "list", "--asset", BIG_ASSET]),
        ("trace --asset X", [*lineage, "trace", "--asset", BIG_ASSET]),
        ("compare --asset X", [*lineage, "compare", "--asset", BIG_ASSET]),
        ("search --status error", [*lineage, "search", "--status", "error"]),
        ("search --status success", [*lineage, "search", "--status", "success"]),
        (f"search --since {SINCE}", [*lineage, "search", "--since", SINCE]),
        ("search -u -p -t X --status running",
         [*lineage, "search", "-u", USECASE, "-p", PACKAGE, "-t", big_task, "--status", "running"]),
        ("search --status error --json", [*lineage, "search", "--status", "error", "--json"]),
        (f"search --since {SINCE} --json", [*lineage, "search", "--since", SINCE, "--json"]),
    ]  # fmt: skip


def object_store_first_use(records: int, tasks: int) -> None:
    """Time the first search on a ``memory://`` store (every record read into the local index
    cache) and a second one (listing only), in this process, with the cache in a temp folder."""
    from ubunye_core.store import LineageStore
    from ubunye_core.store.queries import RunSearch

    text = template_record()
    url = f"memory://store-bench-{uuid.uuid4().hex}/lineage"
    names = task_names(tasks)
    store = LineageStore(url)
    for i in range(records):
        name = names[i % tasks]
        run_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{name}/{i}"))
        body = text.replace('"TASK"', f'"{name}"', 1).replace('/TASK"', f'/{name}"', 1)
        body = body.replace('"RUN"', f'"{run_id}"', 1).replace('"START"', '"2026-01-01T00:00:00Z"')
        body = body.replace('"STATUS"', '"error"' if i % 12 == 0 else '"success"', 1)
        path = store.path_for(f"{USECASE}/{PACKAGE}/{name}", run_id)
        path.fs.pipe_file(path.path, body.encode())
    with tempfile.TemporaryDirectory() as cache:
        os.environ["UBUNYE_INDEX_CACHE_DIR"] = cache
        for label in ("first search (reads every record)", "second search (listing only)"):
            started, cpu = time.perf_counter(), time.process_time()
            found = sum(
                1 for _ in store.iter_search(RunSearch(status="error"), with_documents=False)
            )
            print(f"memory:// {records:,} records over {tasks} tasks, {label}: "
                  f"{time.perf_counter() - started:.2f}s ({time.process_time() - cpu:.2f}s CPU), "
                  f"{found:,} found")  # fmt: skip
    store.root.fs.rm(store.root.path, recursive=True)


def cell(results: list[tuple[float, float, float]]) -> str:
    """Median wall time and median CPU time of repeated runs."""
    wall = statistics.median(r[0] for r in results)
    return f"{wall:.2f} s ({statistics.median(r[1] for r in results):.2f} s)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--tasks", type=int, default=50)
    parser.add_argument("--big-task", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=3, help="runs per command, with index")
    parser.add_argument("--scan-repeats", type=int, default=1, help="runs without the index")
    parser.add_argument("--keep", default=None, help="generate into this folder and keep it")
    parser.add_argument(
        "--object-store-records",
        type=int,
        default=10_000,
        help="records of the memory:// first-use measure (0: skip it)",
    )
    parser.add_argument("--only-object-store", action="store_true",
                        help="only the memory:// first-use measure")  # fmt: skip
    options = parser.parse_args()
    print(machine())
    if options.only_object_store:
        object_store_first_use(options.object_store_records, options.tasks)
        return 0
    print(f"{options.records:,} records over {options.tasks} tasks, {options.big_task:,} in "
          f"task X ({BIG_ASSET}); {datetime.now(timezone.utc):%Y-%m-%d}")  # fmt: skip
    usecase_dir = Path(options.keep or tempfile.mkdtemp(prefix="store-bench-"))
    root = usecase_dir / ".ubunye" / "lineage"
    try:
        started = time.perf_counter()
        generate(root, options.records, options.tasks, options.big_task)
        size = sum(f.stat().st_size for f in root.rglob("*.json")) / 1e6
        print(f"generated in {time.perf_counter() - started:.1f}s, {size:.0f} MB of records")
        reindex = ["lineage", "reindex", "--json"]
        seconds, cpu, peak = run(CLI, [*reindex, "--full"], usecase_dir)
        index_mb = sum(p.stat().st_size for p in root.glob(".ubunye-index.sqlite3*")) / 1e6
        print(f"reindex --full (every record read once): {seconds:.1f}s ({cpu:.1f}s CPU), "
              f"{peak:.0f} MB peak; index {index_mb:.0f} MB")  # fmt: skip
        seconds, cpu, peak = run(CLI, reindex, usecase_dir)
        print(f"reindex, nothing changed: {seconds:.2f}s ({cpu:.2f}s CPU), {peak:.0f} MB peak")
        reference = ["lineage", "trace", "-d", ".", "-u", USECASE, "-p", PACKAGE,
                     "-t", task_names(1)[0]]  # fmt: skip
        print()
        print("| command | with index: wall (CPU) | peak | without index: wall (CPU) | peak "
              "| without/with (wall) |")  # fmt: skip
        print("|---|---|---|---|---|---|")
        for label, args in commands(task_names(1)[0]):
            indexed, scanned = [], []
            for repeat in range(max(options.repeats, options.scan_repeats)):
                if repeat < options.scan_repeats:
                    scanned.append(run(CLI, [*args, "--no-index"], usecase_dir))
                if repeat < options.repeats:
                    indexed.append(run(CLI, args, usecase_dir))
            with_s, without_s = cell(indexed), cell(scanned)
            ratio = statistics.median(r[0] for r in scanned) / statistics.median(
                r[0] for r in indexed
            )
            print(f"| `{label}` | {with_s} | {max(r[2] for r in indexed):.0f} MB | "
                  f"{without_s} | {max(r[2] for r in scanned):.0f} MB | {ratio:.1f}x |",
                  flush=True)  # fmt: skip
        results = [run(REFERENCE, reference, usecase_dir) for _ in range(options.repeats)]
        print(f"| reference `ubunye lineage trace -t X` | - | - | {cell(results)} | "
              f"{max(r[2] for r in results):.0f} MB | - |")  # fmt: skip
        if options.object_store_records:
            print()
            object_store_first_use(options.object_store_records, options.tasks)
    finally:
        if options.keep is None:
            shutil.rmtree(usecase_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
