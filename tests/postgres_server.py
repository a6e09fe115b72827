"""A real PostgreSQL server for the tests: a throwaway cluster (``initdb`` + ``pg_ctl``) on a
free port of 127.0.0.1, or the server that ``OMOIDE_TEST_DATABASE_URL`` names.

One server serves the whole session (``postgres_url``, started when first needed); each test
gets a database of its own, dropped afterwards, so tests sharing the server never see each
other's tables: an empty one (``postgres_db_url``, for tests of a first open and of the
migrations), or one already migrated (``postgres_stores``: a copy of ``postgres_template``,
which omoide's own migrations made once; cheaper than migrating each, and made ahead). The
cluster trusts local connections (a throwaway, on 127.0.0.1 only) and keeps PostgreSQL's
durable defaults (``fsync`` on).

The binaries are looked up on PATH, then in Debian's ``/usr/lib/postgresql/<version>/bin``.
PostgreSQL refuses to run as root, so as root the cluster runs as the ``postgres`` user
(through ``runuser``). Without the binaries the tests that need them are skipped, except under
CI (``CI`` set), where they fail: CI must never silently skip the PostgreSQL suites.
"""

from __future__ import annotations

import glob
import os
import pwd
import shlex
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn
from urllib.parse import urlsplit, urlunsplit

import pytest

from chroma_server import free_port

#: Longest wait for a new cluster to accept connections (or a given server to answer).
START_TIMEOUT = 60.0

#: The environment variable naming an existing server to use instead of starting one.
URL_VARIABLE = "OMOIDE_TEST_DATABASE_URL"

#: The superuser of a cluster of ours (connections are trusted: no password).
USER = "omoide"

#: The operating-system user a cluster of ours runs as when the tests run as root.
ROOT_RUNS_AS = "postgres"


def in_ci() -> bool:
    """Whether this is a CI run (``CI`` set to anything but empty, ``0``, ``false`` or ``no``)."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def unavailable(reason: str) -> NoReturn:
    """Skip the test for want of PostgreSQL, or, under CI, fail it, loudly."""
    if in_ci():
        pytest.fail(f"{reason} (CI is set: the PostgreSQL tests must run there)", pytrace=False)
    pytest.skip(reason)


def _version_key(directory: str) -> tuple[int, ...]:
    """``/usr/lib/postgresql/15/bin`` -> ``(15,)``, for picking the newest installed version."""
    name = Path(directory).parent.name
    return tuple(int(part) for part in name.split(".") if part.isdigit())


def postgres_bin_dir() -> Path | None:
    """The directory holding both ``initdb`` and ``pg_ctl``: the one of PATH's ``initdb``, else
    the newest ``/usr/lib/postgresql/*/bin`` (Debian's layout); None if there is none."""
    candidates: list[Path] = []
    on_path = shutil.which("initdb")
    if on_path is not None:
        candidates.append(Path(on_path).parent)
    debian = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=_version_key, reverse=True)
    candidates.extend(Path(directory) for directory in debian)
    for directory in candidates:
        if all(os.access(directory / name, os.X_OK) for name in ("initdb", "pg_ctl")):
            return directory
    return None


def with_database(url: str, dbname: str) -> str:
    """``url`` (a ``postgresql://`` URL or a ``key=value`` conninfo) naming database ``dbname``."""
    if "://" in url:
        parts = urlsplit(url)
        return urlunsplit(parts._replace(path=f"/{dbname}"))
    from psycopg.conninfo import make_conninfo

    return make_conninfo(url, dbname=dbname)


def wait_for_server(url: str, timeout: float = START_TIMEOUT) -> Exception | None:
    """Poll ``url`` until a connection's ``SELECT 1`` answers (None) or ``timeout`` seconds
    pass (the last error)."""
    import psycopg

    deadline = time.monotonic() + timeout
    while True:
        try:
            with psycopg.connect(url, autocommit=True, connect_timeout=5) as conn:
                conn.execute("SELECT 1")
            return None
        except psycopg.Error as exc:  # not accepting connections yet
            failure = exc
        if time.monotonic() > deadline:
            return failure
        time.sleep(0.05)


@dataclass
class PostgresServer:
    """A throwaway cluster in ``path`` (data in ``path/data``, its unix socket in ``path``)
    serving ``url``; the server's output goes to ``log``. ``owner`` is the operating-system
    user it runs as when that is not us (as root), else None."""

    url: str
    port: int
    path: Path
    log: Path
    bin_dir: Path
    owner: str | None

    @property
    def data(self) -> Path:
        return self.path / "data"

    def command(self, name: str, *args: str) -> list[str]:
        """The argv running PostgreSQL program ``name`` with ``args`` as the cluster's owner."""
        argv = [str(self.bin_dir / name), *args]
        return ["runuser", "-u", self.owner, "--", *argv] if self.owner else argv

    def run(self, name: str, *args: str, timeout: float = START_TIMEOUT) -> None:
        """Run ``name`` with ``args``; a failure fails the test with its output."""
        try:
            proc = subprocess.run(
                self.command(name, *args),
                cwd=self.path,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            pytest.fail(f"{name} did not finish within {timeout:.0f} s: {exc}", pytrace=False)
        if proc.returncode != 0:
            pytest.fail(
                f"{name} failed (exit code {proc.returncode}):\n{proc.stdout}{proc.stderr}"
                f"{self.log_tail()}",
                pytrace=False,
            )

    def log_tail(self) -> str:
        """The end of the server's log (empty if it has none yet)."""
        try:
            return "\n" + self.log.read_text(encoding="utf-8", errors="replace")[-2000:]
        except OSError:
            return ""

    def stop(self) -> None:
        """Stop the server (``pg_ctl stop -m fast``) and delete the cluster."""
        try:
            if (self.data / "postmaster.pid").exists():
                self.run("pg_ctl", "stop", "-D", str(self.data), "-m", "fast", "-w")
        finally:
            shutil.rmtree(self.path, ignore_errors=True)


def start_postgres_server(timeout: float = START_TIMEOUT) -> PostgresServer:
    """Create a cluster in a new temporary directory, start it on a free port of 127.0.0.1,
    and return once it accepts connections (skipping, or failing under CI, if PostgreSQL is
    not installed; failing the test if the cluster does not start)."""
    bin_dir = postgres_bin_dir()
    if bin_dir is None:
        unavailable(
            "PostgreSQL's initdb and pg_ctl were not found (looked on PATH and in "
            "/usr/lib/postgresql/*/bin): install PostgreSQL (Debian: apt-get install "
            f"postgresql) or set {URL_VARIABLE} to a server's URL"
        )
    account: pwd.struct_passwd | None = None
    if os.geteuid() == 0:  # initdb and postgres refuse to run as root
        if shutil.which("runuser") is None:
            unavailable(
                "running as root, and `runuser` (to run PostgreSQL as another user) is missing"
            )
        try:
            account = pwd.getpwnam(ROOT_RUNS_AS)
        except KeyError:
            unavailable(
                f"running as root, and there is no {ROOT_RUNS_AS!r} user to run PostgreSQL as"
            )
    # A new directory of the system's temporary directory rather than pytest's (which is
    # private to us, so the postgres user could not reach it); short, too, as a unix socket's
    # path must be.
    path = Path(tempfile.mkdtemp(prefix="omoide-pg-"))
    if account is not None:  # pg_ctl, as the cluster's owner, writes its log and socket here
        os.chown(path, account.pw_uid, account.pw_gid)
    port = free_port()
    server = PostgresServer(
        url=f"postgresql://{USER}@127.0.0.1:{port}/postgres",
        port=port,
        path=path,
        log=path / "postgres.log",
        bin_dir=bin_dir,
        owner=account.pw_name if account is not None else None,
    )
    try:
        # --no-sync: a throwaway cluster need not be flushed to disk once created; the server
        # itself runs with fsync on.
        server.run(
            "initdb",
            *("-D", str(server.data), "-A", "trust", "-U", USER),
            *("-E", "UTF8", "--locale=C.UTF-8", "--no-sync"),
        )
        options = f"-c listen_addresses=127.0.0.1 -p {port} -k {shlex.quote(str(path))}"
        server.run(
            "pg_ctl",
            *("start", "-D", str(server.data), "-l", str(server.log), "-o", options),
            *("-w", "-t", str(int(timeout))),  # pg_ctl waits, and notices the server's exit
            timeout=timeout + 10,
        )
        failure = wait_for_server(server.url, timeout)
        if failure is not None:
            pytest.fail(
                f"the PostgreSQL cluster on port {port} did not accept connections "
                f"(last error {failure!r}):{server.log_tail()}",
                pytrace=False,
            )
    except BaseException:
        server.stop()
        raise
    return server


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """The URL of a PostgreSQL server for the session, whose user may create databases:
    ``OMOIDE_TEST_DATABASE_URL`` if set, else a throwaway cluster of ours (``postgresql://
    omoide@127.0.0.1:PORT/postgres``), started when first needed and stopped at the end."""
    try:
        import psycopg  # noqa: F401  (the tests and the postgres backend need it)
    except ImportError:
        unavailable("psycopg is not installed: pip install 'psycopg[binary]' (the test extra)")
    given = os.environ.get(URL_VARIABLE)
    if given:
        failure = wait_for_server(given)
        if failure is not None:
            pytest.fail(f"{URL_VARIABLE} does not answer: {failure!r}", pytrace=False)
        yield given
        return
    server = start_postgres_server()
    try:
        yield server.url
    finally:
        server.stop()


def create_database(url: str, template: str | None = None) -> str:
    """Create a new database (``omoide_test_<8 hex digits>``) on ``url``'s server, empty or
    a copy of database ``template``; its name."""
    import psycopg
    from psycopg import sql

    name = f"omoide_test_{uuid.uuid4().hex[:8]}"
    statement = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
    if template is not None:
        statement = sql.SQL("{} TEMPLATE {}").format(statement, sql.Identifier(template))
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(statement)
    return name


def drop_database(url: str, name: str) -> None:
    """Drop database ``name`` of ``url``'s server, disconnecting whoever is still in it."""
    import psycopg
    from psycopg import sql

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )


@pytest.fixture
def postgres_db_url(postgres_url: str) -> Iterator[str]:
    """The URL of a new, empty database of the session's server, for this test alone; it is
    dropped afterwards."""
    name = create_database(postgres_url)
    try:
        yield with_database(postgres_url, name)
    finally:
        drop_database(postgres_url, name)


@pytest.fixture(scope="session")
def postgres_template(postgres_url: str) -> Iterator[str]:
    """The name of a database of the session's server holding omoide's schema, made once by
    omoide's own migrations (:class:`~omoide.storage.postgres.PostgresDatabase` on an empty
    database) and never opened again: ``postgres_stores`` copies it."""
    from omoide.clock import SystemClock
    from omoide.storage.postgres import PostgresDatabase

    name = create_database(postgres_url)
    try:
        PostgresDatabase(with_database(postgres_url, name), clock=SystemClock()).close()
        yield name
    finally:
        drop_database(postgres_url, name)


class StoreDatabases:
    """Copies of a template database, each for one store: the next copy is made, and used
    ones are dropped, by a background thread while the tests run, so a test waits for
    neither (one copy waits ready; each copy is still used once)."""

    def __init__(self, url: str, template: str) -> None:
        self.url = url
        self.template = template
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="omoide-test-db")
        self._next: Future[str] = self._worker.submit(create_database, url, template)
        self._drops: list[Future[None]] = []

    @contextmanager
    def database(self) -> Iterator[str]:
        """The URL of a fresh copy of the template, for the block alone."""
        name = self._next.result()
        self._next = self._worker.submit(create_database, self.url, self.template)
        try:
            yield with_database(self.url, name)
        finally:
            self._drops.append(self._worker.submit(drop_database, self.url, name))

    def close(self) -> None:
        """Drop the copy made ahead and wait for every drop (a failed one raises here)."""
        try:
            self._drops.append(self._worker.submit(drop_database, self.url, self._next.result()))
            for drop in self._drops:
                drop.result()
        finally:
            self._worker.shutdown(wait=True)


@pytest.fixture(scope="session")
def postgres_stores(postgres_url: str, postgres_template: str) -> Iterator[StoreDatabases]:
    """Migrated databases for the session's stores: ``postgres_stores.database()`` is a new
    copy of ``postgres_template``, what a store opened before finds (tests of a first open
    and of the migrations take ``postgres_db_url``, an empty one)."""
    stores = StoreDatabases(postgres_url, postgres_template)
    try:
        yield stores
    finally:
        stores.close()
