"""The outputs docs/deployment.md shows (the tested ``dagster.yaml``, what the ``lineage`` CLI
prints from a laptop, the drift sensor's flagged tick), compared with or rewritten from those the
deployment test collects on its run (tests/system/test_deployment.py).

Each block follows a marker line ``<!-- deployment-output: <name> -->`` and is replaced whole.
The deployment test compares every block with its run (``UBUNYE_WRITE_DEPLOYMENT_DOCS=1``
rewrites them instead); the test also writes what it collected as JSON, which

    python scripts/deployment_examples.py --check OUTPUTS.json   # exit 1 when they disagree
    python scripts/deployment_examples.py OUTPUTS.json           # rewrite the blocks

compare with or write into the page. Beside what `readme_examples.normalised` replaces (run ids,
times, digests, durations), the bucket's name and the ports change from run to run.
"""

from __future__ import annotations

import argparse
import difflib
import importlib.util
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "deployment.md"
TAG = "deployment-output"
#: The blocks the page shows, each collected by the deployment test.
BLOCKS = ("dagster-yaml", "flagged-tick", "backfill-list", "trace", "killed-search", "clean")
MARKER = re.compile(
    rf"^<!-- {TAG}: (?P<name>[a-z-]+) -->\n```(?P<lang>\w*)\n.*?^```\n", re.M | re.S
)


def _readme_examples():
    spec = importlib.util.spec_from_file_location(
        "readme_examples", ROOT / "scripts" / "readme_examples.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


examples = _readme_examples()

_DEPLOYMENT_VOLATILE = [
    (re.compile(r"\bubunye-[0-9a-f]{12}\b"), "ubunye-<bucket>"),
    (re.compile(r"(\bport: )\d+"), r"\1<port>"),
    (re.compile(r"(127\.0\.0\.1:)\d+"), r"\1<port>"),
    # A run id the CLI shortens to its first eight characters, alone or with a partition.
    (re.compile(r"(?<![0-9a-f-])[0-9a-f]{8}(?![0-9a-f])"), "<short run id>"),
    # How many materialisations the flagging tick judged: those stored since the tick before.
    (re.compile(r"\bjudged \d+ (materialisation\(s\), \d+ flagged)"), r"judged <count> \1"),
]


def shown_blocks(text: str) -> dict[str, str]:
    """The page's blocks by marker name (the text inside each fence)."""
    return examples.readme_blocks(text, MARKER)


def rewritten(text: str, fresh: dict[str, str]) -> str:
    """The page with each marked block replaced by its fresh text."""
    return examples.rewritten(text, fresh, MARKER, TAG)


def normalised(text: str) -> str:
    """``text`` with what changes between runs and machines replaced by placeholders."""
    text = examples.normalised(text)
    for pattern, replacement in _DEPLOYMENT_VOLATILE:
        text = pattern.sub(replacement, text)
    return text


def disagreements(text: str, fresh: dict[str, str]) -> list[str]:
    """A unified diff per block the fresh outputs do not reproduce (normalised), and a line for
    each block the page lacks or shows that no run collected."""
    shown = shown_blocks(text)
    problems = [
        f"docs/deployment.md has no block marked {name!r}\n" for name in fresh if name not in shown
    ]
    problems += [
        f"no run collects the block marked {name!r}\n" for name in shown if name not in fresh
    ]
    for name in sorted(set(shown) & set(fresh)):
        before, after = normalised(shown[name]), normalised(fresh[name])
        if before != after:
            diff = difflib.unified_diff(
                before.splitlines(), after.splitlines(), f"docs/deployment.md {name}",
                f"this run's {name}", lineterm="",
            )  # fmt: skip
            problems.append("\n".join(diff) + "\n")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("outputs", type=Path, help="the JSON file the deployment test wrote")
    parser.add_argument("--check", action="store_true", help="compare, do not rewrite")
    args = parser.parse_args(argv)
    fresh = json.loads(args.outputs.read_text(encoding="utf-8"))
    text = DOC.read_text(encoding="utf-8")
    if args.check:
        problems = disagreements(text, fresh)
        sys.stdout.write("".join(problems) or "docs/deployment.md agrees with the run\n")
        return 1 if problems else 0
    DOC.write_text(rewritten(text, fresh), encoding="utf-8")
    print(f"rewrote {', '.join(sorted(fresh))} in {DOC.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
