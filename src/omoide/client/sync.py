"""``omoide.Client``: the library's surface over a running ``omoide serve``.

>>> from omoide import Client
>>> with Client("http://127.0.0.1:8765", key="omk_...") as mem:        # doctest: +SKIP
...     mem.episodic.record("cto", "decision", "価格は¥500から始める")
...     mem.recall("pricing decision", agent_name="cto").render()

The layers and pipelines answer with the records :class:`~omoide.memory.Memory` returns
(:class:`~omoide.core.models.Episode`, :class:`~omoide.recall.context.Context`, the reports),
and refusals raise the same :mod:`omoide.errors` exceptions, so code moves from an embedded
store to a server by changing ``Memory(path)`` into ``Client(url, key=...)``. What differs is
who decides: the key's agent writes (a call naming another agent is refused) and reads what
its scopes allow, and the server's clock dates what has no timestamp.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from types import TracebackType
from typing import Any, TypeVar

import omoide.client.calls as calls
from omoide.client.sessions import RemoteWorkingMemory
from omoide.client.transport import DEFAULT_TIMEOUT, SyncTransport, server_address
from omoide.core.models import Episode, Procedure, ProcedureVersion, QueryHit
from omoide.core.models import SemanticDocument as Document
from omoide.errors import AlreadyExistsError, NotFoundError, ValidationError
from omoide.ingest.conversation import AddReport
from omoide.ingest.reports import IndexReport
from omoide.pipelines.distill import DistillReport
from omoide.pipelines.forgetting import ForgetReport
from omoide.pipelines.lifecycle import AuditEntry
from omoide.pipelines.scheduler import MaintenanceReport
from omoide.recall.context import Context

__all__ = ["Client", "RemoteEpisodic", "RemoteProcedural", "RemoteSemantic"]

T = TypeVar("T")


class Client:
    """Memory on a running ``omoide serve``, with the surface of :class:`~omoide.memory.Memory`.

    ``url`` defaults to ``$OMOIDE_URL``, ``key`` to ``$OMOIDE_API_KEY`` (``omoide keys add
    AGENT`` mints one); ``timeout`` bounds every request, in seconds. The server is asked who
    the key is at once, so a wrong address or key fails here, not at the first write.
    """

    def __init__(
        self, url: str | None = None, *, key: str | None = None, timeout: float = DEFAULT_TIMEOUT
    ) -> None:
        self.url, key = server_address(url, key)
        self._transport = SyncTransport(self.url, key, timeout)
        try:
            identity = self._transport.run(calls.whoami())
        except BaseException:
            self._transport.close()
            raise
        #: The agent the key stands for (it writes; its scopes decide what it reads).
        self.agent: str | None = identity.get("agent")
        self.teams: tuple[str, ...] = tuple(identity.get("teams", ()))
        self.admin: bool = bool(identity.get("admin"))
        self.episodic = RemoteEpisodic(self)
        self.semantic = RemoteSemantic(self)
        self.procedural = RemoteProcedural(self)

    def _run(self, call: calls.Call[T]) -> T:
        return self._transport.run(call)

    # -- layers ------------------------------------------------------------------------

    def working(
        self, agent_name: str, session_id: str = "default", max_tokens: int | None = None
    ) -> RemoteWorkingMemory:
        """The working memory of ``(agent_name, session_id)`` on the server (created if new;
        resized when ``max_tokens`` differs)."""
        calls.check_agent(self.agent, agent_name)
        if max_tokens is not None:
            self._run(calls.open_session(session_id, max_tokens))
        else:
            try:
                self._run(calls.session(session_id))
            except NotFoundError:
                # Creating needs a size; writing an empty slot of a new session makes one of
                # the server's default size.
                self._run(calls.set_slot(session_id, "scratchpad", None))
        return RemoteWorkingMemory(self, agent_name, session_id)

    # -- recall and the pipelines -------------------------------------------------------

    def recall(
        self,
        query: str,
        *,
        agent_name: str,
        session_id: str | None = None,
        budget_tokens: int | None = None,
        layers: Sequence[str] | None = None,
        collections: Sequence[str] | None = None,
        top_k: int | None = None,
        min_score: float | None = None,
        diversity: float | None = None,
        now: datetime | str | None = None,
    ) -> Context:
        """The memories that answer ``query``, as :meth:`Memory.recall` (``now`` is the
        server's clock and cannot be replaced)."""
        calls.check_agent(self.agent, agent_name)
        calls.unsupported("now", now)
        return self._run(
            calls.recall(
                query,
                session_id,
                budget_tokens,
                layers,
                collections=collections,
                top_k=top_k,
                min_score=min_score,
                diversity=diversity,
            )
        )

    def add(
        self,
        messages: Any,
        *,
        agent_name: str,
        session_id: str,
        timestamp: datetime | str | None = None,
        scope: str | Sequence[str] | None = None,
    ) -> AddReport:
        """A conversation's messages as episodes and working memory, as :meth:`Memory.add`
        (``POST /v1/messages``; the server's LLM, if it has one, extracts from them)."""
        calls.check_agent(self.agent, agent_name)
        return self._run(calls.add(session_id, messages, timestamp, scope))

    def distill(self, batch_size: int | None = None) -> DistillReport:
        """Run distillation now (admin keys)."""
        calls.unsupported("batch_size", batch_size)
        return self._run(calls.distill())

    def forget(self, dry_run: bool = False) -> ForgetReport:
        """Apply the forgetting policies (admin keys); a dry run is open to every key."""
        return self._run(calls.forget(dry_run))

    def maintain(self) -> MaintenanceReport:
        """The daily job now: distill, forget, collection policies (admin keys)."""
        return self._run(calls.maintain())

    def restore(
        self, item_id: str, *, layer: str | None = None, collection: str | None = None
    ) -> str:
        """Bring an archived or compressed item back; return its layer."""
        return self._run(calls.restore(item_id, layer, collection))

    def purge(
        self, item_id: str, *, reason: str, layer: str = "episodic", collection: str = ""
    ) -> AuditEntry:
        """Remove an item for good (admin keys); audited as the key's agent."""
        return self._run(calls.purge(item_id, reason, layer, collection))

    def audit(
        self,
        item_id: str | None = None,
        *,
        policy: str | None = None,
        layer: str | None = None,
        action: str | None = None,
        run_id: str | None = None,
        since: datetime | str | None = None,
        until: datetime | str | None = None,
        limit: int = 100,
    ) -> list[AuditEntry]:
        """The audit log, newest first (entries of items the key's agent may read)."""
        filters = {
            "policy": policy,
            "layer": layer,
            "action": action,
            "run_id": run_id,
            "since": since,
            "until": until,
            "limit": limit,
        }
        return self._run(calls.audit(item_id, filters))

    def index(
        self,
        path: str,
        collection: str,
        *,
        source: str | None = None,
        include: Iterable[str] = (),
        exclude: Iterable[str] = (),
        max_file_bytes: int | None = None,
        scope: str | None = None,
        use_git: bool | None = None,
        dry_run: bool = False,
    ) -> IndexReport:
        """Index a folder on the server's machine (admin keys, under ``server.index_roots``)."""
        options = {
            "source": source,
            "include": list(include) or None,
            "exclude": list(exclude) or None,
            "max_file_bytes": max_file_bytes,
            "scope": scope,
            "use_git": use_git,
            "dry_run": dry_run,
        }
        return self._run(calls.index(str(path), collection, options))

    def whoami(self) -> dict[str, Any]:
        """Who the key stands for: ``agent``, ``teams``, ``admin``."""
        return self._run(calls.whoami())

    # -- lifetime ----------------------------------------------------------------------

    def close(self) -> None:
        """Close the connections (idempotent)."""
        self._transport.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Client({self.url!r}, agent={self.agent!r})"


class RemoteEpisodic:
    """``client.episodic``: the episodic layer of the server (see :class:`EpisodicStore`)."""

    def __init__(self, client: Client) -> None:
        self._client = client

    def record(
        self,
        agent_name: str,
        event_type: str,
        description: str,
        *,
        context: Mapping[str, Any] | None = None,
        outcome: str | None = None,
        importance: float | None = None,
        tags: Sequence[str] | None = None,
        references: Sequence[str] | None = None,
        id: str | None = None,
        timestamp: datetime | str | None = None,
        decay_rate: float | None = None,
        scope: str | Sequence[str] | None = None,
        exist_ok: bool = False,
    ) -> Episode:
        """Record an episode as the key's agent (``agent_name`` must be it)."""
        calls.check_agent(self._client.agent, agent_name)
        if scope is not None and not isinstance(scope, str):
            scope = ",".join(scope)
        fields = {
            "event_type": event_type,
            "description": description,
            "context": context,
            "outcome": outcome,
            "importance": importance,
            "tags": tags,
            "references": references,
            "id": id,
            "timestamp": timestamp,
            "decay_rate": decay_rate,
            "scope": scope,
        }
        try:
            return self._client._run(calls.record(fields))
        except AlreadyExistsError:
            if not exist_ok or id is None:
                raise
            return self.get(id)

    def record_many(
        self, items: Iterable[Mapping[str, Any]], *, exist_ok: bool = False
    ) -> list[Episode]:
        """Record several episodes in one transaction (all or none)."""
        if exist_ok:
            raise ValidationError("exist_ok", "is not available through a server")
        batch = []
        for i, item in enumerate(items):
            fields = dict(item)
            calls.check_agent(self._client.agent, fields.pop("agent_name", ""), f"items[{i}]")
            batch.append(fields)
        return self._client._run(calls.record_many(batch))

    def recall(
        self,
        query: str,
        agent_name: str | None = None,
        event_type: str | None = None,
        time_range: Sequence[datetime | str | None] | None = None,
        tags: Sequence[str] | None = None,
        top_k: int = 10,
    ) -> list[Episode]:
        """The episodes that best answer ``query`` (relevance, importance, freshness)."""
        call = calls.search(query, agent_name, event_type, time_range, tags, top_k)
        return self._client._run(call)

    def browse(
        self,
        *,
        agent_name: str | None = None,
        event_type: str | None = None,
        time_range: Sequence[datetime | str | None] | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[Episode]:
        """Episodes newest first, filtered, without scoring."""
        call = calls.browse(agent_name, event_type, time_range, limit, offset)
        return self._client._run(call)

    def get(self, episode_id: str) -> Episode:
        return self._client._run(calls.get_episode(episode_id))

    def update(
        self,
        episode_id: str,
        *,
        outcome: str | None = None,
        importance: float | None = None,
        tags: Sequence[str] | None = None,
    ) -> Episode:
        """Record an outcome, or change importance or tags (the recording agent only)."""
        fields = {"outcome": outcome, "importance": importance, "tags": tags}
        return self._client._run(calls.update_episode(episode_id, fields))

    def delete(self, episode_id: str) -> Episode:
        return self._client._run(calls.delete_episode(episode_id))


class RemoteCache:
    """``client.semantic.cache``: outside information with a time to live."""

    def __init__(self, client: Client) -> None:
        self._client = client

    def __call__(
        self,
        url_or_key: str,
        content: str,
        ttl_days: float,
        source: str,
        *,
        collection: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        agent_name: str = "",
        scope: str | None = None,
    ) -> str:
        """Cache ``content`` under ``url_or_key``; return the document id."""
        calls.check_agent(self._client.agent, agent_name)
        call = calls.cache(url_or_key, content, ttl_days, source, collection, metadata, scope)
        return self._client._run(call)

    def get(self, url_or_key: str, *, collection: str | None = None) -> Document | None:
        """The live entry under ``url_or_key``, or None."""
        try:
            return self._client._run(calls.cached(url_or_key, collection))
        except NotFoundError:
            return None


class RemoteSemantic:
    """``client.semantic``: the semantic layer of the server (see :class:`SemanticStore`)."""

    def __init__(self, client: Client) -> None:
        self._client = client
        self.cache = RemoteCache(client)

    @property
    def collections(self) -> list[str]:
        return self._client._run(calls.collections())

    def store(
        self,
        collection: str,
        documents: Sequence[str],
        metadatas: Sequence[Mapping[str, Any] | None] | None = None,
        ids: Sequence[str] | None = None,
        *,
        agent_name: str = "",
        scope: str | Sequence[str] | None = None,
    ) -> list[str]:
        """Upsert documents as the key's agent; return their ids."""
        calls.check_agent(self._client.agent, agent_name)
        return self._client._run(calls.store(collection, documents, metadatas, ids, scope))

    def query(
        self,
        collection: str,
        query_text: str,
        n_results: int = 5,
        where: Mapping[str, Any] | None = None,
        where_document: Mapping[str, Any] | None = None,
        rank: str = "relevance",
    ) -> list[QueryHit]:
        """The passages that best answer ``query_text``, best first: by words and meaning, or
        by meaning alone with ``rank="meaning"``."""
        call = calls.query(collection, query_text, n_results, where, where_document, rank)
        return self._client._run(call)

    def get(self, collection: str, doc_id: str) -> Document:
        return self._client._run(calls.get_document(collection, doc_id))

    def documents(self, collection: str, *, limit: int = 100, offset: int = 0) -> list[Document]:
        return self._client._run(calls.documents(collection, limit, offset))

    def delete(self, collection: str, ids: Sequence[str]) -> int:
        """Delete documents (the owner's only); return how many existed."""
        deleted = 0
        for doc_id in ids:
            try:
                self._client._run(calls.delete_document(collection, doc_id))
            except NotFoundError:
                continue
            deleted += 1
        return deleted


class RemoteProcedural:
    """``client.procedural``: the procedural layer of the server (see ProceduralMemory)."""

    def __init__(self, client: Client) -> None:
        self._client = client

    def register(
        self,
        name: str,
        trigger: str,
        template: str,
        *,
        description: str = "",
        success_rate: float | None = None,
        avg_quality_score: float | None = None,
        agent_name: str = "",
        scope: str | None = None,
        exist_ok: bool = False,
    ) -> Procedure:
        """Register a procedure as the key's agent."""
        calls.check_agent(self._client.agent, agent_name)
        fields = {
            "name": name,
            "trigger": trigger,
            "template": template,
            "description": description,
            "success_rate": success_rate,
            "avg_quality_score": avg_quality_score,
            "scope": scope,
        }
        try:
            return self._client._run(calls.register(fields))
        except AlreadyExistsError:
            if not exist_ok:
                raise
            return self.get(name)

    def update_from_outcome(
        self, name: str, quality_score: float, success: bool, *, agent_name: str = ""
    ) -> Procedure:
        """Fold one execution's outcome into the figures."""
        calls.check_agent(self._client.agent, agent_name)
        return self._client._run(calls.outcome(name, quality_score, success))

    def evolve(self, name: str, new_template: str, *, trigger: str | None = None) -> Procedure:
        return self._client._run(calls.evolve(name, new_template, trigger))

    def rollback(self, name: str, version: int) -> Procedure:
        return self._client._run(calls.rollback(name, version))

    def get(self, name: str) -> Procedure:
        return self._client._run(calls.get_procedure(name))

    def procedures(self) -> list[Procedure]:
        return self._client._run(calls.procedures())

    def matches(self, task_type: str) -> list[Procedure]:
        """Every procedure whose trigger matches ``task_type``, best first."""
        return self._client._run(calls.matches(task_type))

    def get_procedure(self, task_type: str) -> Procedure | None:
        """The best procedure for ``task_type``, or None."""
        found = self.matches(task_type)
        return found[0] if found else None

    def history(self, name: str) -> list[ProcedureVersion]:
        return self._client._run(calls.history(name))
