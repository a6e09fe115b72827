"""The PostgreSQL fixtures (tests/postgres_server.py): a real server, a database per test."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from postgres_server import create_database, drop_database, with_database


def server_major(conn: psycopg.Connection[Any]) -> int:
    """The server's major version, from ``SHOW server_version`` (e.g. ``15.18 (Debian ...)``)."""
    row = conn.execute("SHOW server_version").fetchone()
    assert row is not None
    return int(str(row[0]).split(".")[0].split()[0])


def test_database_accepts_connections(postgres_db_url: str) -> None:
    with psycopg.connect(postgres_db_url) as conn:
        row = conn.execute(
            "SELECT current_database(), current_setting('server_encoding')"
        ).fetchone()
        assert row is not None
        name, encoding = row
        assert str(name).startswith("omoide_test_")
        assert encoding == "UTF8"
        conn.execute("CREATE TABLE t (id integer PRIMARY KEY, note text)")
        conn.execute("INSERT INTO t VALUES (1, '思い出')")
        assert conn.execute("SELECT note FROM t").fetchall() == [("思い出",)]


def test_server_version_and_durability(postgres_url: str) -> None:
    with psycopg.connect(postgres_url) as conn:
        assert server_major(conn) >= 13  # DROP DATABASE ... WITH (FORCE) needs 13
        fsync = conn.execute("SHOW fsync").fetchone()
        assert fsync == ("on",)


@pytest.fixture
def second_db_url(postgres_url: str) -> Iterator[str]:
    """A second database of the session's server, as ``postgres_db_url`` makes one."""
    name = create_database(postgres_url)
    try:
        yield with_database(postgres_url, name)
    finally:
        drop_database(postgres_url, name)


def test_each_url_is_a_database_of_its_own(
    postgres_url: str, postgres_db_url: str, second_db_url: str
) -> None:
    assert postgres_db_url != second_db_url
    with psycopg.connect(postgres_db_url) as first, psycopg.connect(second_db_url) as second:
        names = {
            first.execute("SELECT current_database()").fetchone(),
            second.execute("SELECT current_database()").fetchone(),
        }
        assert len(names) == 2
        first.execute("CREATE TABLE only_here (id integer)")
        first.commit()
        visible = "SELECT to_regclass('only_here') IS NOT NULL"
        assert first.execute(visible).fetchone() == (True,)
        assert second.execute(visible).fetchone() == (False,)


_seen: list[str] = []


@pytest.mark.parametrize("round_", [1, 2])
def test_each_test_gets_a_fresh_database(postgres_db_url: str, round_: int) -> None:
    """Across tests of one session: a new database each time, and the last one is gone."""
    with psycopg.connect(postgres_db_url) as conn:
        row = conn.execute("SELECT current_database()").fetchone()
        assert row is not None
        tables = "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"
        assert conn.execute(tables).fetchone() == (0,)
        conn.execute("CREATE TABLE leftover (id integer)")
        databases = {r[0] for r in conn.execute("SELECT datname FROM pg_database").fetchall()}
    assert row[0] not in _seen
    assert not databases & set(_seen)  # the earlier tests' databases were dropped
    _seen.append(str(row[0]))
