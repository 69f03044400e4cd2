"""docs/deployment.md shows what the deployment test ran: the ``dagster.yaml`` it writes, and
each output block marked for the test to compare with its run (tests/system/test_deployment.py does,
on its run); a drifted block is caught."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import yaml
from deployment_services import instance_config
from postgres_cluster import PostgresCluster

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "deployment_examples.py"


def load_examples():
    spec = importlib.util.spec_from_file_location("deployment_examples", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


examples = load_examples()


def page() -> str:
    return examples.DOC.read_text(encoding="utf-8")


def a_cluster(port: int) -> PostgresCluster:
    """A cluster's connection settings as the test's are (nothing started)."""
    folder = Path("/nonexistent")
    return PostgresCluster(
        host="127.0.0.1", port=port, dbname="dagster", user="postgres", password="postgres",
        data_dir=folder / "data", bin_dir=folder, log_path=folder / "server.log",
    )  # fmt: skip


def test_the_page_marks_every_block_the_deployment_test_collects_and_no_other() -> None:
    assert sorted(examples.shown_blocks(page())) == sorted(examples.BLOCKS)


def test_the_dagster_yaml_shown_is_the_one_the_deployment_test_writes() -> None:
    written = yaml.safe_dump(instance_config(a_cluster(5433)), sort_keys=False)
    assert not examples.disagreements(page(), {"dagster-yaml": written} | {
        name: block for name, block in examples.shown_blocks(page()).items()
        if name != "dagster-yaml"
    })  # fmt: skip


def test_a_block_that_a_run_no_longer_prints_is_caught() -> None:
    shown = examples.shown_blocks(page())
    fresh = {
        **shown,
        "dagster-yaml": shown["dagster-yaml"].replace(
            "max_concurrent_runs: 3", "max_concurrent_runs: 4"
        ),
    }
    [problem] = examples.disagreements(page(), fresh)
    assert "docs/deployment.md dagster-yaml" in problem and "max_concurrent_runs: 4" in problem


def test_what_changes_from_run_to_run_is_not_a_drift() -> None:
    shown = examples.shown_blocks(page())
    other_port = yaml.safe_dump(instance_config(a_cluster(61234)), sort_keys=False)
    assert examples.normalised(other_port) == examples.normalised(shown["dagster-yaml"])
    assert examples.normalised("s3://ubunye-0123456789ab/shop 127.0.0.1:4711") == (
        "s3://ubunye-<bucket>/shop 127.0.0.1:<port>"
    )
    other_tick = re.sub(
        r"judged (\d+) ", lambda m: f"judged {int(m[1]) + 1} ", shown["flagged-tick"], count=1
    )
    assert other_tick != shown["flagged-tick"]
    assert examples.normalised(other_tick) == examples.normalised(shown["flagged-tick"])
