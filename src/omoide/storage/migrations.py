"""Named, recorded schema migrations: frozen SQL.

Each :class:`Migration` runs once, in its own transaction, and is recorded in the
``migrations`` table. Append new migrations to :data:`MIGRATIONS`; never edit one that has
shipped. A database that records a migration this code does not know was written by a newer
omoide and is refused rather than misread.

A migration is SQL only: it never calls domain code, so replaying an old migration does
what it did when it shipped. Data that must be derived by code (full-text terms analysed in
Python, context keys) is a *rebuild* the migration names in :attr:`Migration.rebuilds`: the
database records it as requested, and the layer owning the data runs it (once, in a
transaction) when it next opens the store (:meth:`omoide.storage.Database.run_rebuild`).

Each table's SQL belongs to one layer; the owner is named in the owning module's docstring.
This module only creates and alters the schema.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from omoide.storage.rebuilds import (
    CHUNK_TOKENS_REBUILD,
    CONTEXT_KEYS_REBUILD,
    EPISODE_TOKENS_REBUILD,
    FULLTEXT_REBUILDS,
    SEMANTIC_FULLTEXT_REBUILD,
)

__all__ = [
    "MIGRATIONS",
    "Migration",
    "split_statements",
]


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
    """A schema change: SQL statements, and the data rebuilds it requests."""

    name: str
    sql: str = ""
    #: Named data rebuilds the owning layers run after this migration (see the module).
    rebuilds: tuple[str, ...] = ()

    def apply(self, conn: sqlite3.Connection) -> None:
        # ``executescript`` would commit the surrounding transaction; run statements one by one.
        for statement in split_statements(self.sql):
            conn.execute(statement)


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

-- Full text of episodes, analysed by omoide.text.fulltext (Japanese as character bigrams).
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

FORGETTING = """
-- Lifecycle of forgotten items: archived (out of recall and search, restorable) and
-- compressed (details replaced by a summary; id and original date kept).
ALTER TABLE episodes ADD COLUMN archived_at REAL;
ALTER TABLE episodes ADD COLUMN compressed_at REAL;
-- The knowledge document an episode was distilled into (NULL: not distilled).
ALTER TABLE episodes ADD COLUMN distilled_into TEXT;
ALTER TABLE semantic_docs ADD COLUMN archived_at REAL;
ALTER TABLE semantic_docs ADD COLUMN compressed_at REAL;
CREATE INDEX episodes_undistilled ON episodes(state) WHERE distilled_at IS NULL;

-- Every forgetting action (and every restore), append-only. ``snapshot`` is the item as it
-- was before the action (JSON, without its embedding): enough to restore it.
CREATE TABLE audit_log (
    id          INTEGER PRIMARY KEY,
    at          REAL NOT NULL,
    run_id      TEXT NOT NULL,
    policy      TEXT NOT NULL,
    layer       TEXT NOT NULL,
    collection  TEXT NOT NULL DEFAULT '',
    item_id     TEXT NOT NULL,
    action      TEXT NOT NULL,
    reason      TEXT NOT NULL,
    snapshot    TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX audit_log_item ON audit_log(item_id, id);
CREATE INDEX audit_log_at ON audit_log(at);
CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
BEGIN
    SELECT RAISE(ABORT, 'omoide-audit: the audit log is append-only');
END;
CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
BEGIN
    SELECT RAISE(ABORT, 'omoide-audit: the audit log is append-only');
END;

-- Knowledge documents a distillation run is writing: a run interrupted between writing a
-- document and marking its episodes is completed from here by the next run.
CREATE TABLE distill_journal (
    collection  TEXT NOT NULL,
    doc_id      TEXT NOT NULL,
    source_ids  TEXT NOT NULL,
    started_at  REAL NOT NULL,
    PRIMARY KEY (collection, doc_id)
);

-- Never forget, enforced by the store itself: a protected row cannot be deleted, leave the
-- live states, have its content rewritten, or lose its protection, whatever path asks.
-- (Database turns recursive_triggers on, so INSERT OR REPLACE cannot sidestep the DELETE
-- triggers.)
CREATE TRIGGER episodes_protected_delete BEFORE DELETE ON episodes
WHEN OLD.protected = 1
BEGIN
    SELECT RAISE(ABORT, 'omoide-protected: a never-forget episode cannot be deleted');
END;
CREATE TRIGGER episodes_protected_update BEFORE UPDATE ON episodes
WHEN OLD.protected = 1 AND (
    NEW.protected IS NOT 1
    OR NEW.state IS NOT OLD.state
    OR NEW.archived_at IS NOT OLD.archived_at
    OR NEW.compressed_at IS NOT OLD.compressed_at
    OR NEW.id IS NOT OLD.id
    OR NEW.description IS NOT OLD.description
    OR NEW.context IS NOT OLD.context
    OR NEW.event_type IS NOT OLD.event_type
    OR NEW.agent_name IS NOT OLD.agent_name
    OR NEW.timestamp IS NOT OLD.timestamp
    OR NEW.scope IS NOT OLD.scope
    OR (OLD.outcome IS NOT NULL AND NEW.outcome IS NOT OLD.outcome)
)
BEGIN
    SELECT RAISE(ABORT,
        'omoide-protected: a never-forget episode cannot be archived, compressed or rewritten');
END;
CREATE TRIGGER semantic_docs_protected_delete BEFORE DELETE ON semantic_docs
WHEN OLD.protected = 1
BEGIN
    SELECT RAISE(ABORT, 'omoide-protected: a never-forget document cannot be deleted');
END;
CREATE TRIGGER semantic_docs_protected_update BEFORE UPDATE ON semantic_docs
WHEN OLD.protected = 1 AND (
    NEW.protected IS NOT 1
    OR NEW.state NOT IN ('pending', 'active')
    OR NEW.archived_at IS NOT OLD.archived_at
    OR NEW.compressed_at IS NOT OLD.compressed_at
    OR NEW.id IS NOT OLD.id
    OR NEW.collection IS NOT OLD.collection
    OR NEW.content IS NOT OLD.content
)
BEGIN
    SELECT RAISE(ABORT,
        'omoide-protected: a never-forget document cannot be archived, compressed or rewritten');
END;
"""

RECALL_LOG = """
-- Provenance of recalls: which memories went into which context, for whom, and when.
CREATE TABLE recall_log (
    id            TEXT PRIMARY KEY,
    created_at    REAL NOT NULL,
    agent_name    TEXT NOT NULL,
    session_id    TEXT,
    query         TEXT NOT NULL,
    layers        TEXT NOT NULL DEFAULT '[]',
    time_start    REAL,
    time_end      REAL,
    budget_tokens INTEGER NOT NULL,
    tokens_used   INTEGER NOT NULL
);
CREATE INDEX recall_log_time ON recall_log(created_at);
CREATE INDEX recall_log_agent ON recall_log(agent_name, created_at);
CREATE TABLE recall_log_items (
    recall_id TEXT NOT NULL REFERENCES recall_log(id) ON DELETE CASCADE,
    position  INTEGER NOT NULL,
    layer     TEXT NOT NULL,
    item_id   TEXT NOT NULL,
    score     REAL NOT NULL,
    tokens    INTEGER NOT NULL,
    PRIMARY KEY (recall_id, position)
);
CREATE INDEX recall_log_items_item ON recall_log_items(layer, item_id);
"""

EPISODE_CONTEXT_KEYS = """
-- Context keys of episodes (omoide.layers.episodic.context_keys): the episode, its neighbours in
-- its thread.
CREATE TABLE episode_threads (
    rowid     INTEGER PRIMARY KEY,
    thread    TEXT NOT NULL,
    timestamp REAL NOT NULL
);
CREATE INDEX episode_threads_order ON episode_threads(thread, timestamp, rowid);
CREATE VIRTUAL TABLE episode_keys_fts USING fts5(
    self, near, far, tokenize = 'porter unicode61 remove_diacritics 2'
);
"""


INDEXING = """
-- Files indexed into a semantic collection (omoide.ingest.indexing): one row per file of a source
-- tree. content_hash is NULL while an update of the file's documents is in flight, so a run
-- interrupted by a crash re-indexes (or removes) the file next time. doc_ids lists the
-- semantic documents the file produced (JSON array).
CREATE TABLE indexed_files (
    collection   TEXT NOT NULL,
    source       TEXT NOT NULL,
    path         TEXT NOT NULL,
    content_hash TEXT,
    size         INTEGER NOT NULL,
    mtime        REAL NOT NULL,
    language     TEXT NOT NULL,
    commit_id    TEXT,
    doc_ids      TEXT NOT NULL DEFAULT '[]',
    chunk_count  INTEGER NOT NULL DEFAULT 0,
    indexed_at   REAL NOT NULL,
    PRIMARY KEY (collection, source, path)
) WITHOUT ROWID;

-- Documents with an expiry (the external information cache): found quickly at query time
-- and by the purge.
CREATE INDEX semantic_docs_expires ON semantic_docs(collection, expires_at)
    WHERE expires_at IS NOT NULL;
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

DASHBOARD_SESSIONS = """
-- Signed-in sessions of the dashboard, in the database so that every replica (and a
-- restarted server) knows them: the SHA-256 of the cookie's token, never the token itself.
CREATE TABLE dashboard_sessions (
    digest      TEXT PRIMARY KEY,
    key_id      TEXT NOT NULL,
    csrf        TEXT NOT NULL,
    created_at  REAL NOT NULL,
    seen_at     REAL NOT NULL
);
CREATE INDEX dashboard_sessions_seen ON dashboard_sessions(seen_at);
"""

SEMANTIC_FULLTEXT = """
-- Full text of semantic documents, analysed like episodes (omoide.text.fulltext), so that a
-- document is found by its words as well as by its meaning. The existing documents are
-- indexed by the rebuild this migration requests. (The triggers below called a Python
-- function; 0010 drops them.)
CREATE VIRTUAL TABLE semantic_docs_fts USING fts5(
    body, tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER semantic_docs_fts_insert AFTER INSERT ON semantic_docs
BEGIN
    INSERT INTO semantic_docs_fts(rowid, body) VALUES (new.rowid, omoide_index_text(new.content));
END;
CREATE TRIGGER semantic_docs_fts_update AFTER UPDATE OF content ON semantic_docs
WHEN old.content IS NOT new.content
BEGIN
    DELETE FROM semantic_docs_fts WHERE rowid = old.rowid;
    INSERT INTO semantic_docs_fts(rowid, body) VALUES (new.rowid, omoide_index_text(new.content));
END;
CREATE TRIGGER semantic_docs_fts_delete AFTER DELETE ON semantic_docs
BEGIN
    DELETE FROM semantic_docs_fts WHERE rowid = old.rowid;
END;
"""

ADMIN_PURGE = """
-- Admin purge: the one way a never-forget item leaves the store. A grant names one item and
-- the audit row (action 'purge', same item) that records who purged it, why, and its
-- snapshot; it is inserted in the transaction that writes that audit row, the protection
-- triggers let a delete of exactly that item through, and the delete consumes the grant.
-- Without a grant every other delete, archive or rewrite is still refused.
CREATE TABLE purge_grants (
    layer       TEXT NOT NULL,
    collection  TEXT NOT NULL DEFAULT '',
    item_id     TEXT NOT NULL,
    audit_id    INTEGER NOT NULL REFERENCES audit_log(id),
    PRIMARY KEY (layer, collection, item_id)
);
CREATE TRIGGER purge_grants_audited BEFORE INSERT ON purge_grants
WHEN NOT EXISTS (
    SELECT 1 FROM audit_log WHERE id = NEW.audit_id AND action = 'purge'
        AND layer = NEW.layer AND collection = NEW.collection AND item_id = NEW.item_id
)
BEGIN
    SELECT RAISE(ABORT, 'omoide-protected: a purge needs its audit record');
END;
DROP TRIGGER episodes_protected_delete;
CREATE TRIGGER episodes_protected_delete BEFORE DELETE ON episodes
WHEN OLD.protected = 1 AND NOT EXISTS (SELECT 1 FROM purge_grants
    WHERE layer = 'episodic' AND collection = '' AND item_id = OLD.id)
BEGIN
    SELECT RAISE(ABORT, 'omoide-protected: a never-forget episode cannot be deleted');
END;
CREATE TRIGGER episodes_purged AFTER DELETE ON episodes
BEGIN
    DELETE FROM purge_grants WHERE layer = 'episodic' AND collection = '' AND item_id = OLD.id;
END;
DROP TRIGGER semantic_docs_protected_delete;
CREATE TRIGGER semantic_docs_protected_delete BEFORE DELETE ON semantic_docs
WHEN OLD.protected = 1 AND NOT EXISTS (SELECT 1 FROM purge_grants
        WHERE layer = 'semantic' AND collection = OLD.collection AND item_id = OLD.id)
BEGIN
    SELECT RAISE(ABORT, 'omoide-protected: a never-forget document cannot be deleted');
END;
CREATE TRIGGER semantic_docs_purged AFTER DELETE ON semantic_docs
BEGIN
    DELETE FROM purge_grants
        WHERE layer = 'semantic' AND collection = OLD.collection AND item_id = OLD.id;
END;
-- A purged document leaves Chroma before its row goes: the row may move to 'deleting'
-- (and only to it) under a grant.
DROP TRIGGER semantic_docs_protected_update;
CREATE TRIGGER semantic_docs_protected_update BEFORE UPDATE ON semantic_docs
WHEN OLD.protected = 1 AND (
    NEW.protected IS NOT 1
    OR (NEW.state NOT IN ('pending', 'active')
        AND NOT (NEW.state = 'deleting' AND EXISTS (SELECT 1 FROM purge_grants
        WHERE layer = 'semantic' AND collection = OLD.collection AND item_id = OLD.id)))
    OR NEW.archived_at IS NOT OLD.archived_at
    OR NEW.compressed_at IS NOT OLD.compressed_at
    OR NEW.id IS NOT OLD.id
    OR NEW.collection IS NOT OLD.collection
    OR NEW.content IS NOT OLD.content
)
BEGIN
    SELECT RAISE(ABORT,
        'omoide-protected: a never-forget document cannot be archived, compressed or rewritten');
END;
"""

PROCEDURE_AGENT_FIGURES = """
-- Outcomes folded per reporting agent (see omoide.layers.procedural): each agent's own EMA of a
-- version's success rate and quality; the version's figures are their mean, so one agent
-- reporting many outcomes cannot drown the others.
CREATE TABLE procedure_agent_figures (
    name              TEXT NOT NULL REFERENCES procedures(name) ON DELETE CASCADE,
    version           INTEGER NOT NULL,
    agent_name        TEXT NOT NULL,
    success_rate      REAL NOT NULL,
    avg_quality_score REAL NOT NULL,
    execution_count   INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (name, version, agent_name)
);
"""

FULLTEXT_IN_PYTHON = """
-- Full text is indexed one way: the owning layer analyses the text in Python and writes the
-- FTS row in the transaction that writes the row. No trigger calls a Python function, so any
-- SQLite client may write or delete rows (its rows are indexed by the next rebuild).
DROP TRIGGER semantic_docs_fts_insert;
DROP TRIGGER semantic_docs_fts_update;
DROP TRIGGER semantic_docs_fts_delete;
"""

TOKEN_COUNTS = """
-- Token counts made when an item is written, so that recall packs a context without counting:
-- of an episode's text as a context renders it, and of each chunk of a document (a JSON array,
-- by chunk). NULL: not counted yet. The meta table records which counter made them.
ALTER TABLE episodes ADD COLUMN tokens INTEGER;
ALTER TABLE semantic_docs ADD COLUMN chunk_tokens TEXT;
"""

#: Every migration, in order. Append only.
MIGRATIONS: list[Migration] = [
    Migration("0001_core", CORE),
    Migration("0002_forgetting", FORGETTING),
    Migration("0003_recall_log", RECALL_LOG),
    Migration("0004_episode_context_keys", EPISODE_CONTEXT_KEYS, (CONTEXT_KEYS_REBUILD,)),
    Migration("0005_indexing", INDEXING),
    Migration("0006_server_keys", SERVER_KEYS),
    Migration("0007_semantic_fulltext", SEMANTIC_FULLTEXT, (SEMANTIC_FULLTEXT_REBUILD,)),
    Migration("0008_admin_purge", ADMIN_PURGE),
    Migration("0009_procedure_agent_figures", PROCEDURE_AGENT_FIGURES),
    Migration("0010_fulltext_in_python", FULLTEXT_IN_PYTHON),
    Migration("0011_token_counts", TOKEN_COUNTS, (EPISODE_TOKENS_REBUILD, CHUNK_TOKENS_REBUILD)),
    Migration("0012_dashboard_sessions", DASHBOARD_SESSIONS),
    # A version's full text holds its subject and its earlier versions' words: index again.
    Migration("0013_semantic_fulltext_versions", "", (SEMANTIC_FULLTEXT_REBUILD,)),
    # "same-day" is also indexed as "sameday": every full-text index is analysed again.
    Migration("0014_hyphenated_compounds", "", FULLTEXT_REBUILDS),
]
