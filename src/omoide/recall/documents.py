"""The documents of a collection worth scoring for a question, and what the question names.

The router (:mod:`omoide.recall.router`) scores candidates; this module finds them. The nearest
documents by meaning are not enough in a crowded collection (thousands of decisions that
read alike), so a question also asks for documents on its own terms: those its words find
(full text), the current versions of the facts whose subject it names or whose earlier
version it matches (by meaning, or by words once that version is archived), the few holders
of a rare identifier it names, and those written by an agent it names.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from omoide.text.identifiers import identifier_tokens

if TYPE_CHECKING:
    from omoide.core.models import QueryHit, SemanticDocument
    from omoide.layers.semantic.store import SemanticStore
    from omoide.providers.embeddings import Embedder

__all__ = [
    "DocumentCandidates",
    "codes",
    "gather_documents",
    "names_agent",
    "subject_share",
]

#: Documents nearest by meaning asked for per collection.
NEAREST_ASKED = 20
#: Documents asked for by their words (full text, BM25) per collection.
TEXT_ASKED = 20
#: Versions of facts (current or superseded) asked for on their own, per collection.
VERSIONS_ASKED = 10
#: Archived earlier versions of current facts asked for by their words, per collection.
ARCHIVED_ASKED = 3
#: Documents asked for on their own per agent the question names, and at most how many agents.
AUTHORED_ASKED = 10
MAX_AUTHORS_ASKED = 3
#: Identifiers of a question that count (the first ones named).
MAX_IDENTIFIERS = 5


@dataclass(frozen=True)
class DocumentCandidates:
    """What :func:`gather_documents` found in one collection."""

    #: The documents worth scoring, each once (nearest first, then the others).
    hits: list[QueryHit]
    #: The identifiers the question names that few documents hold.
    rare: list[str]
    #: Subjects whose earlier (superseded) versions match, with their best relevance.
    stale: dict[str, float]
    #: The agents the question names that wrote documents here.
    authors: list[str]
    #: BM25 of the hits that share words with the question (higher is better).
    words: dict[str, float]


def gather_documents(
    semantic: SemanticStore,
    embedder: Embedder,
    collection: str,
    query: str,
    *,
    reader: str | None,
    reader_teams: frozenset[str],
    rare_limit: int,
) -> DocumentCandidates:
    """The documents of ``collection`` that ``reader`` may read and that are worth scoring
    for ``query`` (see the module's docstring). An identifier is rare when at most
    ``rare_limit`` documents hold it."""
    asking = _Asking(semantic, collection, query, reader, reader_teams)
    hits = asking.nearest(NEAREST_ASKED)
    rare = asking.rare_identifiers(rare_limit)
    subjects = semantic.current_subjects(collection)
    versions = asking.of_subjects(subjects, VERSIONS_ASKED, current_first=False)
    stale = _stale_subjects(embedder, versions)
    for subject, relevance in _archived_subjects(semantic, embedder, asking, query).items():
        stale[subject] = max(relevance, stale.get(subject, 0.0))
    authors = [a for a in semantic.authors(collection) if names_agent(query, a)]
    nearest = {h.doc_id for h in hits}
    by_words = [d for d in asking.search_text(TEXT_ASKED) if d not in nearest]
    named = [s for s in subjects if subject_share(query, s)]
    extras = [
        # The current versions of the facts the question names.
        asking.of_subjects(named, len(named)),
        asking.with_ids(by_words),
        *rare.values(),
        versions,
        # The current versions of the facts whose earlier versions match.
        [h for h in asking.of_subjects(sorted(stale), len(stale)) if h.current],
        *(asking.by_author(a, AUTHORED_ASKED) for a in authors[:MAX_AUTHORS_ASKED]),
    ]
    seen = set(nearest)
    for extra in extras:
        for hit in extra:
            if hit.doc_id not in seen:
                seen.add(hit.doc_id)
                hits.append(hit)
    words = asking.search_text(len(hits), among=[h.doc_id for h in hits])
    return DocumentCandidates(hits, list(rare), stale, authors, words)


class _Asking:
    """One question put to one collection on behalf of one reader."""

    def __init__(
        self,
        semantic: SemanticStore,
        collection: str,
        query: str,
        reader: str | None,
        reader_teams: frozenset[str],
    ) -> None:
        self._semantic = semantic
        self._collection = collection
        self._query = query
        self._reader = reader
        self._teams = reader_teams

    def nearest(self, n: int) -> list[QueryHit]:
        return self._ask(n)

    def of_subjects(
        self, subjects: Sequence[str], n: int, *, current_first: bool = True
    ) -> list[QueryHit]:
        """The versions of these subjects nearest the question."""
        if not subjects:
            return []
        where = {"subject": {"$in": list(subjects)}}
        return self._ask(n, where=where, current_first=current_first)

    def with_ids(self, doc_ids: Sequence[str]) -> list[QueryHit]:
        return self._ask(len(doc_ids), ids=doc_ids, current_first=False) if doc_ids else []

    def by_author(self, author: str, n: int) -> list[QueryHit]:
        return self._ask(n, author=author)

    def rare_identifiers(self, limit: int) -> dict[str, list[QueryHit]]:
        """For each identifier the question names that at most ``limit`` documents hold:
        those documents. An embedding barely tells ``E-24174`` from ``E-24742``."""
        found: dict[str, list[QueryHit]] = {}
        for code in codes(self._query):
            hits = self._ask(limit + 1, where_document={"$contains": code})
            if 0 < len(hits) <= limit:
                found[code] = hits
        return found

    def archived_versions(self, n: int) -> list[SemanticDocument]:
        return self._semantic.archived_versions(
            self._collection, self._query, limit=n, reader=self._reader, reader_teams=self._teams
        )

    def search_text(self, limit: int, among: Sequence[str] | None = None) -> dict[str, float]:
        return self._semantic.search_text(
            self._collection,
            self._query,
            limit=max(1, limit),
            among=among,
            reader=self._reader,
            reader_teams=self._teams,
        )

    def _ask(
        self,
        n: int,
        *,
        where: Mapping[str, Any] | None = None,
        where_document: Mapping[str, Any] | None = None,
        author: str | None = None,
        ids: Sequence[str] | None = None,
        current_first: bool = True,
    ) -> list[QueryHit]:
        return self._semantic.query(
            self._collection,
            self._query,
            n_results=n,
            where=where,
            where_document=where_document,
            reader=self._reader,
            reader_teams=self._teams,
            touch=False,
            current_first=current_first,
            author=author,
            ids=ids,
        )


def _stale_subjects(embedder: Embedder, hits: Sequence[QueryHit]) -> dict[str, float]:
    """The subjects of the superseded versions among ``hits``, each with its best
    relevance: a question that matches an earlier version of a fact (the Japanese
    statement of a price since restated in English) asks for its current value."""
    stale: dict[str, float] = {}
    for hit in hits:
        subject = hit.metadata.get("subject")
        if not hit.current and isinstance(subject, str):
            relevance = float(embedder.calibrate(hit.similarity, "query"))
            stale[subject] = max(relevance, stale.get(subject, 0.0))
    return stale


def _archived_subjects(
    semantic: SemanticStore, embedder: Embedder, asking: _Asking, query: str
) -> dict[str, float]:
    """The subjects of the archived earlier versions of current facts that share words with
    the question, each with the relevance of its best chunk (embedded now: archived
    versions have left the vector index)."""
    found: dict[str, float] = {}
    for doc in asking.archived_versions(ARCHIVED_ASKED):
        chunks = semantic.chunk(doc.document)
        if doc.subject is None or not chunks:
            continue
        cosine = float(np.max(embedder.embed_passages(chunks) @ embedder.embed_query(query)))
        relevance = float(embedder.calibrate(cosine, "query"))
        found[doc.subject] = max(relevance, found.get(doc.subject, 0.0))
    return found


def names_agent(query: str, agent: str) -> bool:
    """True if ``query`` names ``agent``: a name in Latin letters as a whole word, where the
    word may end at Japanese text ("hrは" names hr, "three" does not); a CJK name anywhere."""
    name = unicodedata.normalize("NFKC", agent).casefold()
    text = unicodedata.normalize("NFKC", query).casefold()
    if len(name) < 2 or name not in text:
        return False
    if not name.isascii():
        return True
    pattern = rf"(?<![0-9a-z_]){re.escape(name)}(?![0-9a-z_])"
    return re.search(pattern, text, flags=re.ASCII) is not None


def subject_share(query: str, subject: str) -> float:
    """The share of the words of a subject's last part (``policy.deploy_window``: deploy,
    window) that ``query`` names, case-insensitively. Words of three letters or more count
    inside longer words ("yaml" in "fastyaml"), shorter ones only whole ("CI")."""
    last = re.split(r"[./:]", subject.casefold())[-1]
    words = [w for w in re.split(r"[^0-9a-z]+", last) if w]
    if not words:
        return 0.0
    text = unicodedata.normalize("NFKC", query).casefold()

    def named(word: str) -> bool:
        if len(word) >= 3:
            return word in text
        return re.search(rf"(?<![0-9a-z]){re.escape(word)}(?![0-9a-z])", text) is not None

    return sum(named(w) for w in words) / len(words)


def codes(query: str) -> list[str]:
    """The identifiers a question names that count, in the order named."""
    return identifier_tokens(query)[:MAX_IDENTIFIERS]
