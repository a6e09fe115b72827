"""What a recall reads: the parts of a memory, named by what the router needs of them.

:class:`~omoide.recall.router.Router` is given a :class:`MemoryParts` — in practice the
:class:`~omoide.memory.Memory` facade, which has all of these — instead of importing the
facade, so recall sits below the facade that wires it (imports run one way).
"""

from __future__ import annotations

from typing import Protocol

from omoide.clock import Clock
from omoide.core.config import Config
from omoide.layers.episodic.store import EpisodicStore
from omoide.layers.procedural import ProceduralMemory
from omoide.layers.semantic.store import SemanticStore
from omoide.layers.working import WorkingMemory
from omoide.providers.embeddings import Embedder
from omoide.providers.tokens import TokenCounter
from omoide.recall.log import RecallLog
from omoide.storage import Database

__all__ = ["MemoryParts"]


class MemoryParts(Protocol):
    """The layers, providers and settings one recall reads (read-only properties)."""

    @property
    def config(self) -> Config: ...

    @property
    def clock(self) -> Clock: ...

    @property
    def db(self) -> Database: ...

    @property
    def episodic(self) -> EpisodicStore: ...

    @property
    def semantic(self) -> SemanticStore: ...

    @property
    def procedural(self) -> ProceduralMemory: ...

    @property
    def embedder(self) -> Embedder: ...

    @property
    def token_counter(self) -> TokenCounter: ...

    @property
    def recall_log(self) -> RecallLog: ...

    def working(self, agent_name: str, session_id: str) -> WorkingMemory:
        """The working memory of one agent's session."""
        ...
