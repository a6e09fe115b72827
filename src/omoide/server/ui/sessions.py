"""Signed-in sessions of the dashboard: a random token in a cookie, its key on the server.

Signing in with an API key mints a session token (256 random bits) that goes into an
``HttpOnly``, ``SameSite=Strict`` cookie; the server keeps only the token's SHA-256 with the
key's id, so neither the key nor anything that opens the session is ever in a URL, a page or
the browser's script. Every request looks the key up again by id, so a revoked key ends its
sessions at once. Each session has its own CSRF token, which every state-changing form
carries and the server compares in constant time. Sessions live in the server process
(a restart signs everyone out) and end after ``IDLE`` without a request or ``LIFETIME``.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
from dataclasses import dataclass
from datetime import datetime, timedelta

from omoide.clock import Clock
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
        self._keys = KeyStore(db, clock=clock)
        self._clock = clock
        self._sessions: dict[str, Session] = {}
        self._lock = threading.Lock()

    def sign_in(self, key: str) -> tuple[str, ApiKey]:
        """A new session for ``key`` (AuthenticationError if it is not an active key):
        the token for the cookie, and the key's record."""
        record = self._keys.verify(key)
        token = secrets.token_urlsafe(32)
        now = self._clock.now()
        with self._lock:
            if len(self._sessions) >= MAX_SESSIONS:
                oldest = min(self._sessions, key=lambda d: self._sessions[d].seen)
                del self._sessions[oldest]
            self._sessions[_digest(token)] = Session(record.id, secrets.token_urlsafe(32), now, now)
        return token, record

    def resolve(self, token: str | None) -> tuple[Session, ApiKey]:
        """The live session of ``token`` and its (still active) key; AuthenticationError
        when there is none, it expired, or its key was revoked."""
        if not token:
            raise AuthenticationError("not signed in")
        digest = _digest(token)
        now = self._clock.now()
        with self._lock:
            session = self._sessions.get(digest)
            if session is None:
                raise AuthenticationError("not signed in")
            if now - session.seen > IDLE or now - session.created > LIFETIME:
                del self._sessions[digest]
                raise AuthenticationError("the session expired")
            session.seen = now
        record = self._keys.get(session.key_id)
        if not record.active:
            self.sign_out(token)
            raise AuthenticationError(f"API key {record.id} was revoked")
        return session, record

    def sign_out(self, token: str | None) -> None:
        if token:
            with self._lock:
                self._sessions.pop(_digest(token), None)

    @staticmethod
    def csrf_ok(session: Session, given: str | None) -> bool:
        """Whether a form's CSRF token is the session's (compared in constant time)."""
        return bool(given) and hmac.compare_digest(session.csrf, given or "")

    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)
