"""dbt commands of the tests' own dbt resource, each run in a process forked from one that has
imported dbt once: a ``dbt`` process spends most of its CPU importing dbt (as Dagster's
``forkserver`` start method spares each step its imports).

``dbt_launcher()`` starts this process's server (``python dbt_forks.py serve SOCKET OWNER``: dbt
and its installed adapters imported, then a Unix socket served) and returns the path of a
``dbt`` launcher, the resource's ``dbt_executable``. The launcher hands the server its standard
streams, its arguments, folder and environment; the server forks a handler for it, which forks
the dbt process, passes back its pid, waits for it and sends its exit status. The launcher
forwards SIGINT, SIGTERM and SIGHUP to that dbt and exits as it did; when the launcher is gone
(killed), the handler kills the dbt. The server stops with the process that started it.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import io
import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, NoReturn

#: The adapters imported with dbt when installed (each build loads its profile's).
ADAPTERS = ("dbt.adapters.duckdb", "dbt.adapters.postgres", "dbt.adapters.spark")
#: The launcher's signals passed on to the dbt it started.
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
#: How long a starting server may take to import dbt and listen.
STARTUP_SECONDS = 180
HEADER = struct.Struct("!Q")
LAUNCHER = """#!{python}
import sys
sys.path.insert(0, {tests!r})
from dbt_forks import launch
launch({socket!r}, sys.argv[1:])
"""


@functools.cache
def dbt_launcher() -> str:
    """The path of a ``dbt`` that runs each command forked from this process's dbt server
    (started on the first call, stopped when this process exits)."""
    folder = Path(tempfile.mkdtemp(prefix="dbt-forks-"))
    address = str(folder / "socket")
    with (folder / "server.log").open("wb") as log:
        server = subprocess.Popen(
            [sys.executable, __file__, "serve", address, str(os.getpid())],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    atexit.register(_stop, server)
    _wait_until_listening(server, address, folder / "server.log")
    launcher = folder / "dbt"
    text = LAUNCHER.format(python=sys.executable, tests=str(Path(__file__).parent), socket=address)
    launcher.write_text(text, encoding="utf-8")
    launcher.chmod(0o755)
    return str(launcher)


def _wait_until_listening(server: subprocess.Popen, address: str, log: Path) -> None:
    """Return once the server accepts connections; raise with its log if it ended or never did."""
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if server.poll() is not None:
            output = log.read_text(encoding="utf-8", errors="replace")[-3000:]
            raise RuntimeError(f"the dbt fork server ended ({server.returncode}):\n{output}")
        try:
            with socket.socket(socket.AF_UNIX) as probe:
                probe.connect(address)
            return
        except OSError:
            time.sleep(0.1)
    _stop(server)
    raise RuntimeError(f"the dbt fork server did not listen within {STARTUP_SECONDS} s")


def _stop(server: subprocess.Popen) -> None:
    """Stop the server (its handlers and running dbt processes finish on their own)."""
    if server.poll() is None:
        server.terminate()
        server.wait(timeout=30)


def launch(address: str, args: list[str]) -> NoReturn:
    """The launcher: run ``dbt args`` through the server at ``address`` and exit as it did."""
    request = json.dumps({"args": args, "cwd": os.getcwd(), "env": dict(os.environ)}).encode()
    with socket.socket(socket.AF_UNIX) as connection:
        connection.connect(address)
        socket.send_fds(connection, [HEADER.pack(len(request))], [0, 1, 2])
        connection.sendall(request)
        replies = connection.makefile("rb")
        dbt_pid = int(replies.readline())
        for number in FORWARDED:
            signal.signal(number, lambda received, _frame: os.kill(dbt_pid, received))
        status = replies.readline()
    if not status:
        raise SystemExit(f"the dbt fork server lost dbt process {dbt_pid}")
    code = int(status)
    if code < 0:
        # Ended by a signal: end by the same one, so the caller sees what it would of dbt.
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    sys.exit(code)


def serve(address: str, owner: int) -> None:
    """Import dbt, then fork a handler for each launcher that connects, until ``owner`` ends."""
    import dbt.cli.main  # noqa: F401

    for adapter in ADAPTERS:
        with contextlib.suppress(ImportError):
            __import__(adapter)
    # Handlers are not waited for: the kernel reaps them.
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(address)
        listener.listen(16)
        listener.settimeout(1.0)
        while _alive(owner):
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                continue
            sys.stdout.flush()
            sys.stderr.flush()
            if os.fork() == 0:
                listener.close()
                try:
                    _handle(connection)
                finally:
                    # A handler never returns into the server's loop, whatever it met.
                    os._exit(1)
            connection.close()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _handle(connection: socket.socket) -> NoReturn:
    """A handler: read one request, fork its dbt, report its pid and exit status."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    connection.setblocking(True)
    header, streams, _, _ = socket.recv_fds(connection, HEADER.size, 3)
    if not header:
        os._exit(0)  # a connection closed unasked: the starter's probe that the server listens
    header += _received(connection, HEADER.size - len(header))
    request = json.loads(_received(connection, HEADER.unpack(header)[0]))
    dbt_pid = os.fork()
    if dbt_pid == 0:
        connection.close()
        for target, stream in enumerate(streams):
            os.dup2(stream, target)
        _run_dbt(request)
    for stream in streams:
        os.close(stream)
    connection.sendall(f"{dbt_pid}\n".encode())
    ended = os.pidfd_open(dbt_pid)
    ready, _, _ = select.select([connection, ended], [], [])
    if connection in ready and ended not in ready:
        # The launcher closed without waiting for its dbt: it was killed, so is its dbt.
        os.kill(dbt_pid, signal.SIGKILL)
    _, status = os.waitpid(dbt_pid, 0)
    with contextlib.suppress(OSError):
        connection.sendall(f"{os.waitstatus_to_exitcode(status)}\n".encode())
    os._exit(0)


def _received(connection: socket.socket, size: int) -> bytes:
    """Exactly ``size`` bytes from ``connection``."""
    chunks = []
    while size > 0:
        chunk = connection.recv(min(size, 1 << 20))
        if not chunk:
            raise ConnectionError("the dbt launcher closed mid-request")
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def _run_dbt(request: dict[str, Any]) -> NoReturn:
    """The dbt process: the launcher's folder, environment and streams, then dbt's own CLI."""
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for number in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, signal.SIG_DFL)
    sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False))
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8")
    sys.stderr = io.TextIOWrapper(
        io.FileIO(2, "w", closefd=False), encoding="utf-8", errors="backslashreplace"
    )
    sys.argv = ["dbt", *request["args"]]
    from dbt.cli.main import cli

    code: int = 1
    try:
        cli()
        code = 0
    except SystemExit as exit:
        code = exit.code if isinstance(exit.code, int) else (0 if exit.code is None else 1)
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
    os._exit(code)


if __name__ == "__main__":
    if sys.argv[1:2] != ["serve"] or len(sys.argv) != 4:
        raise SystemExit("usage: dbt_forks.py serve SOCKET OWNER_PID")
    # dbt imports every importable module named dbt_*: the path is the installed dbt's, not
    # tests/ (which holds dbt_shop and this module).
    sys.path[0] = str(Path(sys.executable).parent)
    serve(sys.argv[2], int(sys.argv[3]))
