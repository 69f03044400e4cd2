"""Screenshot the receipt in the Dagster UI: an asset's Overview tab (its summary), its latest
materialisation (Events), its Checks tab, and a drift sensor's tick that flagged drift with the
reproducibility check it failed.

Needs Debian's Chromium (this script installs nothing):

    apt-get update && apt-get install -y chromium
    python scripts/screenshot_ui.py   # writes the docs/ui-*.png pictures

It starts `dagster dev` on 127.0.0.1 with a throw-away DAGSTER_HOME and example home, serving
the example shop and the drift demo (`example_project.drift_demo`). Through GraphQL it runs the
shop's main job twice (so the latest materialisation's summary is judged against the one
before) and the demo's planted non-deterministic asset twice, waits until the daemon's tick of
the demo's drift sensor flags it, then points headless Chromium at the pages. Everything it
started is ended before it returns.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from example_project.definitions import DRIFT_SENSOR, MAIN_JOB  # noqa: E402
from example_project.drift_demo import DEMO_ASSET, DEMO_JOB  # noqa: E402
from example_project.run import DAYS, TRACED_ASSET  # noqa: E402
from example_project.webserver import LOCATION, DagsterDev, WebserverError  # noqa: E402
from ubunye_dagster.drift.check_spec import CHECK_NAME  # noqa: E402
from ubunye_dagster.drift.wording import NOTHING_NEW  # noqa: E402

DOCS = REPO_ROOT / "docs"
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")
DEMO_LOCATION = "drift_demo"
#: The example shop and the drift demo, each its own code location.
WORKSPACE_YAML = f"""\
load_from:
  - python_module:
      module_name: example_project
      working_directory: {REPO_ROOT}
      location_name: {LOCATION}
  - python_module:
      module_name: example_project.drift_demo
      working_directory: {REPO_ROOT}
      location_name: {DEMO_LOCATION}
"""


def find_chromium() -> str:
    """The Chromium executable on PATH, or a SystemExit saying how to install it."""
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    raise SystemExit("Chromium not found: apt-get update && apt-get install -y chromium")


def screenshot(url: str, output: Path, profile: Path, width: int, height: int) -> None:
    """Render `url` headless (no GPU, no sync, no background traffic) and save a PNG."""
    output.parent.mkdir(parents=True, exist_ok=True)
    command = [
        find_chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        f"--user-data-dir={profile}",
        f"--window-size={width},{height}",
        # The UI is a JavaScript app: let it fetch and render before the picture is taken.
        "--virtual-time-budget=20000",
        f"--screenshot={output}",
        url,
    ]
    subprocess.run(command, check=True, timeout=120, capture_output=True)
    if not output.exists() or output.stat().st_size == 0:
        raise SystemExit(f"Chromium wrote no screenshot to {output}")


def run_job(server: DagsterDev, job: str, tags: dict[str, str], location: str) -> str:
    """Launch one run and wait for it; its run id, or a SystemExit when it did not succeed."""
    run_id = server.launch_run(job, tags, location=location)
    status = server.wait_for_run(run_id, timeout=900)
    if status != "SUCCESS":
        raise SystemExit(f"run {run_id} ended {status}:\n{server.log_tail()}")
    return run_id


def flagged_tick(server: DagsterDev, run_id: str, timeout: float = 300.0) -> dict[str, Any]:
    """The drift demo sensor's tick that flagged the materialisation of `run_id`: waits until
    the daemon's tick fails the asset's check for it and the tick is finished."""
    key = DEMO_ASSET.split("/")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        execution = server.check_for_latest_materialisation(key, CHECK_NAME) or {}
        evaluation = execution.get("evaluation") or {}
        target = (evaluation.get("targetMaterialization") or {}).get("runId")
        ticks = server.sensor_ticks(DRIFT_SENSOR, location=DEMO_LOCATION)["ticks"]
        judged = [t for t in ticks if t["status"] != "STARTED" and t["skipReason"] != NOTHING_NEW]
        if target == run_id and evaluation.get("success") is False and judged:
            return judged[0]
        time.sleep(1)
    raise WebserverError(f"no tick flagged run {run_id} in {timeout:.0f}s:\n{server.log_tail()}")


def main(argv: list[str] | None = None) -> int:
    """Start the UI, materialise the shop and the demo, screenshot the pages."""
    parser = argparse.ArgumentParser(description="Screenshot the receipt in the Dagster UI.")
    parser.add_argument("--docs", type=Path, default=DOCS, help="Folder the PNGs are written to.")
    parser.add_argument("--asset", default=TRACED_ASSET, help="Asset key as a/b.")
    parser.add_argument("--runs", type=int, default=2, help="Runs of the main job (one day).")
    parser.add_argument("--width", type=int, default=1600)
    parser.add_argument("--height", type=int, default=1000)
    args = parser.parse_args(argv)

    find_chromium()
    with tempfile.TemporaryDirectory(prefix="ubunye-ui-") as folder:
        root = Path(folder)
        workspace = root / "workspace.yaml"
        workspace.write_text(WORKSPACE_YAML, encoding="utf-8")
        with DagsterDev(root / "dagster_home", root / "example", workspace=workspace) as server:
            server.wait_until_ready(timeout=300, locations=[LOCATION, DEMO_LOCATION])
            for _ in range(args.runs):
                run_job(server, MAIN_JOB, {"dagster/partition": DAYS[0]}, LOCATION)
            run_ids = [run_job(server, DEMO_JOB, {}, DEMO_LOCATION) for _ in range(2)]
            tick = flagged_tick(server, run_ids[-1])
            print(f"tick {tick['tickId']}: {tick['skipReason']}")
            page = f"{server.url}/assets/{args.asset}"
            sensor = f"{server.url}/locations/{DEMO_LOCATION}/sensors/{DRIFT_SENSOR}"
            demo = f"{server.url}/assets/{DEMO_ASSET}"
            shots = [
                # Tall enough to reach the Metadata section, where the summary is.
                (f"{page}?view=overview", "ui-overview.png", 1500),
                (f"{page}?view=events", "ui-materialisation.png", args.height),
                (f"{page}?view=checks", "ui-checks.png", args.height),
                (f"{sensor}?tickId={tick['tickId']}", "ui-drift-tick.png", args.height),
                # Tall enough to show that the check's Plots have no storage id to plot.
                (f"{demo}?view=checks&checkDetail={CHECK_NAME}", "ui-drift-check.png", 1250),
            ]
            for url, name, height in shots:
                output = args.docs / name
                screenshot(url, output, root / "chromium", args.width, height)
                print(f"wrote {output} ({url})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
