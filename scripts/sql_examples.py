"""Run the Python examples of docs/rows-v1-in-sql.md and put what they print in the page, or
check that the page still shows what they print.

Each example is a ```python block followed by a marker line `<!-- sql-example-output -->` and a
```text block: the script runs the Python block in a fresh namespace and replaces the text block
with its output. The examples use fixed data, so their output (digests included) is exact.

    python scripts/sql_examples.py            # rewrite the outputs in the page
    python scripts/sql_examples.py --check    # exit 1 when a shown output differs from a run
"""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import sys
from pathlib import Path

PAGE = Path(__file__).resolve().parent.parent / "docs" / "rows-v1-in-sql.md"
EXAMPLE = re.compile(
    r"```python\n(?P<code>.*?)```\n<!-- sql-example-output -->\n```text\n(?P<output>.*?)```\n",
    re.S,
)


def printed_by(code: str) -> str:
    """What ``code`` prints, run in a namespace of its own."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(PAGE), "exec"), {"__name__": "__sql_example__"})
    return out.getvalue()


def refreshed(text: str) -> str:
    """The page with every example's output replaced by a fresh run's."""

    def replace(match: re.Match[str]) -> str:
        fresh = printed_by(match.group("code"))
        return match.group(0).replace(
            f"```text\n{match.group('output')}```", f"```text\n{fresh}```"
        )

    return EXAMPLE.sub(replace, text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare, do not rewrite")
    args = parser.parse_args(argv)
    text = PAGE.read_text("utf-8")
    if not EXAMPLE.search(text):
        print(f"{PAGE} has no example followed by an output block", file=sys.stderr)
        return 1
    fresh = refreshed(text)
    if args.check:
        if fresh != text:
            print(f"{PAGE}: a shown output differs from a fresh run; run {__file__}")
            return 1
        return 0
    PAGE.write_text(fresh, "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
