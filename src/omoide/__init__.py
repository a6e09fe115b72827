"""omoide (思い出): long-term memory for AI agents.

Four layers that behave like human memory — a token-budgeted working memory, an episodic
store, a semantic store on ChromaDB and a procedural memory — in one data directory, offline,
in Japanese and English. Start with :class:`Memory`; :class:`Client` is the same surface on a
running ``omoide serve``, :class:`AsyncMemory` and :class:`AsyncClient` the same for asyncio.

The public surface is this module, :mod:`omoide.providers` (the concrete embedders, LLM
clients and token counters), :mod:`omoide.errors`, :mod:`omoide.clock` and
:mod:`omoide.testing`. Every other module is the implementation and may change.
"""

from omoide._version import __version__
from omoide.client import AsyncClient, AsyncMemory, Client
from omoide.clock import Clock, ManualClock, SystemClock
from omoide.core.config import Config
from omoide.core.models import (
    CollectionStats,
    Episode,
    Message,
    Pin,
    Procedure,
    ProcedureVersion,
    QueryHit,
    SemanticDocument,
)
from omoide.core.policies import ForgettingPolicy
from omoide.errors import OmoideError
from omoide.ingest.indexing import IndexReport
from omoide.memory import Memory
from omoide.pipelines.distill import DistillReport
from omoide.pipelines.forgetting import ForgetReport
from omoide.pipelines.lifecycle import AuditEntry
from omoide.pipelines.scheduler import MaintenanceReport
from omoide.providers.embeddings import Embedder
from omoide.providers.llm import LLM
from omoide.providers.tokens import TokenCounter
from omoide.recall.context import Context, ContextItem

__all__ = [
    "LLM",
    "AsyncClient",
    "AsyncMemory",
    "AuditEntry",
    "Client",
    "Clock",
    "CollectionStats",
    "Config",
    "Context",
    "ContextItem",
    "DistillReport",
    "Embedder",
    "Episode",
    "ForgetReport",
    "ForgettingPolicy",
    "IndexReport",
    "MaintenanceReport",
    "ManualClock",
    "Memory",
    "Message",
    "OmoideError",
    "Pin",
    "Procedure",
    "ProcedureVersion",
    "QueryHit",
    "SemanticDocument",
    "SystemClock",
    "TokenCounter",
    "__version__",
]
