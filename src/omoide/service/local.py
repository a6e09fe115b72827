"""What the front ends do — the CLI, the REST server and the MCP server — over one Memory.

Each operation is a thin call into the library with the caller's identity applied:

* writes are recorded as the calling agent, never as an agent named in a request;
* reads see what the caller's scopes allow: its own items, global ones, and those shared with
  it or with one of its teams (``reader=`` / ``reader_teams=`` of the layers);
* changing or deleting an existing item (an episode, a document, a procedure's template) is
  for its owner; reporting an outcome is for anyone who can read the procedure;
* admin callers (admin keys, the local operator) read every scope and may run whole-store
  operations (export, import, API keys);
* an item the caller may not read answers exactly as an absent one; taking an explicit id
  that an unreadable item holds is a 409 that names no owner; ids a client chooses may not
  start with a prefix omoide generates ids with (:mod:`omoide.core.ids`).

Results are plain JSON-ready dicts — the shapes the REST API returns — so a front end runs the
operations in-process (:class:`LocalOperations`) or against a server
(:class:`~omoide.service.remote.RemoteOperations`) without knowing which. The operations live
in mixins by concern (:mod:`omoide.service._layer_ops`, :mod:`omoide.service._pipeline_ops`)
on the shared rules of :mod:`omoide.service.caller`; this module composes them with the
whole-store ones.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from omoide.core.scope import reader_predicate
from omoide.memory import Memory
from omoide.service._layer_ops import LayerOperations
from omoide.service._pipeline_ops import PipelineOperations
from omoide.service.caller import Caller, json_dict, to_json
from omoide.service.keys import KeyStore
from omoide.service.transfer import Progress, export_jsonl, import_jsonl

__all__ = ["Caller", "LocalOperations", "layer_stats", "to_json"]

_json = json_dict


class LocalOperations(LayerOperations, PipelineOperations):
    """The operations over an open :class:`Memory`, as ``caller``."""

    # -- whole store -------------------------------------------------------------------

    def stats(self) -> dict[str, Any]:
        """Counts and sizes per layer and per agent, of what the caller may read."""
        return layer_stats(self.mem, self.caller)

    def export_lines(
        self, *, embeddings: bool = True, progress: Progress | None = None
    ) -> Iterator[str]:
        self._require_admin("export")
        return export_jsonl(self.mem, embeddings=embeddings, progress=progress)

    def import_lines(
        self,
        lines: Iterable[str | bytes],
        *,
        reembed: bool = False,
        progress: Progress | None = None,
    ) -> dict[str, Any]:
        self._require_admin("import")
        return import_jsonl(self.mem, lines, reembed=reembed, progress=progress).as_dict()

    def _keys(self) -> KeyStore:
        self._require_admin("managing API keys")
        assert self.mem.db is not None
        return KeyStore(self.mem.db, clock=self.mem.clock)

    def add_key(self, agent_name: str, *, admin: bool = False, label: str = "") -> dict[str, Any]:
        info, secret = self._keys().add(agent_name, admin=admin, label=label)
        return {**_json(info), "key": secret}

    def list_keys(self, *, include_revoked: bool = False) -> list[dict[str, Any]]:
        return [_json(k) for k in self._keys().list_keys(include_revoked=include_revoked)]

    def revoke_key(self, key_id: str) -> dict[str, Any]:
        return _json(self._keys().revoke(key_id))


def layer_stats(mem: Memory, caller: Caller) -> dict[str, Any]:
    """Counts and payload sizes per layer and per agent, limited to what ``caller`` reads.

    Sizes are the bytes of what each layer stores (text, JSON fields and episode vectors);
    the files on disk are reported separately, to admins.
    """
    db = mem.db
    assert db is not None
    pred, params = reader_predicate(caller.reader, caller.teams)
    agents: dict[str, dict[str, int]] = {}

    def per_agent(sql: str, args: Sequence[Any], fields: Sequence[str]) -> None:
        for row in db.query(sql, args):
            entry = agents.setdefault(row[0] or "", {})
            for i, name in enumerate(fields, start=1):
                entry[name] = entry.get(name, 0) + int(row[i] or 0)

    episode_bytes = (
        "LENGTH(CAST(description AS BLOB)) + LENGTH(CAST(COALESCE(outcome, '') AS BLOB)) "
        "+ LENGTH(CAST(context AS BLOB)) + LENGTH(CAST(tags AS BLOB)) "
        "+ LENGTH(CAST(refs AS BLOB)) + LENGTH(embedding)"
    )
    per_agent(
        f"SELECT agent_name, COUNT(*), SUM({episode_bytes}) FROM episodes "
        f"WHERE state='active' AND {pred} GROUP BY agent_name",
        params,
        ("episodes", "episode_bytes"),
    )
    doc_bytes = "LENGTH(CAST(content AS BLOB)) + LENGTH(CAST(metadata AS BLOB))"
    per_agent(
        f"SELECT agent_name, COUNT(*), SUM({doc_bytes}) FROM semantic_docs "
        f"WHERE state='active' AND {pred} GROUP BY agent_name",
        params,
        ("documents", "document_bytes"),
    )
    per_agent(
        f"SELECT agent_name, COUNT(*), SUM(LENGTH(CAST(template AS BLOB))) FROM procedures "
        f"WHERE {pred} GROUP BY agent_name",
        params,
        ("procedures", "procedure_bytes"),
    )
    own = "1" if caller.read_all else "s.agent_name = ?"
    own_params = [] if caller.read_all else [caller.agent or ""]
    per_agent(
        "SELECT s.agent_name, COUNT(DISTINCT s.session_id), "
        "COALESCE(SUM(m.tokens), 0) FROM working_sessions s LEFT JOIN working_messages m "
        "ON m.agent_name = s.agent_name AND m.session_id = s.session_id "
        f"WHERE {own} GROUP BY s.agent_name",
        own_params,
        ("sessions", "message_tokens"),
    )

    def total(name: str) -> int:
        return sum(a.get(name, 0) for a in agents.values())

    states = {
        str(row[0]): int(row[1])
        for row in db.query(
            f"SELECT state, COUNT(*) FROM episodes WHERE {pred} GROUP BY state", params
        )
    }
    pin_tokens = int(
        db.scalar(f"SELECT COALESCE(SUM(tokens), 0) FROM working_pins s WHERE {own}", own_params)
        or 0
    )

    collections = {}
    caps = {c.name: c for c in mem.collection_stats()}
    for name in mem.semantic.collections:
        row = db.query_one(
            f"SELECT COUNT(*), COALESCE(SUM({doc_bytes}), 0) FROM semantic_docs "
            f"WHERE collection=? AND state='active' AND {pred}",
            (name, *params),
        )
        assert row is not None
        collections[name] = {
            "documents": int(row[0]),
            "bytes": int(row[1]),
            "max_docs": caps[name].max_docs,
            "full": caps[name].full,
        }
    out: dict[str, Any] = {
        "layers": {
            "working": {
                "sessions": total("sessions"),
                "message_tokens": total("message_tokens"),
                "pin_tokens": pin_tokens,
            },
            "episodic": {
                "episodes": total("episodes"),
                "bytes": total("episode_bytes"),
                "compressed": states.get("compressed", 0),
                "archived": states.get("archived", 0),
            },
            "semantic": {
                "documents": total("documents"),
                "bytes": total("document_bytes"),
                "collections": collections,
            },
            "procedural": {"procedures": total("procedures"), "bytes": total("procedure_bytes")},
        },
        "agents": [
            {
                "agent": agent,
                **{
                    k: values.get(k, 0)
                    for k in (
                        "episodes",
                        "episode_bytes",
                        "documents",
                        "document_bytes",
                        "procedures",
                        "procedure_bytes",
                        "sessions",
                        "message_tokens",
                    )
                },
            }
            for agent, values in sorted(agents.items())
        ],
        "storage": None,
    }
    if caller.admin:
        whole = mem.stats()
        out["storage"] = {
            "path": whole["path"],
            "database_bytes": whole["database_bytes"],
            "chroma_bytes": whole["chroma_bytes"],
        }
    return out
