"""Named, recorded schema migrations.

Each :class:`Migration` runs once, in its own transaction, and is recorded in the
``migrations`` table. Append new migrations to :data:`MIGRATIONS`; never edit one that has
shipped. A database that records a migration this code does not know was written by a newer
omoide and is refused rather than misread.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["MIGRATIONS", "Migration", "split_statements"]


def split_statements(script: str) -> list[str]:
    """Split a SQL script into statements (trigger bodies stay whole)."""
    statements: list[str] = []
    buffer = ""
    for line in script.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            if buffer.strip():
                statements.append(buffer.strip())
            buffer = ""
    if buffer.strip():
        raise ValueError(f"incomplete SQL statement: {buffer.strip()[:80]}")
    return statements


@dataclass(frozen=True)
class Migration:
    """A schema change: SQL statements, or a function given the connection."""

    name: str
    sql: str = ""
    func: Callable[[sqlite3.Connection], None] | None = None

    def apply(self, conn: sqlite3.Connection) -> None:
        # ``executescript`` would commit the surrounding transaction; run statements one by one.
        for statement in split_statements(self.sql):
            conn.execute(statement)
        if self.func is not None:
            self.func(conn)


CORE = """
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

-- Layer 2: episodes. Timestamps are seconds since the epoch (UTC).
CREATE TABLE episodes (
    rowid         INTEGER PRIMARY KEY,
    id            TEXT NOT NULL UNIQUE,
    timestamp     REAL NOT NULL,
    agent_name    TEXT NOT NULL,
    event_type    TEXT NOT NULL,
    description   TEXT NOT NULL,
    context       TEXT NOT NULL DEFAULT '{}',
    outcome       TEXT,
    importance    REAL NOT NULL CHECK (importance >= 0 AND importance <= 1),
    tags          TEXT NOT NULL DEFAULT '[]',
    refs          TEXT NOT NULL DEFAULT '[]',
    access_count  INTEGER NOT NULL DEFAULT 0,
    last_accessed REAL,
    decay_rate    REAL NOT NULL DEFAULT 0.01,
    scope         TEXT NOT NULL DEFAULT 'global',
    protected     INTEGER NOT NULL DEFAULT 0,
    state         TEXT NOT NULL DEFAULT 'active',
    distilled_at  REAL,
    embedding     BLOB NOT NULL,
    created_at    REAL NOT NULL
);
CREATE INDEX episodes_agent_time ON episodes(agent_name, timestamp);
CREATE INDEX episodes_type_time ON episodes(event_type, timestamp);
CREATE INDEX episodes_time ON episodes(timestamp);
CREATE INDEX episodes_state ON episodes(state);

-- Full text of episodes, analysed by omoide.fulltext (Japanese as character bigrams).
CREATE VIRTUAL TABLE episodes_fts USING fts5(
    body, tokenize = 'porter unicode61 remove_diacritics 2'
);

-- Layer 1: working-memory sessions.
CREATE TABLE working_sessions (
    agent_name  TEXT NOT NULL,
    session_id  TEXT NOT NULL,
    max_tokens  INTEGER NOT NULL,
    slots       TEXT NOT NULL DEFAULT '{}',
    created_at  REAL NOT NULL,
    updated_at  REAL NOT NULL,
    PRIMARY KEY (agent_name, session_id)
);
CREATE TABLE working_messages (
    id          INTEGER PRIMARY KEY,
    agent_name  TEXT NOT NULL,
    session_id  TEXT NOT NULL,
    role        TEXT NOT NULL,
    content     TEXT NOT NULL,
    importance  REAL NOT NULL,
    pinned      INTEGER NOT NULL DEFAULT 0,
    tokens      INTEGER NOT NULL,
    metadata    TEXT NOT NULL DEFAULT '{}',
    created_at  REAL NOT NULL,
    FOREIGN KEY (agent_name, session_id)
        REFERENCES working_sessions(agent_name, session_id) ON DELETE CASCADE
);
CREATE INDEX working_messages_session ON working_messages(agent_name, session_id, id);
CREATE TABLE working_pins (
    agent_name  TEXT NOT NULL,
    session_id  TEXT NOT NULL,
    key         TEXT NOT NULL,
    content     TEXT NOT NULL,
    reason      TEXT NOT NULL,
    tokens      INTEGER NOT NULL,
    pinned_at   REAL NOT NULL,
    PRIMARY KEY (agent_name, session_id, key),
    FOREIGN KEY (agent_name, session_id)
        REFERENCES working_sessions(agent_name, session_id) ON DELETE CASCADE
);

-- Layer 3: registry of semantic documents. ChromaDB holds the chunk vectors; this table
-- holds each whole document, its lifecycle and its access statistics.
CREATE TABLE semantic_docs (
    rowid         INTEGER PRIMARY KEY,
    collection    TEXT NOT NULL,
    id            TEXT NOT NULL,
    content       TEXT NOT NULL,
    metadata      TEXT NOT NULL DEFAULT '{}',
    content_hash  TEXT NOT NULL,
    chunk_count   INTEGER NOT NULL,
    agent_name    TEXT NOT NULL DEFAULT '',
    scope         TEXT NOT NULL DEFAULT 'global',
    state         TEXT NOT NULL DEFAULT 'pending',
    protected     INTEGER NOT NULL DEFAULT 0,
    subject       TEXT,
    version       INTEGER,
    superseded_by TEXT,
    superseded_at REAL,
    expires_at    REAL,
    access_count  INTEGER NOT NULL DEFAULT 0,
    last_accessed REAL,
    created_at    REAL NOT NULL,
    updated_at    REAL NOT NULL,
    UNIQUE (collection, id)
);
CREATE INDEX semantic_docs_state ON semantic_docs(state);
CREATE INDEX semantic_docs_subject ON semantic_docs(collection, subject);

-- Layer 4: procedures, every version, and every reported outcome.
CREATE TABLE procedures (
    name              TEXT PRIMARY KEY,
    trigger           TEXT NOT NULL,
    template          TEXT NOT NULL,
    description       TEXT NOT NULL DEFAULT '',
    version           INTEGER NOT NULL,
    success_rate      REAL NOT NULL,
    avg_quality_score REAL NOT NULL,
    execution_count   INTEGER NOT NULL DEFAULT 0,
    agent_name        TEXT NOT NULL DEFAULT '',
    scope             TEXT NOT NULL DEFAULT 'global',
    created_at        REAL NOT NULL,
    last_updated      REAL NOT NULL
);
CREATE TABLE procedure_versions (
    name              TEXT NOT NULL REFERENCES procedures(name) ON DELETE CASCADE,
    version           INTEGER NOT NULL,
    trigger           TEXT NOT NULL,
    template          TEXT NOT NULL,
    success_rate      REAL NOT NULL,
    avg_quality_score REAL NOT NULL,
    execution_count   INTEGER NOT NULL DEFAULT 0,
    created_at        REAL NOT NULL,
    PRIMARY KEY (name, version)
);
CREATE TABLE procedure_outcomes (
    id            INTEGER PRIMARY KEY,
    name          TEXT NOT NULL REFERENCES procedures(name) ON DELETE CASCADE,
    version       INTEGER NOT NULL,
    quality_score REAL NOT NULL,
    success       INTEGER NOT NULL,
    agent_name    TEXT NOT NULL DEFAULT '',
    recorded_at   REAL NOT NULL
);
"""

SERVER_KEYS = """
-- API keys of the REST and MCP servers. A key is shown once when it is minted; only its
-- SHA-256 is kept (keys are 256-bit random secrets, so a fast hash cannot be brute-forced).
-- ``id`` is the public part of the key, printed in listings and used to revoke it.
CREATE TABLE api_keys (
    id          TEXT PRIMARY KEY,
    agent_name  TEXT NOT NULL,
    key_hash    TEXT NOT NULL UNIQUE,
    admin       INTEGER NOT NULL DEFAULT 0,
    label       TEXT NOT NULL DEFAULT '',
    created_at  REAL NOT NULL,
    revoked_at  REAL
);
CREATE INDEX api_keys_agent ON api_keys(agent_name);
"""

#: Every migration, in order. Append only.
MIGRATIONS: list[Migration] = [
    Migration("0001_core", CORE),
    Migration("0006_server_keys", SERVER_KEYS),
]
