"""Secrets of a data directory: random keys created on first use and kept in ``meta``."""

from __future__ import annotations

import secrets

from omoide.storage.database import Database

__all__ = ["directory_secret"]


def directory_secret(db: Database, name: str) -> bytes:
    """A random secret of this data directory, created on first use and kept in ``meta``
    (which no route reads or exports): the key of ids that must not be predictable."""
    key = f"secret:{name}"
    with db.transaction() as conn:
        conn.execute(
            "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO NOTHING",
            (key, secrets.token_hex(32)),
        )
    value = db.get_meta(key)
    assert value is not None
    return bytes.fromhex(value)
