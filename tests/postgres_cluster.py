"""A temporary PostgreSQL cluster on 127.0.0.1, started by the test from the Debian server
binaries (``initdb``, ``pg_ctl``) and removed when the block ends.

    with postgres_cluster() as pg:
        pg.url          # postgresql://postgres:postgres@127.0.0.1:PORT/dagster
        pg.host, pg.port, pg.dbname, pg.user, pg.password
        pg.restart()    # pg_ctl restart: every open connection is dropped

The cluster trusts loopback connections (any password is accepted), listens on a free port and
keeps its data, socket and log in one temporary folder. Run as root, the server binaries run as
the ``postgres`` user (PostgreSQL refuses root), the folder chowned to it.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

#: Where Debian's postgresql package puts the server binaries; ``UBUNYE_TEST_PG_BIN`` overrides.
DEBIAN_BIN_ROOT = Path("/usr/lib/postgresql")
#: The operating-system user the server runs as when the test runs as root.
SERVER_USER = "postgres"
#: How long a start, stop or restart may take before the test is told why it failed.
PG_CTL_TIMEOUT_SECONDS = 60


def server_bin_dir() -> Path:
    """The folder holding ``initdb`` and ``pg_ctl``: ``$UBUNYE_TEST_PG_BIN``, else the newest
    Debian ``/usr/lib/postgresql/N/bin``; a clear error when neither exists."""
    configured = os.environ.get("UBUNYE_TEST_PG_BIN")
    if configured:
        return Path(configured)
    versions = sorted(
        (p for p in DEBIAN_BIN_ROOT.glob("*/bin") if (p / "pg_ctl").exists()),
        key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0,
    )
    if not versions:
        raise RuntimeError(
            f"no PostgreSQL server binaries under {DEBIAN_BIN_ROOT}/*/bin: install the Debian "
            "`postgresql` package or set UBUNYE_TEST_PG_BIN"
        )
    return versions[-1]


def postgres_available() -> bool:
    """Whether a cluster can be started here (server binaries found; as root, the user exists)."""
    try:
        server_bin_dir()
    except RuntimeError:
        return False
    if os.geteuid() != 0:
        return True
    try:
        pwd.getpwnam(SERVER_USER)
    except KeyError:
        return False
    return True


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class PostgresCluster:
    """A running cluster: where to connect, and ``restart()``; stopped by `postgres_cluster`."""

    host: str
    port: int
    dbname: str
    user: str
    password: str
    data_dir: Path
    bin_dir: Path
    log_path: Path

    @property
    def url(self) -> str:
        """A libpq/SQLAlchemy URL for the cluster's database."""
        return f"postgresql://{self.user}:{self.password}@{self.host}:{self.port}/{self.dbname}"

    def dagster_storage_config(self) -> dict[str, object]:
        """The ``postgres_db`` block of a dagster.yaml ``storage: postgres:`` entry."""
        return {
            "hostname": self.host,
            "port": self.port,
            "db_name": self.dbname,
            "username": self.user,
            "password": self.password,
            # SQLAlchemy 2.1 no longer guesses the driver from a bare postgresql:// URL.
            "scheme": "postgresql+psycopg2",
        }

    def restart(self) -> None:
        """``pg_ctl restart`` (fast shutdown): open connections are dropped, the data is kept."""
        self._pg_ctl("restart", "-m", "fast")

    def start(self) -> None:
        """Start the server and wait until it accepts connections."""
        self._pg_ctl("start")

    def stop(self) -> None:
        """Stop the server (fast shutdown); a stopped server is left as it is."""
        if (self.data_dir / "postmaster.pid").exists():
            self._pg_ctl("stop", "-m", "fast")

    def _pg_ctl(self, action: str, *extra: str) -> None:
        options = f"-c listen_addresses={self.host} -p {self.port} -k {self.data_dir.parent}"
        _run_as_server(
            [str(self.bin_dir / "pg_ctl"), action, "-w", "-D", str(self.data_dir),
             "-l", str(self.log_path), "-o", options, "-t", str(PG_CTL_TIMEOUT_SECONDS), *extra],
            log_path=self.log_path,
        )  # fmt: skip


def _server_prefix() -> list[str]:
    return ["runuser", "-u", SERVER_USER, "--"] if os.geteuid() == 0 else []


def _run_as_server(command: list[str], log_path: Path | None = None) -> None:
    """Run a server binary as the server's user; its output and the log's tail in the error."""
    done = subprocess.run(
        [*_server_prefix(), *command],
        capture_output=True,
        text=True,
        timeout=PG_CTL_TIMEOUT_SECONDS + 30,
    )
    if done.returncode != 0:
        log = log_path.read_text()[-4000:] if log_path and log_path.exists() else ""
        raise RuntimeError(
            f"{Path(command[0]).name} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}\n"
            f"server log:\n{log}"
        )


def _make_folder() -> Path:
    """A private temporary folder the server's user owns."""
    root = Path(tempfile.mkdtemp(prefix="ubunye-pg-"))
    if os.geteuid() == 0:
        entry = pwd.getpwnam(SERVER_USER)
        os.chown(root, entry.pw_uid, entry.pw_gid)
    return root


@contextlib.contextmanager
def postgres_cluster(dbname: str = "dagster") -> Iterator[PostgresCluster]:
    """Initialise and start a cluster on 127.0.0.1 and a free port with database ``dbname``;
    stop it and delete its folder when the block ends."""
    bin_dir = server_bin_dir()
    root = _make_folder()
    password = "postgres"
    cluster = PostgresCluster(
        host="127.0.0.1",
        port=_free_port(),
        dbname=dbname,
        user="postgres",
        password=password,
        data_dir=root / "data",
        bin_dir=bin_dir,
        log_path=root / "server.log",
    )
    try:
        _run_as_server(
            [str(bin_dir / "initdb"), "-D", str(cluster.data_dir), "-U", cluster.user,
             "--auth=trust", "--encoding=UTF8", "--no-locale", "--no-sync"],
        )  # fmt: skip
        with (cluster.data_dir / "postgresql.conf").open("a") as conf:
            # A test cluster: durability traded for speed; the data dies with the test anyway.
            conf.write("fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n")
            conf.write("max_connections = 200\n")
        cluster.start()
        _run_as_server(
            [str(bin_dir / "createdb"), "-h", cluster.host, "-p", str(cluster.port),
             "-U", cluster.user, dbname],
        )  # fmt: skip
        yield cluster
    finally:
        with contextlib.suppress(Exception):
            cluster.stop()
        shutil.rmtree(root, ignore_errors=True)
