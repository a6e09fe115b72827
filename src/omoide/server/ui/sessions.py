"""Signed-in sessions of the dashboard: a random token in a cookie, its digest in the database.

Signing in with an API key mints a session token (256 random bits) that goes into an
``HttpOnly``, ``SameSite=Strict`` cookie; the database keeps only the token's SHA-256 with the
key's id, so neither the key nor anything that opens the session is ever in a URL, a page or
the browser's script. Every request looks the key up again by id, so a revoked key ends its
sessions at once. Each session has its own CSRF token, which every state-changing form
carries and the server compares in constant time. Sessions are rows of
``dashboard_sessions`` (this module owns the table), so every replica over a shared database
knows them and a restart keeps them; they end after ``IDLE`` without a request or
``LIFETIME``, and at most ``MAX_SESSIONS`` are kept (the least recently seen goes first).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from omoide.clock import Clock, from_timestamp, to_timestamp
from omoide.errors import AuthenticationError
from omoide.service.keys import ApiKey, KeyStore
from omoide.storage import Database

__all__ = ["COOKIE", "IDLE", "LIFETIME", "Session", "SessionStore"]

#: The cookie holding the session token (its path is the dashboard's).
COOKIE = "omoide_session"
IDLE = timedelta(hours=8)
LIFETIME = timedelta(hours=24)
#: Sessions kept at most; the oldest goes first (a flood of sign-ins cannot grow memory).
MAX_SESSIONS = 10_000


@dataclass
class Session:
    """One signed-in browser: the key it stands for and its CSRF token."""

    key_id: str
    csrf: str
    created: datetime
    seen: datetime


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class SessionStore:
    """The sessions of one dashboard, keyed by the digest of their token."""

    def __init__(self, db: Database, clock: Clock) -> None:
        self._db = db
        self._keys = KeyStore(db, clock=clock)
        self._clock = clock

    def sign_in(self, key: str) -> tuple[str, ApiKey]:
        """A new session for ``key`` (AuthenticationError if it is not an active key):
        the token for the cookie, and the key's record."""
        record = self._keys.verify(key)
        token = secrets.token_urlsafe(32)
        now = to_timestamp(self._clock.now())
        with self._db.transaction() as conn:
            conn.execute(  # ended sessions go; then the least recently seen, past the cap
                "DELETE FROM dashboard_sessions WHERE seen_at < ? OR created_at < ?",
                (now - IDLE.total_seconds(), now - LIFETIME.total_seconds()),
            )
            surplus = int(conn.execute("SELECT COUNT(*) FROM dashboard_sessions").fetchone()[0])
            surplus -= MAX_SESSIONS - 1
            if surplus > 0:
                conn.execute(
                    "DELETE FROM dashboard_sessions WHERE digest IN (SELECT digest FROM "
                    "dashboard_sessions ORDER BY seen_at, digest LIMIT ?)",
                    (surplus,),
                )
            conn.execute(
                "INSERT INTO dashboard_sessions(digest, key_id, csrf, created_at, seen_at) "
                "VALUES (?, ?, ?, ?, ?)",
                (_digest(token), record.id, secrets.token_urlsafe(32), now, now),
            )
        return token, record

    def resolve(self, token: str | None) -> tuple[Session, ApiKey]:
        """The live session of ``token`` and its (still active) key; AuthenticationError
        when there is none, it expired, or its key was revoked."""
        if not token:
            raise AuthenticationError("not signed in")
        digest = _digest(token)
        now = self._clock.now()
        with self._db.transaction() as conn:
            row = conn.execute(
                "SELECT key_id, csrf, created_at, seen_at FROM dashboard_sessions WHERE digest = ?",
                (digest,),
            ).fetchone()
            if row is None:
                raise AuthenticationError("not signed in")
            session = Session(
                str(row["key_id"]),
                str(row["csrf"]),
                from_timestamp(float(row["created_at"])),
                from_timestamp(float(row["seen_at"])),
            )
            if now - session.seen > IDLE or now - session.created > LIFETIME:
                conn.execute("DELETE FROM dashboard_sessions WHERE digest = ?", (digest,))
                expired = True
            else:
                conn.execute(
                    "UPDATE dashboard_sessions SET seen_at = ? WHERE digest = ?",
                    (to_timestamp(now), digest),
                )
                session.seen, expired = now, False
        if expired:  # raised once the deletion is committed
            raise AuthenticationError("the session expired")
        record = self._keys.get(session.key_id)
        if not record.active:
            self.sign_out(token)
            raise AuthenticationError(f"API key {record.id} was revoked")
        return session, record

    def sign_out(self, token: str | None) -> None:
        if token:
            with self._db.transaction() as conn:
                conn.execute("DELETE FROM dashboard_sessions WHERE digest = ?", (_digest(token),))

    @staticmethod
    def csrf_ok(session: Session, given: str | None) -> bool:
        """Whether a form's CSRF token is the session's (compared in constant time)."""
        return bool(given) and hmac.compare_digest(session.csrf, given or "")

    def __len__(self) -> int:
        return int(self._db.scalar("SELECT COUNT(*) FROM dashboard_sessions") or 0)
