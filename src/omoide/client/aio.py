"""``omoide.AsyncClient``: :class:`~omoide.client.sync.AsyncClient` for asyncio code.

>>> from omoide import AsyncClient
>>> async def main() -> None:                                       # doctest: +SKIP
...     async with AsyncClient("http://127.0.0.1:8765", key="omk_...") as mem:
...         await mem.episodic.record("cto", "decision", "価格は¥500から始める")
...         context = await mem.recall("pricing decision", agent_name="cto")

The same calls as the blocking client (both send :mod:`omoide.client.calls`), each awaited;
what reads a session or the collections is awaited too (``await wm.messages``). The key's
identity is asked on the first call (a constructor cannot await), or at ``async with``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from types import TracebackType
from typing import Any, TypeVar

import omoide.client.calls as calls
from omoide.client.sessions import AsyncWorkingMemory
from omoide.client.transport import DEFAULT_TIMEOUT, AsyncTransport, server_address
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

__all__ = ["AsyncClient", "AsyncEpisodic", "AsyncProcedural", "AsyncSemantic"]

T = TypeVar("T")


class AsyncClient:
    """Memory on a running ``omoide serve``, with the surface of :class:`~omoide.memory.Memory`.

    ``url`` defaults to ``$OMOIDE_URL``, ``key`` to ``$OMOIDE_API_KEY`` (``omoide keys add
    AGENT`` mints one); ``timeout`` bounds every request, in seconds. Who the key stands
    for is asked at ``async with`` (or :meth:`connect`), else before the first write.
    """

    def __init__(
        self, url: str | None = None, *, key: str | None = None, timeout: float = DEFAULT_TIMEOUT
    ) -> None:
        self.url, key = server_address(url, key)
        self._transport = AsyncTransport(self.url, key, timeout)
        self._connected = False
        #: The agent the key stands for (it writes; its scopes decide what it reads); known
        #: once connected.
        self.agent: str | None = None
        self.teams: tuple[str, ...] = ()
        self.admin = False
        self.episodic = AsyncEpisodic(self)
        self.semantic = AsyncSemantic(self)
        self.procedural = AsyncProcedural(self)

    async def connect(self) -> AsyncClient:
        """Ask the server who the key is (once): a wrong address or key fails here."""
        if not self._connected:
            identity = await self._transport.run(calls.whoami())
            self.agent = identity.get("agent")
            self.teams = tuple(identity.get("teams", ()))
            self.admin = bool(identity.get("admin"))
            self._connected = True
        return self

    async def _agent(self) -> str | None:
        await self.connect()
        return self.agent

    async def _run(self, call: calls.Call[T]) -> T:
        return await self._transport.run(call)

    # -- layers ------------------------------------------------------------------------

    async def working(
        self, agent_name: str, session_id: str = "default", max_tokens: int | None = None
    ) -> AsyncWorkingMemory:
        """The working memory of ``(agent_name, session_id)`` on the server (created if new;
        resized when ``max_tokens`` differs)."""
        calls.check_agent(await self._agent(), agent_name)
        if max_tokens is not None:
            await self._run(calls.open_session(session_id, max_tokens))
        else:
            try:
                await self._run(calls.session(session_id))
            except NotFoundError:
                # Creating needs a size; writing an empty slot of a new session makes one of
                # the server's default size.
                await self._run(calls.set_slot(session_id, "scratchpad", None))
        return AsyncWorkingMemory(self, agent_name, session_id)

    # -- recall and the pipelines -------------------------------------------------------

    async def recall(
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
        calls.check_agent(await self._agent(), agent_name)
        calls.unsupported("now", now)
        return await self._run(
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

    async def add(
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
        calls.check_agent(await self._agent(), agent_name)
        return await self._run(calls.add(session_id, messages, timestamp, scope))

    async def distill(self, batch_size: int | None = None) -> DistillReport:
        """Run distillation now (admin keys)."""
        calls.unsupported("batch_size", batch_size)
        return await self._run(calls.distill())

    async def forget(self, dry_run: bool = False) -> ForgetReport:
        """Apply the forgetting policies (admin keys); a dry run is open to every key."""
        return await self._run(calls.forget(dry_run))

    async def maintain(self) -> MaintenanceReport:
        """The daily job now: distill, forget, collection policies (admin keys)."""
        return await self._run(calls.maintain())

    async def restore(
        self, item_id: str, *, layer: str | None = None, collection: str | None = None
    ) -> str:
        """Bring an archived or compressed item back; return its layer."""
        return await self._run(calls.restore(item_id, layer, collection))

    async def purge(
        self, item_id: str, *, reason: str, layer: str = "episodic", collection: str = ""
    ) -> AuditEntry:
        """Remove an item for good (admin keys); audited as the key's agent."""
        return await self._run(calls.purge(item_id, reason, layer, collection))

    async def audit(
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
        return await self._run(calls.audit(item_id, filters))

    async def index(
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
        return await self._run(calls.index(str(path), collection, options))

    async def whoami(self) -> dict[str, Any]:
        """Who the key stands for: ``agent``, ``teams``, ``admin``."""
        return await self._run(calls.whoami())

    # -- lifetime ----------------------------------------------------------------------

    async def close(self) -> None:
        """Close the connections (idempotent)."""
        await self._transport.close()

    async def __aenter__(self) -> AsyncClient:
        try:
            return await self.connect()
        except BaseException:
            await self.close()
            raise

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"AsyncClient({self.url!r}, agent={self.agent!r})"


class AsyncEpisodic:
    """``client.episodic``: the episodic layer of the server (see :class:`EpisodicStore`)."""

    def __init__(self, client: AsyncClient) -> None:
        self._client = client

    async def record(
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
        calls.check_agent(await self._client._agent(), agent_name)
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
            return await self._client._run(calls.record(fields))
        except AlreadyExistsError:
            if not exist_ok or id is None:
                raise
            return await self.get(id)

    async def record_many(
        self, items: Iterable[Mapping[str, Any]], *, exist_ok: bool = False
    ) -> list[Episode]:
        """Record several episodes in one transaction (all or none)."""
        if exist_ok:
            raise ValidationError("exist_ok", "is not available through a server")
        batch = []
        for i, item in enumerate(items):
            fields = dict(item)
            calls.check_agent(
                await self._client._agent(), fields.pop("agent_name", ""), f"items[{i}]"
            )
            batch.append(fields)
        return await self._client._run(calls.record_many(batch))

    async def recall(
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
        return await self._client._run(call)

    async def browse(
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
        return await self._client._run(call)

    async def get(self, episode_id: str) -> Episode:
        return await self._client._run(calls.get_episode(episode_id))

    async def update(
        self,
        episode_id: str,
        *,
        outcome: str | None = None,
        importance: float | None = None,
        tags: Sequence[str] | None = None,
    ) -> Episode:
        """Record an outcome, or change importance or tags (the recording agent only)."""
        fields = {"outcome": outcome, "importance": importance, "tags": tags}
        return await self._client._run(calls.update_episode(episode_id, fields))

    async def delete(self, episode_id: str) -> Episode:
        return await self._client._run(calls.delete_episode(episode_id))


class AsyncCache:
    """``client.semantic.cache``: outside information with a time to live."""

    def __init__(self, client: AsyncClient) -> None:
        self._client = client

    async def __call__(
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
        calls.check_agent(await self._client._agent(), agent_name)
        call = calls.cache(url_or_key, content, ttl_days, source, collection, metadata, scope)
        return await self._client._run(call)

    async def get(self, url_or_key: str, *, collection: str | None = None) -> Document | None:
        """The live entry under ``url_or_key``, or None."""
        try:
            return await self._client._run(calls.cached(url_or_key, collection))
        except NotFoundError:
            return None


class AsyncSemantic:
    """``client.semantic``: the semantic layer of the server (see :class:`SemanticStore`)."""

    def __init__(self, client: AsyncClient) -> None:
        self._client = client
        self.cache = AsyncCache(client)

    @property
    async def collections(self) -> list[str]:
        return await self._client._run(calls.collections())

    async def store(
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
        calls.check_agent(await self._client._agent(), agent_name)
        return await self._client._run(calls.store(collection, documents, metadatas, ids, scope))

    async def query(
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
        return await self._client._run(call)

    async def get(self, collection: str, doc_id: str) -> Document:
        return await self._client._run(calls.get_document(collection, doc_id))

    async def documents(
        self, collection: str, *, limit: int = 100, offset: int = 0
    ) -> list[Document]:
        return await self._client._run(calls.documents(collection, limit, offset))

    async def delete(self, collection: str, ids: Sequence[str]) -> int:
        """Delete documents (the owner's only); return how many existed."""
        deleted = 0
        for doc_id in ids:
            try:
                await self._client._run(calls.delete_document(collection, doc_id))
            except NotFoundError:
                continue
            deleted += 1
        return deleted


class AsyncProcedural:
    """``client.procedural``: the procedural layer of the server (see ProceduralMemory)."""

    def __init__(self, client: AsyncClient) -> None:
        self._client = client

    async def register(
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
        calls.check_agent(await self._client._agent(), agent_name)
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
            return await self._client._run(calls.register(fields))
        except AlreadyExistsError:
            if not exist_ok:
                raise
            return await self.get(name)

    async def update_from_outcome(
        self, name: str, quality_score: float, success: bool, *, agent_name: str = ""
    ) -> Procedure:
        """Fold one execution's outcome into the figures."""
        calls.check_agent(await self._client._agent(), agent_name)
        return await self._client._run(calls.outcome(name, quality_score, success))

    async def evolve(
        self, name: str, new_template: str, *, trigger: str | None = None
    ) -> Procedure:
        return await self._client._run(calls.evolve(name, new_template, trigger))

    async def rollback(self, name: str, version: int) -> Procedure:
        return await self._client._run(calls.rollback(name, version))

    async def get(self, name: str) -> Procedure:
        return await self._client._run(calls.get_procedure(name))

    async def procedures(self) -> list[Procedure]:
        return await self._client._run(calls.procedures())

    async def matches(self, task_type: str) -> list[Procedure]:
        """Every procedure whose trigger matches ``task_type``, best first."""
        return await self._client._run(calls.matches(task_type))

    async def get_procedure(self, task_type: str) -> Procedure | None:
        """The best procedure for ``task_type``, or None."""
        found = await self.matches(task_type)
        return found[0] if found else None

    async def history(self, name: str) -> list[ProcedureVersion]:
        return await self._client._run(calls.history(name))
