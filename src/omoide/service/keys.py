"""API keys: which agent is calling the REST or MCP server.

A key looks like ``omk_<id>_<secret>``. The ``id`` is public (listings, revocation); the
whole key is shown once, when it is minted, and only its SHA-256 is stored. Keys are 256-bit
random secrets, so a fast hash is enough: there is no dictionary to try against it. A key
belongs to one agent, and every write made with it is recorded as that agent; an *admin* key
may also run whole-store operations (export, import, key management).

>>> keys = KeyStore(mem.db, clock=mem.clock)                       # doctest: +SKIP
>>> info, secret = keys.add("ceo")
>>> keys.verify(secret).agent_name
'ceo'
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import sqlite3
from dataclasses import dataclass
from datetime import datetime

from omoide.clock import Clock, from_timestamp, to_timestamp
from omoide.core.validation import check_name, check_text
from omoide.errors import AuthenticationError, NotFoundError, ValidationError
from omoide.storage import Database

__all__ = ["ApiKey", "KeyStore", "hash_key"]

PREFIX = "omk"
_KEY = re.compile(rf"^{PREFIX}_([0-9a-f]{{12}})_([A-Za-z0-9_-]{{43}})$")


def hash_key(key: str) -> str:
    """The stored form of a key."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ApiKey:
    """A minted key, without its secret."""

    id: str
    agent_name: str
    admin: bool
    label: str
    created_at: datetime
    revoked_at: datetime | None = None

    @property
    def active(self) -> bool:
        return self.revoked_at is None


class KeyStore:
    """The ``api_keys`` table of a data directory."""

    def __init__(self, db: Database, *, clock: Clock) -> None:
        self._db = db
        self._clock = clock

    def add(self, agent_name: str, *, admin: bool = False, label: str = "") -> tuple[ApiKey, str]:
        """Mint a key for ``agent_name``; return its record and the key (shown only now)."""
        agent = check_name("agent_name", agent_name)
        if any(c in agent for c in ",:") or any(c.isspace() for c in agent):
            raise ValidationError("agent_name", "agent names may not contain ',', ':' or spaces")
        if not isinstance(admin, bool):
            raise ValidationError("admin", f"expected true or false, got {admin!r}")
        label = check_text("label", label, max_chars=200, allow_empty=True)
        key_id = secrets.token_hex(6)
        secret = f"{PREFIX}_{key_id}_{secrets.token_urlsafe(32)}"
        now = to_timestamp(self._clock.now())
        with self._db.transaction() as conn:
            conn.execute(
                "INSERT INTO api_keys(id, agent_name, key_hash, admin, label, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (key_id, agent, hash_key(secret), int(admin), label, now),
            )
        return self.get(key_id), secret

    def verify(self, key: str | None) -> ApiKey:
        """The active key matching ``key``; AuthenticationError otherwise."""
        if not key:
            raise AuthenticationError("no API key: send 'Authorization: Bearer <key>'")
        match = _KEY.match(key.strip())
        if match is None:
            raise AuthenticationError("malformed API key")
        row = self._db.query_one("SELECT * FROM api_keys WHERE id = ?", (match.group(1),))
        if row is None or not hmac.compare_digest(row["key_hash"], hash_key(key.strip())):
            raise AuthenticationError("unknown API key")
        if row["revoked_at"] is not None:
            raise AuthenticationError(f"API key {row['id']} was revoked")
        return _key(row)

    def get(self, key_id: str) -> ApiKey:
        check_name("key_id", key_id)
        row = self._db.query_one("SELECT * FROM api_keys WHERE id = ?", (key_id,))
        if row is None:
            raise NotFoundError("API key", key_id)
        return _key(row)

    def list_keys(self, *, include_revoked: bool = False) -> list[ApiKey]:
        """Every key (active ones unless ``include_revoked``), oldest first."""
        where = "" if include_revoked else "WHERE revoked_at IS NULL"
        return [
            _key(r)
            for r in self._db.query(f"SELECT * FROM api_keys {where} ORDER BY created_at, id")
        ]

    def revoke(self, key_id: str) -> ApiKey:
        """Revoke a key: requests with it are refused from now on (idempotent)."""
        self.get(key_id)
        with self._db.transaction() as conn:
            conn.execute(
                "UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
                (to_timestamp(self._clock.now()), key_id),
            )
        return self.get(key_id)


def _key(row: sqlite3.Row) -> ApiKey:
    return ApiKey(
        id=row["id"],
        agent_name=row["agent_name"],
        admin=bool(row["admin"]),
        label=row["label"],
        created_at=from_timestamp(row["created_at"]),
        revoked_at=None if row["revoked_at"] is None else from_timestamp(row["revoked_at"]),
    )
