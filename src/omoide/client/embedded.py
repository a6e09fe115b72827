"""``omoide.AsyncMemory``: the embedded library for asyncio code.

>>> from omoide import AsyncMemory
>>> async def main() -> None:                                       # doctest: +SKIP
...     async with AsyncMemory("./omoide-data") as mem:
...         await mem.episodic.record("cto", "decision", "価格は¥500から始める")
...         context = await mem.recall("pricing decision", agent_name="cto")

A :class:`~omoide.memory.Memory` whose every call runs on a small thread pool of its own
(``max_workers``, 4), so embedding, SQLite and ChromaDB never block the event loop; the
library already serializes what must be serialized. The surface is that of
:class:`~omoide.client.aio.AsyncClient` — the same awaited calls, records and exceptions —
so async code moves between an embedded store and a server by changing the constructor.
"""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from types import TracebackType
from typing import Any, ParamSpec, TypeVar

from omoide.core.models import Episode, Message, Pin, Procedure, ProcedureVersion, QueryHit
from omoide.core.models import SemanticDocument as Document
from omoide.errors import ValidationError
from omoide.ingest.conversation import AddReport
from omoide.ingest.reports import IndexReport
from omoide.layers.episodic.store import EpisodicStore
from omoide.layers.procedural import ProceduralMemory
from omoide.layers.semantic.store import SemanticStore
from omoide.layers.working import Eviction, WorkingMemory
from omoide.memory import Memory
from omoide.pipelines.distill import DistillReport
from omoide.pipelines.forgetting import ForgetReport
from omoide.pipelines.lifecycle import AuditEntry
from omoide.pipelines.scheduler import MaintenanceReport
from omoide.recall.context import Context

__all__ = ["AsyncMemory"]

T = TypeVar("T")
P = ParamSpec("P")


class _Pool:
    """Runs blocking calls on a bounded thread pool, awaited from the event loop."""

    def __init__(self, max_workers: int) -> None:
        self._executor = ThreadPoolExecutor(max_workers, thread_name_prefix="omoide")

    async def run(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, functools.partial(fn, *args, **kwargs))

    def shutdown(self) -> None:
        self._executor.shutdown(wait=True)


class AsyncMemory:
    """:class:`~omoide.memory.Memory` for asyncio: the same arguments, every call awaited.

    ``AsyncMemory(path, ...)`` opens the directory at once (this blocks, as ``Memory(path)``
    does: loading the store and the model takes seconds); ``await AsyncMemory.open(path,
    ...)`` opens it on a worker thread instead. :attr:`memory` is the Memory underneath.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        max_workers: int = 4,
        memory: Memory | None = None,
        **options: Any,
    ) -> None:
        if memory is not None and (path is not None or options):
            raise ValidationError("memory", "give either an open Memory or what opens one")
        self.memory = memory if memory is not None else Memory(path, **options)
        self._pool = _Pool(max_workers)
        self.episodic = AsyncEpisodicStore(self.memory.episodic, self._pool)
        self.semantic = AsyncSemanticStore(self.memory.semantic, self._pool)
        self.procedural = AsyncProceduralMemory(self.memory.procedural, self._pool)

    @classmethod
    async def open(
        cls, path: str | os.PathLike[str] | None = None, *, max_workers: int = 4, **options: Any
    ) -> AsyncMemory:
        """Open ``path`` on a worker thread, leaving the event loop free meanwhile."""
        memory = await asyncio.to_thread(Memory, path, **options)
        return cls(max_workers=max_workers, memory=memory)

    @property
    def path(self) -> Any:
        return self.memory.path

    async def working(
        self, agent_name: str, session_id: str = "default", max_tokens: int | None = None
    ) -> AsyncWorkingMemory:
        """The working memory of ``(agent_name, session_id)``, restored if it exists."""
        wm = await self._pool.run(self.memory.working, agent_name, session_id, max_tokens)
        return AsyncWorkingMemory(wm, self._pool)

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
        return await self._pool.run(
            self.memory.recall,
            query,
            agent_name=agent_name,
            session_id=session_id,
            budget_tokens=budget_tokens,
            layers=layers,
            collections=collections,
            top_k=top_k,
            min_score=min_score,
            diversity=diversity,
            now=now,
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
        return await self._pool.run(
            self.memory.add,
            messages,
            agent_name=agent_name,
            session_id=session_id,
            timestamp=timestamp,
            scope=scope,
        )

    async def distill(self, batch_size: int | None = None) -> DistillReport:
        return await self._pool.run(self.memory.distill, batch_size)

    async def forget(self, dry_run: bool = False) -> ForgetReport:
        return await self._pool.run(self.memory.forget, dry_run)

    async def maintain(self) -> MaintenanceReport:
        return await self._pool.run(self.memory.maintain)

    async def restore(
        self, item_id: str, *, layer: str | None = None, collection: str | None = None
    ) -> str:
        return await self._pool.run(
            self.memory.restore, item_id, layer=layer, collection=collection
        )

    async def purge(
        self, item_id: str, *, reason: str, layer: str = "episodic", collection: str = ""
    ) -> AuditEntry:
        return await self._pool.run(
            self.memory.purge, item_id, reason=reason, layer=layer, collection=collection
        )

    async def audit(self, item_id: str | None = None, **filters: Any) -> list[AuditEntry]:
        """The audit log, newest first (the filters of :meth:`Memory.audit`)."""
        return await self._pool.run(self.memory.audit, item_id, **filters)

    async def index(
        self, path: str | os.PathLike[str], collection: str, **options: Any
    ) -> IndexReport:
        """Index a folder or git repository (the options of :meth:`Memory.index`)."""
        return await self._pool.run(self.memory.index, path, collection, **options)

    async def stats(self) -> dict[str, Any]:
        return await self._pool.run(self.memory.stats)

    async def close(self) -> None:
        """Finish running calls, then close the Memory (idempotent)."""
        await asyncio.to_thread(self._pool.shutdown)
        await asyncio.to_thread(self.memory.close)

    async def __aenter__(self) -> AsyncMemory:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"AsyncMemory({str(self.memory.path)!r})"


class AsyncEpisodicStore:
    """``mem.episodic`` awaited (see :class:`~omoide.layers.episodic.store.EpisodicStore`)."""

    def __init__(self, store: EpisodicStore, pool: _Pool) -> None:
        self._store, self._pool = store, pool

    async def record(
        self, agent_name: str, event_type: str, description: str, **fields: Any
    ) -> Episode:
        """Record an episode (the keywords of :meth:`EpisodicStore.record`)."""
        return await self._pool.run(
            self._store.record, agent_name, event_type, description, **fields
        )

    async def record_many(
        self, items: Iterable[Mapping[str, Any]], *, exist_ok: bool = False
    ) -> list[Episode]:
        return await self._pool.run(self._store.record_many, list(items), exist_ok=exist_ok)

    async def recall(self, query: str, *args: Any, **filters: Any) -> list[Episode]:
        """The episodes that best answer ``query`` (the filters of :meth:`EpisodicStore.recall`)."""
        return await self._pool.run(self._store.recall, query, *args, **filters)

    async def browse(self, **filters: Any) -> list[Episode]:
        return await self._pool.run(self._store.browse, **filters)

    async def get(self, episode_id: str, **options: Any) -> Episode:
        return await self._pool.run(self._store.get, episode_id, **options)

    async def update(
        self,
        episode_id: str,
        *,
        outcome: str | None = None,
        importance: float | None = None,
        tags: Sequence[str] | None = None,
    ) -> Episode:
        return await self._pool.run(
            self._store.update, episode_id, outcome=outcome, importance=importance, tags=tags
        )

    async def delete(self, episode_id: str) -> Episode:
        return await self._pool.run(self._store.delete, episode_id)


class AsyncCache:
    """``mem.semantic.cache`` awaited."""

    def __init__(self, store: SemanticStore, pool: _Pool) -> None:
        self._store, self._pool = store, pool

    async def __call__(
        self, url_or_key: str, content: str, ttl_days: float, source: str, **options: Any
    ) -> str:
        return await self._pool.run(
            self._store.cache, url_or_key, content, ttl_days, source, **options
        )

    async def get(self, url_or_key: str, **options: Any) -> Document | None:
        return await self._pool.run(self._store.cache.get, url_or_key, **options)


class AsyncSemanticStore:
    """``mem.semantic`` awaited (see :class:`~omoide.layers.semantic.store.SemanticStore`)."""

    def __init__(self, store: SemanticStore, pool: _Pool) -> None:
        self._store, self._pool = store, pool
        self.cache = AsyncCache(store, pool)

    @property
    async def collections(self) -> list[str]:
        return self._store.collections

    async def store(
        self,
        collection: str,
        documents: Sequence[str],
        metadatas: Sequence[Mapping[str, Any] | None] | None = None,
        ids: Sequence[str] | None = None,
        **options: Any,
    ) -> list[str]:
        return await self._pool.run(
            self._store.store, collection, documents, metadatas, ids, **options
        )

    async def query(
        self, collection: str, query_text: str, *args: Any, **options: Any
    ) -> list[QueryHit]:
        return await self._pool.run(self._store.query, collection, query_text, *args, **options)

    async def get(self, collection: str, doc_id: str, **options: Any) -> Document:
        return await self._pool.run(self._store.get, collection, doc_id, **options)

    async def documents(self, collection: str, **options: Any) -> list[Document]:
        return await self._pool.run(self._store.documents, collection, **options)

    async def delete(self, collection: str, ids: Sequence[str]) -> int:
        return await self._pool.run(self._store.delete, collection, list(ids))


class AsyncProceduralMemory:
    """``mem.procedural`` awaited (see :class:`~omoide.layers.procedural.ProceduralMemory`)."""

    def __init__(self, procedural: ProceduralMemory, pool: _Pool) -> None:
        self._procedural, self._pool = procedural, pool

    async def register(self, name: str, trigger: str, template: str, **options: Any) -> Procedure:
        return await self._pool.run(self._procedural.register, name, trigger, template, **options)

    async def update_from_outcome(
        self, name: str, quality_score: float, success: bool, *, agent_name: str = ""
    ) -> Procedure:
        return await self._pool.run(
            self._procedural.update_from_outcome,
            name,
            quality_score,
            success,
            agent_name=agent_name,
        )

    async def evolve(
        self, name: str, new_template: str, *, trigger: str | None = None
    ) -> Procedure:
        return await self._pool.run(self._procedural.evolve, name, new_template, trigger=trigger)

    async def rollback(self, name: str, version: int) -> Procedure:
        return await self._pool.run(self._procedural.rollback, name, version)

    async def get(self, name: str, **options: Any) -> Procedure:
        return await self._pool.run(self._procedural.get, name, **options)

    async def procedures(self, **options: Any) -> list[Procedure]:
        return await self._pool.run(self._procedural.procedures, **options)

    async def matches(self, task_type: str, **options: Any) -> list[Procedure]:
        return await self._pool.run(self._procedural.matches, task_type, **options)

    async def get_procedure(self, task_type: str, **options: Any) -> Procedure | None:
        return await self._pool.run(self._procedural.get_procedure, task_type, **options)

    async def history(self, name: str, **options: Any) -> list[ProcedureVersion]:
        return await self._pool.run(self._procedural.history, name, **options)


class AsyncWorkingMemory:
    """One session's working memory awaited (see :class:`~omoide.layers.working.WorkingMemory`);
    reads are awaited too, as on :class:`~omoide.client.aio.AsyncClient`."""

    def __init__(self, wm: WorkingMemory, pool: _Pool) -> None:
        self._wm, self._pool = wm, pool
        self.agent_name = wm.agent_name
        self.session_id = wm.session_id

    @property
    async def max_tokens(self) -> int:
        return self._wm.max_tokens

    @property
    async def budgets(self) -> dict[str, int]:
        return dict(self._wm.budgets)

    @property
    async def messages(self) -> list[Message]:
        return self._wm.messages

    @property
    async def pins(self) -> list[Pin]:
        return self._wm.pins

    async def get_slot(self, name: str) -> str | None:
        return self._wm.get_slot(name)

    async def slot_tokens(self) -> dict[str, int]:
        return self._wm.slot_tokens()

    async def total_tokens(self) -> int:
        return self._wm.total_tokens()

    async def build_context(self) -> str:
        return await self._pool.run(self._wm.build_context)

    async def add_message(
        self, message: str | Mapping[str, Any] | Message, **fields: Any
    ) -> list[Eviction]:
        return await self._pool.run(self._wm.add_message, message, **fields)

    async def set_slot(self, name: str, value: str | None) -> None:
        await self._pool.run(self._wm.set_slot, name, value)

    async def pin(self, key: str, content: str, reason: str = "") -> Pin:
        return await self._pool.run(self._wm.pin, key, content, reason)

    async def unpin(self, key: str) -> Pin:
        return await self._pool.run(self._wm.unpin, key)

    async def clear_messages(self) -> list[Eviction]:
        return await self._pool.run(self._wm.clear_messages)

    def __repr__(self) -> str:
        return f"AsyncWorkingMemory({self.agent_name!r}, {self.session_id!r})"
