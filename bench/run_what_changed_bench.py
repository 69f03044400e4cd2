"""Steps run and wall time of simulated days under the real automation daemon: ``eager()`` on
sources observed by their files' modification times (what a project without receipts has)
against ``on_content_change()`` on sources observed by their rows.

    python bench/run_what_changed_bench.py [--sources 5] [--depth 3] [--days 3]

The graph is ``tests/locations/content_shop.py``'s: each source read by a chain of ``--depth``
assets, neighbouring chains joined, one report (5 sources, depth 3: 20 assets), every step in a
process of its own (the multiprocess executor). Day 0 builds everything; on each later day every
source file is written again, one source (in turn) with new rows and the others with the same
rows in another order. Both modes run the same days one after the other in this process, each
under its own ``dagster-daemon run``; a day's wall time runs from the sources' observation to the
end of the last run the daemon requested for it.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path[:0] = [str(BENCH), str(BENCH.parent / "tests"), str(BENCH.parent)]

from automation_daemon import Shop, daemon_over, materialisations  # noqa: E402
from io_manager_bench import load_average, machine  # noqa: E402

#: What each mode is called in the table.
MODES = {"eager": "eager(), sources by mtime", "content": "on_content_change(), by rows"}


def run_days(mode: str, folder: Path, sources: int, depth: int, days: int) -> tuple[int, float]:
    """The steps run and the seconds taken on days 1..``days`` (day 0, the build, left out)."""
    shop = Shop(folder, sources=sources, depth=depth, mode=mode, executor="multiprocess")
    with daemon_over(shop) as daemon:
        daemon.day(0, set(), timeout=1800)
        built = sum(materialisations(daemon.instance, key) for key in shop.assets())
        seconds = 0.0
        for day in range(1, days + 1):
            taken = daemon.day(day, {(day - 1) % sources}, timeout=1800)
            print(f"  {mode:<8} day {day}: {taken:6.1f} s", flush=True)
            seconds += taken
        steps = sum(materialisations(daemon.instance, key) for key in shop.assets()) - built
        if daemon.failed_runs():
            raise SystemExit(f"{mode}: runs failed: {daemon.failed_runs()}")
    return steps, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sources", type=int, default=5)
    parser.add_argument("--depth", type=int, default=3)
    parser.add_argument("--days", type=int, default=3)
    args = parser.parse_args()
    print(machine())
    print(f"before: {load_average()}")
    results = {}
    with tempfile.TemporaryDirectory(prefix="run-what-changed-") as root:
        for mode in MODES:
            results[mode] = run_days(mode, Path(root) / mode, args.sources, args.depth, args.days)
    assets = args.sources * args.depth + args.sources
    print(f"after: {load_average()}")
    print(
        f"{assets} assets below {args.sources} sources, {args.days} days, one source changed "
        "a day, multiprocess executor"
    )
    for mode, (steps, seconds) in results.items():
        print(f"{MODES[mode]:<30} steps {steps:4d}   wall {seconds:7.1f} s")
    (eager_steps, eager_seconds), (content_steps, content_seconds) = results.values()
    print(
        f"on_content_change ran {1 - content_steps / eager_steps:.0%} fewer steps; "
        f"wall time ratio (content / eager) {content_seconds / eager_seconds:.2f}"
    )


if __name__ == "__main__":
    main()
