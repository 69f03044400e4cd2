"""What the receipt costs a step under Dagster's multiprocess executor: a chain of 2,000-row
pandas assets run with UbunyeIOManager and with a plain Parquet UPathIOManager, alternating.

    python bench/multiprocess_bench.py [--assets 60] [--rows 2000] [--repeats 3]
                                       [--warmup-assets 3] [--start-method spawn|forkserver]

Each measurement is one `dagster.execute_job` of the whole chain on the multiprocess executor
(every step in its own process, Dagster's default `spawn` unless told otherwise; `forkserver`
preloads dagster, pandas and this module once), on one SQLite-backed DagsterInstance in a temp
dir that both IO managers share. The first asset builds the frame, each next one loads its
upstream and returns it with one column changed. Printed: the machine, the medians of a run's
wall time and of a step's, the ratio, and where a step's time goes, from the run's own event
timestamps: starting the step's process (worker starting to step start), loading the input
(step start to input loaded), the IO manager's write (step output to output handled), the rest
of the step, and the gap before the next step's process starts. A warm-up run of a short chain
(``--warmup-assets``) on each side comes first, untimed. Then, in fresh interpreters, the imports
each side's step process pays before its step starts (dagster, pandas, pyarrow, upath, and
ubunye_dagster on our side), alternating. The load average is printed before and after. The
exit status is 1 when a recorded input digest is not its upstream's output digest.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import dagster as dg
import pandas as pd
from upath import UPath

HERE = Path(__file__).resolve().parent
#: Dagster's console logger at WARNING, so the figures are not buried in event lines.
QUIET_LOGS = {"console": {"config": {"log_level": "WARNING"}}}
#: Modules a forkserver imports once, before forking each step's process: what a code location
#: using either IO manager imports (the forkserver is shared by both sides' runs).
PRELOADED = ["dagster", "pandas", "pyarrow", "ubunye_dagster", "multiprocess_bench"]
#: Folder (under the bench's root) where each step's process leaves its CPU seconds.
CPU_FOLDER = "step_cpu"
#: What a step's process imports before its step starts, on both sides; ours adds ubunye_dagster.
STEP_IMPORTS = "import dagster, pandas, pyarrow, upath"


def step_cpu_hook(root: str) -> dg.HookDefinition:
    """A success hook leaving the CPU seconds the step's process has used (user + system, after
    its output was handled) in ``<root>/step_cpu/<run id>/<step key>``; the same on both sides."""

    @dg.success_hook(name="step_cpu_seconds")
    def step_cpu_seconds(context: dg.HookContext) -> None:
        folder = Path(root) / CPU_FOLDER / context.run_id
        folder.mkdir(parents=True, exist_ok=True)
        times = os.times()
        (folder / context.step_key).write_text(str(times.user + times.system), encoding="utf-8")

    return step_cpu_seconds


class PlainParquetIOManager(dg.UPathIOManager):
    """The baseline: each output a Parquet file through pandas, read back the same way."""

    extension: str = ".parquet"

    def dump_to_path(self, context: dg.OutputContext, obj: pd.DataFrame, path: UPath) -> None:
        """Write the frame as one Parquet file."""
        path.parent.mkdir(parents=True, exist_ok=True)
        obj.to_parquet(str(path), index=False)

    def load_from_path(self, context: dg.InputContext, path: UPath) -> pd.DataFrame:
        """Read the Parquet file back into pandas."""
        return pd.read_parquet(str(path))


def chain_assets(rows: int, count: int) -> list[dg.AssetsDefinition]:
    """``step_0`` builds the seven-column frame; ``step_i`` loads ``step_{i-1}`` and bumps its
    int column."""
    from chain_bench import chained_after

    @dg.asset(name="step_0")
    def step_0() -> pd.DataFrame:
        from io_manager_bench import seven_column_table

        return seven_column_table(rows)

    return chained_after(step_0, count)


def io_manager(side: str, root: str) -> dg.ConfigurableIOManager | dg.IOManager:
    """The plain Parquet manager or UbunyeIOManager (imported only for its side), under ``root``."""
    if side == "plain":
        return PlainParquetIOManager(base_path=UPath(root) / "plain")
    from ubunye_dagster import UbunyeIOManager, UbunyeResource

    return UbunyeIOManager(
        base_path=str(Path(root) / "ubunye" / "data"),
        ubunye=UbunyeResource(usecase_dir=str(Path(root) / "ubunye")),
    )


def chain_job(side: str, root: str, rows: int, count: int) -> dg.JobDefinition:
    """The chain as a job on the multiprocess executor: what each step's process rebuilds."""
    definitions = dg.Definitions(
        assets=chain_assets(rows, count),
        jobs=[dg.define_asset_job("chain", hooks={step_cpu_hook(root)})],
        resources={"io_manager": io_manager(side, root)},
        executor=dg.multiprocess_executor,
    )
    return definitions.resolve_job_def("chain")


def run_config(start_method: str) -> dict:
    """Quiet logs; the executor's start method (a forkserver preloads the heavy imports)."""
    method: dict = {"spawn": {}}
    if start_method == "forkserver":
        method = {"forkserver": {"preload_modules": PRELOADED}}
    return {
        "loggers": QUIET_LOGS,
        "execution": {"config": {"start_method": method}},
    }


def timed_run(job, instance: dg.DagsterInstance, config: dict) -> tuple[float, str, object]:
    """Wall seconds of one `execute_job` of the chain, its run id and result; raises on failure."""
    started = time.perf_counter()
    result = dg.execute_job(job, instance=instance, run_config=config)
    elapsed = time.perf_counter() - started
    if not result.success:
        raise RuntimeError(f"bench run {result.run_id} failed")
    return elapsed, result.run_id, result


#: A step's spans: (name, event it starts at, event it ends at), from the run's event log.
SPANS = (
    ("process start", "STEP_WORKER_STARTING", "STEP_START"),
    ("load input", "STEP_START", "LOADED_INPUT"),
    ("input to output", "LOADED_INPUT", "STEP_OUTPUT"),
    ("write output", "STEP_OUTPUT", "HANDLED_OUTPUT"),
    ("output to success", "HANDLED_OUTPUT", "STEP_SUCCESS"),
)


def step_spans(instance: dg.DagsterInstance, run_id: str, root: str) -> dict[str, list[float]]:
    """Seconds of each span of every step but the first (which loads no input), the gap from a
    step's success to the next step's worker starting, and each step process's CPU seconds."""
    first: dict[tuple[str, str], float] = {}
    for entry in instance.all_logs(run_id):
        event = entry.dagster_event
        if event is not None and event.step_key:
            first.setdefault((event.step_key, event.event_type_value), entry.timestamp)
    steps = sorted(
        {step for step, _ in first if step != "step_0"}, key=lambda key: int(key.split("_")[1])
    )
    spans: dict[str, list[float]] = defaultdict(list)
    for step in steps:
        for name, begin, end in SPANS:
            spans[name].append(first[(step, end)] - first[(step, begin)])
        spans["whole step"].append(
            first[(step, "STEP_SUCCESS")] - first[(step, "STEP_WORKER_STARTING")]
        )
        before = f"step_{int(step.split('_')[1]) - 1}"
        spans["gap after the previous step"].append(
            first[(step, "STEP_WORKER_STARTING")] - first[(before, "STEP_SUCCESS")]
        )
        cpu_file = Path(root) / CPU_FOLDER / run_id / step
        spans["CPU of the step's process"].append(float(cpu_file.read_text(encoding="utf-8")))
    return spans


def reconstructable_chain(side: str, root: str, rows: int, count: int):
    """The chain job as each step's process rebuilds it: by importing this module."""
    return dg.build_reconstructable_job(
        "multiprocess_bench",
        "chain_job",
        reconstructable_kwargs={"side": side, "root": root, "rows": rows, "count": count},
        reconstructor_working_directory=str(HERE),
    )


def import_seconds(repeats: int) -> dict[str, tuple[float, float]]:
    """Median wall and CPU seconds of a fresh interpreter doing each side's step imports,
    alternating ``repeats`` times (CPU from the children's resource usage)."""
    sources = {"plain": STEP_IMPORTS, "ubunye": f"{STEP_IMPORTS}, ubunye_dagster"}
    found: dict[str, list[tuple[float, float]]] = {side: [] for side in sources}
    for repeat in range(repeats):
        for side in sorted(sources, reverse=repeat % 2 == 1):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            started = time.perf_counter()
            subprocess.run([sys.executable, "-c", sources[side]], check=True)
            wall = time.perf_counter() - started
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
            found[side].append((wall, cpu))
    return {
        side: (statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs))
        for side, runs in found.items()
    }


def measure(args: argparse.Namespace) -> tuple[dict[str, list[float]], dict, list[str]]:
    """Alternate the two sides ``repeats`` times after a short warm-up chain; returns each side's
    run seconds, the median spans of a step per side, and every broken digest link."""
    from chain_bench import broken_links

    runs: dict[str, list[float]] = {"plain": [], "ubunye": []}
    spans: dict[str, dict[str, list[float]]] = {"plain": defaultdict(list), "ubunye": {}}
    spans["ubunye"] = defaultdict(list)
    wrong: list[str] = []
    config = run_config(args.start_method)
    with (
        tempfile.TemporaryDirectory() as folder,
        dg.DagsterInstance.local_temp(tempdir=folder) as instance,
    ):
        for side in runs:  # warms up the page cache and the first imports; not timed
            warm_up = reconstructable_chain(side, folder, args.rows, args.warmup_assets)
            timed_run(warm_up, instance, config)
        jobs = {side: reconstructable_chain(side, folder, args.rows, args.assets) for side in runs}
        for repeat in range(args.repeats):
            order = ["plain", "ubunye"] if repeat % 2 == 0 else ["ubunye", "plain"]
            for side in order:
                seconds, run_id, result = timed_run(jobs[side], instance, config)
                if side == "ubunye":
                    wrong += broken_links(result)
                runs[side].append(seconds)
                for name, values in step_spans(instance, run_id, folder).items():
                    spans[side][name].extend(values)
    return runs, spans, wrong


def print_figures(args, runs: dict[str, list[float]], spans: dict, wrong: list[str]) -> None:
    """The medians, the ratio, and a step's spans side by side."""
    med = {side: statistics.median(values) for side, values in runs.items()}
    print(
        f"{args.assets} chained assets of {args.rows:,} rows on the multiprocess executor "
        f"(start method {args.start_method}), SQLite DagsterInstance in a temp dir, "
        f"{args.repeats} alternating repeats (after a {args.warmup_assets}-asset warm-up), "
        "medians:"
    )
    extra = (med["ubunye"] - med["plain"]) / args.assets * 1000
    print(
        f"  a run:   parquet UPathIOManager {med['plain']:7.2f}s   UbunyeIOManager "
        f"{med['ubunye']:7.2f}s   ratio {med['ubunye'] / med['plain']:4.2f}x   "
        f"({extra:+.1f} ms an asset)"
    )
    print(
        f"  a step:  parquet UPathIOManager {med['plain'] / args.assets * 1000:7.1f}ms  "
        f"UbunyeIOManager {med['ubunye'] / args.assets * 1000:7.1f}ms  (run / assets)"
    )
    print(f"  a step's spans from its events (steps 1 to {args.assets - 1}, medians, ms):")
    names = [name for name, _, _ in SPANS] + ["whole step", "gap after the previous step"]
    names.append("CPU of the step's process")
    for name in names:
        plain = statistics.median(spans["plain"][name]) * 1000
        ours = statistics.median(spans["ubunye"][name]) * 1000
        print(f"    {name:<28} plain {plain:8.1f}   ubunye {ours:8.1f}   ({ours - plain:+.1f})")
    print(f"  every input digest is its upstream's output digest: {'yes' if not wrong else 'NO'}")
    for line in wrong[:10]:
        print(f"  DIFFERENT {line}")


def print_imports(imports: dict[str, tuple[float, float]], repeats: int) -> None:
    """What a fresh interpreter takes to import each side's step modules."""
    (plain_wall, plain_cpu), (ours_wall, ours_cpu) = imports["plain"], imports["ubunye"]
    print(
        f"  a step process's imports in a fresh interpreter ({STEP_IMPORTS}; ours adds "
        f"ubunye_dagster), medians of {repeats}:"
    )
    print(
        f"    wall  plain {plain_wall * 1000:8.1f}   ubunye {ours_wall * 1000:8.1f}   "
        f"({(ours_wall - plain_wall) * 1000:+.1f} ms)"
    )
    print(
        f"    CPU   plain {plain_cpu * 1000:8.1f}   ubunye {ours_cpu * 1000:8.1f}   "
        f"({(ours_cpu - plain_cpu) * 1000:+.1f} ms)"
    )


def main(argv: list[str] | None = None) -> int:
    """Run the chain on both sides, alternating, and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--assets", type=int, default=60)
    parser.add_argument("--rows", type=int, default=2_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--warmup-assets", type=int, default=3)
    parser.add_argument("--import-repeats", type=int, default=5)
    parser.add_argument("--start-method", choices=["spawn", "forkserver"], default="spawn")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(HERE))
    from io_manager_bench import load_average, machine

    print(machine())
    print(f"before: {load_average()}", flush=True)
    runs, spans, wrong = measure(args)
    imports = import_seconds(args.import_repeats)
    print_figures(args, runs, spans, wrong)
    print_imports(imports, args.import_repeats)
    print(f"after: {load_average()}")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
