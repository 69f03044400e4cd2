"""The ``ubunye-dagster`` command line's frame: the ``cli`` and ``lineage`` groups, ``--version``,
and ``main``, which turns every failure into one ``error:`` line on stderr and exit code 1 (2 for
a wrong command line, whose line says how to get help); with ``--json`` stdout also gets
``{"ok": false, "error": ...}``."""

from __future__ import annotations

import json
import os
import sys
import warnings
from collections.abc import Sequence
from typing import Any

import click

from ubunye_core.store.errors import LineageStoreError, UnreadableRecordWarning


class CliError(Exception):
    """A problem to report as one line, without a traceback."""

    exit_code = 1


class DiffTrouble(CliError):
    """A diff that could not be made: exit 2, as ``diff`` does (1 means different)."""

    exit_code = 2


def print_json(document: Any) -> None:
    click.echo(json.dumps(document, indent=2, ensure_ascii=False, default=str))


def reason(exc: BaseException) -> str:
    return f"{exc} ({type(exc).__name__})" if str(exc) else type(exc).__name__


class BareGroupPrintsHelp(click.Group):
    """A command group that, run with no arguments, prints its help on stderr and exits 2.

    The one place the CLI meets a click version difference: click 8.2 raises
    ``NoArgsIsHelpError`` for a bare group, click 8.1 (which Dagster 1.10 requires) prints the
    help on stdout and exits 0. Deciding it here gives the same answer on both.
    """

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        """Print the help and exit 2 when ``args`` is empty; else parse as click does."""
        if not args and not ctx.resilient_parsing:
            # A bare group is a request for its help, not a mistake worth an error line.
            click.echo(ctx.get_help(), err=True)
            ctx.exit(2)
        return super().parse_args(ctx, args)


#: The distributions ``--version`` names, in the order it prints them.
VERSIONED = ("ubunye-dagster", "ubunye-rows")


def installed_versions() -> str:
    """One line per distribution of this project: its name and installed version."""
    from importlib.metadata import PackageNotFoundError, version

    lines = []
    for name in VERSIONED:
        try:
            lines.append(f"{name} {version(name)}")
        except PackageNotFoundError:
            lines.append(f"{name} (not installed)")
    return "\n".join(lines)


def _print_versions(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        click.echo(installed_versions())
        ctx.exit()


@click.group(cls=BareGroupPrintsHelp, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_versions,
    help="Print the versions of ubunye-dagster and ubunye-rows, then exit.",
)
def cli() -> None:
    """ubunye-dagster: receipts of Dagster asset materialisations (Ubunye ADR 006)."""


@cli.group(cls=BareGroupPrintsHelp)
def lineage() -> None:
    """Inspect run records under <usecase-dir>/.ubunye/lineage."""


def write_out(text: str) -> None:
    """Write ``text`` to stdout as it is, through its buffer (a terminal's is flushed at each
    line; ``click.echo`` would flush every write, a system call per run listed)."""
    sys.stdout.write(text)


def _help_hint(ctx: click.Context | None) -> str:
    """Where the help of the command a usage error was made on is (click's own wording)."""
    return f"Try '{ctx.command_path if ctx else 'ubunye-dagster'} --help' for help."


def _fail(message: str, as_json: bool, code: int = 1, hint: str = "") -> int:
    first_line = " ".join(message.split("\n")[0].split()) or "failed"
    if hint:
        # click 8.1 ends some messages without a full stop ("No such option: --x").
        first_line += ("" if first_line.endswith((".", "?", "!")) else ".") + f" {hint}"
    if as_json:
        print_json({"ok": False, "error": first_line})
    click.echo(f"error: {first_line}", err=True)
    return code


def _reported_errors() -> tuple[type[BaseException], ...]:
    """The errors reported as their one line: the diff's own only once its module is loaded
    (before that, nothing raised it)."""
    found: list[type[BaseException]] = [CliError, LineageStoreError, ValueError, OSError]
    report = sys.modules.get("ubunye_core.diff.report")
    if report is not None:
        found.append(report.ReportError)
    return tuple(found)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code (0 ok, 1 failure, 2 wrong command line)."""
    if argv is None:
        # Run as a program: pydantic's plugin discovery scans every installed distribution's
        # entry points before the first record model is built, a tenth of a quick command's
        # time, and no validation plugin has anything to observe in a command line's process.
        os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    args = list(sys.argv[1:] if argv is None else argv)
    as_json = "--json" in args
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UnreadableRecordWarning)
        try:
            result = cli.main(args, prog_name="ubunye-dagster", standalone_mode=False)
            code = result if isinstance(result, int) else 0
        except click.exceptions.Exit as exc:
            code = exc.exit_code
        except click.exceptions.Abort:
            code = _fail("aborted", as_json)
        except click.UsageError as exc:
            code = _fail(exc.format_message(), as_json, exc.exit_code, _help_hint(exc.ctx))
        except click.ClickException as exc:
            code = _fail(exc.format_message(), as_json, exc.exit_code)
        except Exception as exc:
            reported = isinstance(exc, _reported_errors())
            if not reported and os.environ.get("UBUNYE_DAGSTER_DEBUG"):
                raise
            code = (
                _fail(str(exc), as_json, getattr(exc, "exit_code", 1))
                if reported
                else _fail(f"unexpected {type(exc).__name__}: {exc}", as_json)
            )
    for warning in caught:
        if issubclass(warning.category, UnreadableRecordWarning):
            click.echo(f"warning: {warning.message}", err=True)
        else:
            warnings.showwarning(
                warning.message, warning.category, warning.filename, warning.lineno
            )
    return code
