"""``dagster-daemon`` with loop intervals Dagster hard-codes shortened, for tests that wait on
them: ``python tests/quick_daemon.py backfill=2 automation=2 run -w workspace.yaml``.

No ``dagster.yaml`` setting changes either, and each is read at every turn of its loop:

- ``backfill``: the backfill daemon's loop (``dagster._daemon.controller``'s
  ``DEFAULT_DAEMON_INTERVAL_SECONDS``, 30 s). A backfill waits on it twice, to launch its runs
  and to see them done.
- ``automation``: the automation (asset) daemon's loop (``dagster._daemon.asset_daemon``'s
  ``MIN_INTERVAL_LOOP_SECONDS``, 5 s), which bounds how often an automation sensor ticks
  whatever its ``minimum_interval_seconds``.

Everything else the daemon does is Dagster's own, in its own process.
"""

from __future__ import annotations

import importlib
import sys

#: Each loop: the module holding its interval and the interval's name there.
LOOPS = {
    "backfill": ("dagster._daemon.controller", "DEFAULT_DAEMON_INTERVAL_SECONDS"),
    "automation": ("dagster._daemon.asset_daemon", "MIN_INTERVAL_LOOP_SECONDS"),
}


def shorten(loop: str, seconds: float) -> None:
    """Set one loop's interval; fail by name if Dagster moved it."""
    module_name, name = LOOPS[loop]
    module = importlib.import_module(module_name)
    if not hasattr(module, name):
        raise RuntimeError(f"{module_name}.{name} is gone: find where this Dagster sets it")
    setattr(module, name, seconds)


def main(argv: list[str]) -> int:
    """Shorten each ``loop=seconds`` given first, then run ``dagster-daemon`` with the rest."""
    while argv and "=" in argv[0]:
        loop, seconds = argv.pop(0).split("=")
        shorten(loop, float(seconds))
    from dagster._daemon.cli import main as daemon_main

    sys.argv = ["dagster-daemon", *argv]
    return daemon_main()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
