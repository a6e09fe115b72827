"""The facade: one data directory, four memory layers.

>>> from omoide import Memory
>>> with Memory("./omoide-data") as mem:                      # doctest: +SKIP
...     mem.episodic.record("ceo", "decision", "価格は¥500から始める")
...     mem.episodic.recall("pricing decision")

A data directory holds ``omoide.db`` (SQLite, WAL: episodes, procedures, working sessions,
the semantic registry, audit), ``chroma/`` (ChromaDB's persistent client), an optional
``omoide.toml`` and the ``omoide.lock`` that makes this process its only owner.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Sequence
from contextlib import nullcontext
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any

from omoide.clock import Clock, SystemClock
from omoide.core.config import Config
from omoide.core.freshness import FreshnessCurve
from omoide.core.models import CollectionStats
from omoide.core.protection import NeverForget
from omoide.core.scope import normalize_scope
from omoide.errors import ConfigError, OmoideError
from omoide.ingest.conversation import AddReport, ConversationIngest
from omoide.ingest.indexing import DEFAULT_MAX_FILE_BYTES, Indexer, IndexReport, ProgressCallback
from omoide.layers.episodic.chroma_vectors import episode_vectors
from omoide.layers.episodic.store import EpisodicStore
from omoide.layers.procedural import ProceduralMemory
from omoide.layers.semantic.store import SemanticStore
from omoide.layers.working import WorkingMemory, session_count
from omoide.pipelines.audit import AuditQuery
from omoide.pipelines.distill import Distiller, DistillReport
from omoide.pipelines.extraction import Extraction
from omoide.pipelines.forgetting import ForgetReport, Forgetting, policies_from_config
from omoide.pipelines.lifecycle import AuditEntry, Lifecycle
from omoide.pipelines.overflow import Overflow
from omoide.pipelines.promotion import Promotion
from omoide.pipelines.protection import reach_back
from omoide.pipelines.retention import Retention, RetentionReport
from omoide.pipelines.scheduler import MAINTENANCE_LOCK, MaintenanceReport, maintenance_run
from omoide.providers.embeddings import Embedder, default_embedder
from omoide.providers.llm import LLM, llm_from_config
from omoide.providers.tokens import TokenCounter, default_token_counter
from omoide.recall.context import Context
from omoide.recall.log import RecallLog
from omoide.recall.pipeline import Recall
from omoide.storage import Database, DirectoryLock
from omoide.storage.chroma import CHROMA_DIR, chroma_client
from omoide.storage.opening import DATABASE_URL_ENV, SingleRunner, check_identity, open_database
from omoide.storage.permissions import private_dir, tighten
from omoide.storage.secrets import directory_secret

__all__ = ["DEFAULT_DIRECTORY", "Memory", "resolve_path"]

DEFAULT_DIRECTORY = "omoide-data"
DB_NAME = "omoide.db"
CONFIG_NAME = "omoide.toml"


def resolve_path(path: str | os.PathLike[str] | None) -> Path:
    """The data directory: ``path``, else ``$OMOIDE_HOME``, else ``./omoide-data``."""
    if path is not None:
        return Path(path)
    env = os.environ.get("OMOIDE_HOME")
    return Path(env) if env else Path.cwd() / DEFAULT_DIRECTORY


class Memory:
    """Long-term memory for agents: working, episodic, semantic and procedural layers.

    ``Memory(path)`` opens (or creates) a data directory and holds it for this process until
    :meth:`close` (or the end of a ``with`` block). Providers can be passed directly:
    ``clock`` (a :class:`~omoide.clock.ManualClock` for simulations), ``embedder``,
    ``token_counter``, ``freshness``, ``llm`` (the knowledge extractor of distillation);
    ``config`` overrides ``omoide.toml``.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        clock: Clock | None = None,
        embedder: Embedder | None = None,
        token_counter: TokenCounter | None = None,
        config: Config | None = None,
        freshness: FreshnessCurve | None = None,
        lock_timeout: float | None = None,
        llm: LLM | None = None,
    ) -> None:
        self.path = resolve_path(path)
        try:
            private_dir(self.path)
        except OSError as exc:
            raise ConfigError(f"cannot create data directory {self.path}: {exc}") from exc
        if config is None:
            toml = self.path / CONFIG_NAME
            config = Config.from_toml(toml) if toml.exists() else Config()
        self.config = config
        self.clock: Clock = clock or SystemClock()
        self._database_url = config.storage.url or os.environ.get(DATABASE_URL_ENV) or None
        self._lock = DirectoryLock(self.path)
        if self._database_url is None:  # a shared database has no single owner
            timeout = config.lock_timeout if lock_timeout is None else lock_timeout
            self._lock.acquire(timeout, clock=self.clock)
        self._closed = False
        self._chroma: Any = None
        self._db: Database | None = None
        try:
            self._open(embedder, token_counter, freshness)
            self._open_pipelines(llm)
            self._open_ingest()
            tighten(self.path)  # what older versions or ChromaDB created with the umask
        except BaseException:
            self._shutdown()
            raise

    def _open(
        self,
        embedder: Embedder | None,
        token_counter: TokenCounter | None,
        freshness: FreshnessCurve | None,
    ) -> None:
        """Open the stores and providers of the data directory. Long because it is the wiring
        list of the facade: one constructor call per part, in dependency order.
        """
        config = self.config
        self._db = open_database(self.path / DB_NAME, self._database_url, self.config, self.clock)
        #: Held by maintenance and its parts: one run at a time per store (any replica).
        self._single_runner = SingleRunner(self.db, self.path, MAINTENANCE_LOCK, self.clock)
        # A store keeps the vectors it was written with: the default follows it.
        self.embedder = embedder or default_embedder(self.db.get_meta("embedder"))
        self._check_embedder()
        self.token_counter = token_counter or default_token_counter()
        self.default_scope = normalize_scope(
            config.default_scope, "default_scope", teams=config.teams
        )
        self._chroma = chroma_client(self.path, config.semantic)
        self.never_forget = NeverForget(config.never_forget)
        self.semantic = SemanticStore(
            self.db,
            self._chroma,
            embedder=self.embedder,
            clock=self.clock,
            config=config.semantic,
            default_scope=self.default_scope,
            protection=self.never_forget.document,
            # expired cache entries leave through retention, so each deletion is audited
            remove_expired=lambda coll, ids: self.retention.delete_expired(coll, ids),
            teams=config.teams,
            token_counter=self.token_counter,
        )
        self.episodic = EpisodicStore(
            self.db,
            embedder=self.embedder,
            clock=self.clock,
            config=config.episodic,
            freshness=freshness,
            default_scope=self.default_scope,
            overflow=lambda episodes: self.overflow(episodes),  # see pipelines.overflow
            protection=self.never_forget.episode,
            teams=config.teams,
            token_counter=self.token_counter,
            vectors=episode_vectors(self._chroma, config.semantic, config.episodic, self.db),
        )
        # Before anything can write: the overflow sink and expiry hook above audit through it.
        self.lifecycle = Lifecycle(
            self.db,
            episodic=self.episodic,
            semantic=self.semantic,
            embedder=self.embedder,
            clock=self.clock,
        )
        #: Where episodes leaving a full episodic store go (the distillation collection).
        self.overflow = Overflow(self.lifecycle, config.distill.collection)
        #: Enforces collection retention, caps and cache expiry (run by :meth:`maintain`).
        self.retention = Retention(
            self.db, semantic=self.semantic, lifecycle=self.lifecycle, clock=self.clock
        )
        self.procedural = ProceduralMemory(
            self.db,
            clock=self.clock,
            config=config.procedural,
            default_scope=self.default_scope,
            teams=config.teams,
        )
        self.recall_log = RecallLog(self.db, clock=self.clock, config=config.router)
        self._recall = Recall(self)
        #: Indexes documents and codebases into the semantic layer (see :meth:`index`).
        self.indexer = Indexer(self.db, self.semantic, clock=self.clock, skip=(self.path,))
        self._sessions: dict[tuple[str, str], WorkingMemory] = {}
        self._sessions_lock = threading.Lock()
        self._promotion = Promotion(
            self.episodic, self.db, lambda: directory_secret(self.db, "promotion")
        )
        self.semantic.recover()

    def _open_pipelines(self, llm: LLM | None) -> None:
        """Forgetting and distillation; complete what a crash interrupted."""
        self.forgetting = Forgetting(
            self.db,
            lifecycle=self.lifecycle,
            never_forget=self.never_forget,
            clock=self.clock,
            freshness=self.episodic.freshness,
            decay_rate=self.config.episodic.decay_rate,
            policies=policies_from_config(self.config.forgetting.policies),
            restore_exemption_days=self.config.forgetting.restore_exemption_days,
        )
        self.distiller = Distiller(
            self.db,
            episodic=self.episodic,
            semantic=self.semantic,
            embedder=self.embedder,
            clock=self.clock,
            config=self.config.distill,
            llm=llm or llm_from_config(self.config.llm),
        )
        self._protect_new_categories()
        with self._single_runner.attempt() as alone:
            if alone:  # else a replica's run is under way, and each run recovers first
                self.distiller.recover()

    def _protect_new_categories(self) -> None:
        """Protect existing items that never-forget categories added since the last open match."""
        reach_back(self.db, self.never_forget, self.episodic.rows, self.semantic.registry)

    def _check_embedder(self) -> None:
        """Refuse to mix vectors of two models in one directory."""
        identity = f"{self.embedder.name}:{self.embedder.dimension}"
        stored = check_identity(self.db, "embedder", identity)
        if stored != identity:
            raise ConfigError(
                f"{self.path} was written with embedder {stored}; this Memory uses {identity}. "
                "Vectors of different models cannot be compared: open it with the same embedder "
                "or re-embed into a new directory (export, then import)."
            )

    # -- layers ------------------------------------------------------------------------

    def working(
        self, agent_name: str, session_id: str = "default", max_tokens: int | None = None
    ) -> WorkingMemory:
        """The working memory of ``(agent_name, session_id)``, restored if it exists (on a
        shared database, restored on every call: another replica may have changed it)."""
        self._check_open()
        key = (agent_name, session_id)
        with self._sessions_lock:
            session = self._sessions.get(key)
            if (
                session is None
                or self.db.shared
                or (max_tokens is not None and max_tokens != session.max_tokens)
            ):
                session = WorkingMemory(
                    self.db,
                    agent_name=agent_name,
                    session_id=session_id,
                    max_tokens=max_tokens,
                    config=self.config.working,
                    counter=self.token_counter,
                    clock=self.clock,
                    promote=self._promotion,
                )
                self._sessions[key] = session
            return session

    # -- distillation, forgetting, maintenance --------------------------------------------

    def distill(self, batch_size: int | None = None) -> DistillReport:
        """Turn old, similar episodes into knowledge in ``distill.collection`` (decisions).

        See :mod:`omoide.pipelines.distill`: clusters of at least ``min_episodes_for_cluster``
        similar episodes older than the freshness threshold become one document each; their
        episodes are marked distilled. Safe to interrupt and run again.
        """
        self._check_open()
        with self._single_runner.held():
            return self.distiller.run(batch_size)

    def forget(self, dry_run: bool = False) -> ForgetReport:
        """Apply the forgetting policies; with ``dry_run`` only report what would be done.

        See :mod:`omoide.pipelines.forgetting`. Never-forget items are skipped (and refused by the
        store itself if anything tried); every action is in :meth:`audit`.
        """
        self._check_open()
        with nullcontext() if dry_run else self._single_runner.held():
            return self.forgetting.run(dry_run=dry_run)

    def restore(
        self, item_id: str, *, layer: str | None = None, collection: str | None = None
    ) -> str:
        """Bring an archived (or compressed) episode or document back; return its layer."""
        self._check_open()
        return self.lifecycle.restore(item_id, layer=layer, collection=collection)

    def purge(
        self,
        item_id: str,
        *,
        reason: str,
        layer: str = "episodic",
        collection: str = "",
        by: str = "operator",
    ) -> AuditEntry:
        """Remove an item for good, even a never-forget one (the administrator's remedy for
        spam); audited with its snapshot, ``by`` and the non-empty ``reason``."""
        self._check_open()
        return self.lifecycle.purge(layer, item_id, reason=reason, by=by, collection=collection)

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
        reader: str | None = None,
        reader_teams: Iterable[str] = (),
    ) -> list[AuditEntry]:
        """The audit log of forgetting (and restores, overflow, retention), newest first;
        with ``reader``, only entries of items that agent may read."""
        self._check_open()
        query = AuditQuery(item_id, policy, layer, action, run_id, since, until, limit)
        return self.lifecycle.audit(query, reader=reader, reader_teams=reader_teams)

    def enforce_collections(self, dry_run: bool = False) -> RetentionReport:
        """Apply every collection's retention, ``archive_lowest`` cap and cache expiry.

        See :mod:`omoide.pipelines.retention`: archives (or, for expired cache entries, deletes)
        with an audit row each; never-forget documents are kept. Part of :meth:`maintain`.
        """
        self._check_open()
        with nullcontext() if dry_run else self._single_runner.held():
            return self.retention.run(dry_run=dry_run)

    def maintain(self, *, unless_run_after: datetime | None = None) -> MaintenanceReport:
        """The daily job: :meth:`distill`, then :meth:`forget`, then
        :meth:`enforce_collections` (retention, caps, cache expiry).

        Holds ``maintenance.lock`` in the data directory (an advisory lock on PostgreSQL)
        while it runs; a second run meanwhile (thread, process, replica): StoreLockedError.
        So does a run that completed after ``unless_run_after`` (a scheduler's due run that
        another replica made between the scheduler's check and this lock).
        """
        self._check_open()
        with self._single_runner.held():
            return maintenance_run(self, unless_run_after)

    # -- recall ------------------------------------------------------------------------

    def recall(
        self,
        query: str,
        *,
        agent_name: str | None,
        session_id: str | None = None,
        budget_tokens: int | None = None,
        layers: Sequence[str] | None = None,
        collections: Sequence[str] | None = None,
        top_k: int | None = None,
        min_score: float | None = None,
        diversity: float | None = None,
        now: datetime | str | None = None,
    ) -> Context:
        """The memories that answer ``query`` for ``agent_name``, from every layer that holds
        them, ranked, cut and packed into ``budget_tokens`` (default
        ``router.default_budget_tokens``, 2,000). ``session_id`` adds that session's pins and
        recent messages; ``layers`` and ``collections`` restrict what is asked; ``top_k``,
        ``min_score`` (then the only floor: the relative one does not apply) and ``diversity``
        replace the router's cut for this recall; ``now``
        replaces the clock's time (for time expressions). Only what the agent's scope allows
        is read; ``agent_name=None`` is the operator, who reads every scope. See
        :mod:`omoide.recall.pipeline`.
        """
        self._check_open()
        return self._recall.recall(
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

    # -- conversations ------------------------------------------------------------------------

    def _open_ingest(self) -> None:
        """Conversation ingest, extracting with the distiller's LLM (when it can chat) and
        showing it the knowledge a recall finds for the new turns."""
        self._conversation = ConversationIngest(
            self.episodic,
            lambda agent, session: self.working(agent, session),
            clock=self.clock,
            secret=lambda: directory_secret(self.db, "conversation"),
            config=self.config.ingest,
            extraction=Extraction(self.distiller.llm, self.semantic, self.config.ingest),
            related=lambda text, agent: [
                item.text
                for item in self.recall(
                    text[:10_000],
                    agent_name=agent,
                    layers=["semantic"],
                    budget_tokens=self.config.ingest.related_budget_tokens,
                ).items
            ],
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
        """Hand omoide what was said: chat messages (``{"role", "content", "name"?,
        "timestamp"?, "id"?}``, a list or one) become episodes of the session's thread and
        working memory, idempotently; with an LLM that can chat, facts, decisions and
        preferences are extracted into ``ingest.collection`` as versioned, attributed items.
        See :mod:`omoide.ingest.conversation` and :mod:`omoide.pipelines.extraction`.
        """
        self._check_open()
        return self._conversation.add(
            messages, agent_name=agent_name, session_id=session_id, timestamp=timestamp, scope=scope
        )

    # -- documents and codebases -------------------------------------------------------------

    def index(
        self,
        path: str | os.PathLike[str],
        collection: str,
        *,
        source: str | None = None,
        include: Iterable[str] = (),
        exclude: Iterable[str] = (),
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        agent_name: str = "",
        scope: str | Sequence[str] | None = None,
        use_git: bool | None = None,
        dry_run: bool = False,
        progress: ProgressCallback | None = None,
    ) -> IndexReport:
        """Index a folder or git repository into ``collection`` (``code``, ``knowledge``, ...).

        Incremental: only files whose content changed are re-indexed, and documents of
        deleted files are removed. See :mod:`omoide.ingest.indexing` for the rules and metadata.
        """
        self._check_open()
        return self.indexer.index(
            path,
            collection,
            source=source,
            include=include,
            exclude=exclude,
            max_file_bytes=max_file_bytes,
            agent_name=agent_name,
            scope=scope,
            use_git=use_git,
            dry_run=dry_run,
            progress=progress,
        )

    def collection_stats(self) -> list[CollectionStats]:
        """Each semantic collection's purpose, retention and cap beside its usage."""
        self._check_open()
        return self.semantic.collection_stats()

    # -- whole-store operations -----------------------------------------------------------

    def stats(self) -> dict[str, Any]:
        """Counts per layer and the bytes on disk."""
        self._check_open()
        return {
            "path": str(self.path),
            "working_sessions": session_count(self.db),
            "episodes": self.episodic.count(),
            "semantic": {name: self.semantic.count(name) for name in self.semantic.collections},
            "procedures": self.procedural.count(),
            "database_bytes": self.db.size_bytes(),
            "chroma_bytes": _tree_size(self.path / CHROMA_DIR),
        }

    @property
    def db(self) -> Database:
        """The SQLite database of the directory (the layers own its tables; see each
        layer's module). Raises :class:`OmoideError` once this Memory is closed."""
        if self._db is None or self._closed:
            raise OmoideError(f"this Memory on {self.path} is closed")
        return self._db

    def _check_open(self) -> None:
        if self._closed:
            raise OmoideError(f"this Memory on {self.path} is closed")

    def close(self) -> None:
        """Flush and release the data directory (idempotent)."""
        if self._closed:
            return
        self._closed = True
        self._shutdown()

    def _shutdown(self) -> None:
        try:
            if self._chroma is not None and hasattr(self._chroma, "close"):
                self._chroma.close()
            if self._db is not None:
                self._db.close()
            tighten(self.path)  # files ChromaDB created while open
        finally:
            self._chroma = None
            self._lock.release()

    def __enter__(self) -> Memory:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"Memory({str(self.path)!r}, {state})"


def _tree_size(path: Path) -> int:
    if not path.exists():
        return 0
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
