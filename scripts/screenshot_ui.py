"""Screenshot an asset's latest materialisation in the Dagster UI, receipt included, and its
Checks tab.

Needs Debian's Chromium (this script installs nothing):

    apt-get update && apt-get install -y chromium
    python scripts/screenshot_ui.py   # writes docs/ui-materialisation.png and docs/ui-checks.png

It starts `dagster dev -w workspace.yaml` on 127.0.0.1 with a throw-away DAGSTER_HOME and example
home, runs the example's main job through GraphQL (twice, so the latest materialisation's
summary is judged against the one before), then points headless Chromium at the asset's page
and at its Checks tab. Everything it started is ended before it returns.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from example_project.definitions import MAIN_JOB  # noqa: E402
from example_project.run import DAYS, TRACED_ASSET  # noqa: E402
from example_project.webserver import DagsterDev  # noqa: E402

DEFAULT_OUTPUT = REPO_ROOT / "docs" / "ui-materialisation.png"
DEFAULT_CHECKS_OUTPUT = REPO_ROOT / "docs" / "ui-checks.png"
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")


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


def main(argv: list[str] | None = None) -> int:
    """Start the UI, materialise the example, screenshot one asset's page and its checks."""
    parser = argparse.ArgumentParser(description="Screenshot the receipt in the Dagster UI.")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    parser.add_argument("--checks-output", type=Path, default=DEFAULT_CHECKS_OUTPUT)
    parser.add_argument("--asset", default=TRACED_ASSET, help="Asset key as a/b.")
    parser.add_argument("--view", default="events", help="Asset page tab (events, definition...).")
    parser.add_argument("--runs", type=int, default=2, help="Runs of the main job (one day).")
    parser.add_argument("--width", type=int, default=1600)
    parser.add_argument("--height", type=int, default=1000)
    args = parser.parse_args(argv)

    find_chromium()
    with tempfile.TemporaryDirectory(prefix="ubunye-ui-") as folder:
        root = Path(folder)
        with DagsterDev(root / "dagster_home", root / "example") as server:
            server.wait_until_ready()
            for _ in range(args.runs):
                run_id = server.launch_run(MAIN_JOB, {"dagster/partition": DAYS[0]})
                status = server.wait_for_run(run_id, timeout=900)
                if status != "SUCCESS":
                    raise SystemExit(f"run {run_id} ended {status}:\n{server.log_tail()}")
            page = f"{server.url}/assets/{args.asset}"
            shots = [(f"{page}?view={args.view}", args.output)]
            shots.append((f"{page}?view=checks", args.checks_output))
            for url, output in shots:
                screenshot(url, output, root / "chromium", args.width, args.height)
                print(f"wrote {output} ({url})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
