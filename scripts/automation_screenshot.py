"""Screenshot the UI's automation evaluation of an asset that ``on_content_change()`` did not
request: its upstream was materialised again with the same rows, so its data version held.

Needs Debian's Chromium and Playwright driving it (this script installs nothing):

    apt-get update && apt-get install -y chromium && pip install playwright
    python scripts/automation_screenshot.py   # writes docs/images/automation-not-requested.png

In a throw-away folder (SQLite storage in its own DAGSTER_HOME) it starts ``dagster-daemon run``
and ``dagster-webserver`` on 127.0.0.1 over ``scripts/automation_screenshot_shop.py``: a Parquet
source observed by its rows, four assets on ``on_content_change()``. Day 0: the source is
observed and the daemon builds everything. Day 1: the orders' amounts change, the source is
observed again, and the daemon runs ``orders``, ``totals`` and ``regions``; ``regions`` has the
same rows as before, so ``region_labels`` is not requested. Dagster stores an evaluation only
when a result in it changes, so day 1 adds none for ``region_labels``: its latest evaluation,
the tick after its day-0 run, still stands. Through GraphQL it checks that evaluation requested
nothing, then headless Chromium opens the asset's Automation tab, opens the evaluation and
pictures its dialog: each part of ``on_content_change()`` and whether it held. Everything it
started is ended before it returns.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import dagster as dg
import yaml

REPO_ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = REPO_ROOT / "scripts"
sys.path[:0] = [str(REPO_ROOT), str(REPO_ROOT / "tests"), str(SCRIPTS)]

import automation_screenshot_shop as shop  # noqa: E402
from deployment_services import (  # noqa: E402
    Webserver,
    daemon_process,
    running,
    wait_for,
    write_workspace,
)
from screenshot_ui import find_chromium  # noqa: E402

from ubunye_dagster.automation.conditions import LABEL  # noqa: E402

OUTPUT = REPO_ROOT / "docs" / "images" / "automation-not-requested.png"
LOCATION = "automation_shop"
#: The browser window: the evaluation's dialog, pictured alone, is narrower.
VIEWPORT = {"width": 1280, "height": 720}
LOCATION_FILE = SCRIPTS / "automation_screenshot_shop.py"
EVALUATIONS = """
query Evaluations($assetKey: AssetKeyInput!) {
  assetConditionEvaluationRecordsOrError(assetKey: $assetKey, limit: 100) {
    __typename
    ... on AssetConditionEvaluationRecords {
      records { evaluationId timestamp numRequested }
    }
  }
}
"""


def evaluations(server: Webserver, key: dg.AssetKey) -> list[dict[str, Any]]:
    """The stored automation evaluations of ``key``, newest first."""
    found = server.ask(EVALUATIONS, {"assetKey": {"path": list(key.path)}})
    answer = found["assetConditionEvaluationRecordsOrError"]
    if answer["__typename"] != "AssetConditionEvaluationRecords":
        raise SystemExit(f"no evaluation records for {key.to_user_string()}: {answer}")
    return answer["records"]


def materialised(instance: dg.DagsterInstance, key: dg.AssetKey) -> list[float]:
    """When ``key`` was materialised, newest first (epoch seconds)."""
    records = instance.fetch_materializations(key, limit=100).records
    return [record.timestamp for record in records]


def write_orders(folder: Path, day: int) -> None:
    """Write the day's orders where the source is."""
    shop.source_path(folder).parent.mkdir(parents=True, exist_ok=True)
    shop.source_rows(day).to_parquet(shop.source_path(folder), index=False)


def observe(instance: dg.DagsterInstance, day: int, folder: Path) -> None:
    """Write the day's orders and observe the source in this process, as the UI's Observe."""
    write_orders(folder, day)
    job = dg.define_asset_job("observe_orders", selection=[shop.SOURCE])
    defs = dg.Definitions.merge(shop.definitions(folder), dg.Definitions(jobs=[job]))
    assert defs.resolve_job_def("observe_orders").execute_in_process(instance=instance).success


def wait_for_day(instance: dg.DagsterInstance, keys: list[dg.AssetKey], runs: int) -> None:
    """Wait until each of ``keys`` has been materialised ``runs`` times."""
    wait_for(
        f"{runs} materialisation(s) of {', '.join(k.to_user_string() for k in keys)}",
        lambda: all(len(materialised(instance, key)) >= runs for key in keys),
        timeout=600,
        interval=1,
    )


def settle() -> None:
    """Let the automation sensor tick twice: it has seen every materialisation so far."""
    time.sleep(2 * shop.SENSOR_INTERVAL_SECONDS + 1)


def latest_evaluation(server: Webserver, key: dg.AssetKey) -> dict[str, Any]:
    """The latest stored evaluation of ``key``; a SystemExit if it requested it."""
    [latest, *_] = evaluations(server, key)
    if latest["numRequested"]:
        raise SystemExit(f"{key.to_user_string()} was requested: {latest}")
    return latest


def run_days(instance: dg.DagsterInstance, server: Webserver, folder: Path) -> dict[str, Any]:
    """Day 0 and day 1 under the daemon; the evaluation of ``region_labels`` after day 1."""
    server.wait_until_ready(timeout=300, locations=[LOCATION])
    observe(instance, 0, folder)
    wait_for_day(instance, [shop.UNCHANGED, dg.AssetKey("totals")], runs=1)
    settle()
    observe(instance, 1, folder)
    wait_for_day(instance, [dg.AssetKey("regions"), dg.AssetKey("totals")], runs=2)
    settle()
    if len(materialised(instance, shop.UNCHANGED)) != 1:
        raise SystemExit(f"{shop.UNCHANGED.to_user_string()} ran again on day 1")
    return latest_evaluation(server, shop.UNCHANGED)


def capture_evaluation(url: str, output: Path) -> None:
    """Open the Automation tab at ``url``, open its newest evaluation, and save the evaluation's
    dialog as a PNG once the condition's tree has rendered."""
    from playwright.sync_api import sync_playwright

    output.parent.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=find_chromium(), args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            page = browser.new_page(viewport=VIEWPORT)
            page.goto(url)
            newest = page.locator("tbody tr").first
            newest.get_by_text("Not requested").wait_for(timeout=120_000)
            newest.locator("button").first.click()  # its timestamp opens the evaluation
            dialog = page.get_by_role("dialog")
            dialog.get_by_text(LABEL).first.wait_for(timeout=60_000)
            dialog.screenshot(path=str(output))
        finally:
            browser.close()


def environment(folder: Path, home: Path) -> dict[str, str]:
    """The daemon's and webserver's environment: this checkout first on the path."""
    paths = [str(REPO_ROOT), str(REPO_ROOT / "rows"), os.environ.get("PYTHONPATH", "")]
    return {
        **os.environ,
        shop.DIR_ENV: str(folder),
        "DAGSTER_HOME": str(home),
        "DAGSTER_DISABLE_TELEMETRY": "1",
        "PYTHONPATH": os.pathsep.join(filter(None, paths)),
    }


def main(argv: list[str] | None = None) -> int:
    """Run the two days under the daemon, screenshot the evaluation of ``region_labels``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", type=Path, default=OUTPUT, help="The PNG written.")
    args = parser.parse_args(argv)
    find_chromium()
    with tempfile.TemporaryDirectory(prefix="ubunye-automation-ui-") as name:
        folder = Path(name)
        home = folder / "dagster_home"
        home.mkdir()
        config = {"telemetry": {"enabled": False}, "nux": {"enabled": False}}
        (home / "dagster.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
        workspace = write_workspace(folder, LOCATION_FILE, LOCATION, SCRIPTS, Path(sys.executable))
        env = environment(folder, home)
        write_orders(folder, 0)  # the definitions refuse a source path with nothing at it
        daemon = daemon_process(workspace, env, folder / "daemon.log")
        server = Webserver(workspace, env, folder / "webserver.log", LOCATION)
        with dg.DagsterInstance.from_config(str(home)) as instance, running(daemon, server):
            try:
                record = run_days(instance, server, folder)
            except TimeoutError as late:
                raise SystemExit(f"{late}\n{daemon.log_tail()}") from None
            key = shop.UNCHANGED.to_user_string()
            url = f"{server.url}/assets/{key}?view=automation"
            capture_evaluation(url, args.output)
            print(f"wrote {args.output} (evaluation {record['evaluationId']} of {url})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
