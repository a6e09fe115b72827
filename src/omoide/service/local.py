"""What the front ends do — the CLI, the REST server and the MCP server — over one Memory.

Each operation is a thin call into the library with the caller's identity applied:

* writes are recorded as the calling agent, never as an agent named in a request;
* reads see what the caller's scopes allow: its own items, global ones, and those shared with
  it or with one of its teams (``reader=`` / ``reader_teams=`` of the layers);
* changing or deleting an existing item (an episode, a document, a procedure's template) is
  for its owner; reporting an outcome is for anyone who can read the procedure;
* admin callers (admin keys, the local operator) read every scope and may run whole-store
  operations (export, import, API keys);
* an item the caller may not read answers exactly as an absent one;
* an id or procedure name an agent (not an admin) chooses is its own: stored as
  ``agent:id`` (:func:`omoide.core.ids.qualified_id`), so agent A's ``x`` and agent B's ``x``
  are two items and no write can collide with, or tell of, another agent's item. An id the
  agent names in a read, update, delete, restore, audit or outcome is its own ``agent:x``
  first, then ``x`` as stored (another agent's shared item is reached by its stored id); an id
  that already starts with the agent's name is kept, one with another's name nests
  (``a:x`` by ``b`` is ``b:a:x``). Admins and the local operator write ids as given;
* ids a client chooses may not start with a prefix omoide generates ids with
  (:mod:`omoide.core.ids`).

Results are plain JSON-ready dicts — the shapes the REST API returns — so a front end runs the
operations in-process (:class:`LocalOperations`) or against a server
(:class:`~omoide.service.remote.RemoteOperations`) without knowing which. The operations live
in mixins by concern (:mod:`omoide.service._layer_ops`, :mod:`omoide.service._pipeline_ops`)
on the shared rules of :mod:`omoide.service.caller`; this module composes them with the
whole-store ones.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from omoide.layers.working import session_usage
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
    reader, teams = caller.reader, caller.teams
    agents: dict[str, dict[str, int]] = {}

    def per_agent(usage: Mapping[str, tuple[int, ...]], fields: tuple[str, ...]) -> None:
        for agent, figures in usage.items():
            entry = agents.setdefault(agent, {})
            for name, value in zip(fields, figures, strict=True):
                entry[name] = entry.get(name, 0) + value

    per_agent(mem.episodic.rows.usage(reader, teams), ("episodes", "episode_bytes"))
    per_agent(mem.semantic.registry.usage(reader, teams), ("documents", "document_bytes"))
    per_agent(mem.procedural.usage(reader, teams), ("procedures", "procedure_bytes"))
    own = None if caller.read_all else caller.agent or ""
    per_agent(session_usage(mem.db, own), ("sessions", "message_tokens", "pin_tokens"))

    def total(name: str) -> int:
        return sum(a.get(name, 0) for a in agents.values())

    states = mem.episodic.rows.states(reader, teams)

    collections = {}
    caps = {c.name: c for c in mem.collection_stats()}
    for name in mem.semantic.collections:
        usage = mem.semantic.registry.usage(reader, teams, collection=name).values()
        collections[name] = {
            "documents": sum(n for n, _ in usage),
            "bytes": sum(b for _, b in usage),
            "max_docs": caps[name].max_docs,
            "full": caps[name].full,
        }
    out: dict[str, Any] = {
        "layers": {
            "working": {
                "sessions": total("sessions"),
                "message_tokens": total("message_tokens"),
                "pin_tokens": total("pin_tokens"),
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
