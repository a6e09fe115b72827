"""A copy of a collection's chunks held in the process, searched exactly without ChromaDB.

ChromaDB stays where a collection's chunks are stored. This wrapper (``semantic.
in_process_chunks`` above 0, on a database no other process writes) also holds every chunk's
vector (in one matrix), text, metadata and reader flags, so a ranker finds the best chunks a
reader may read with one matrix product and no ChromaDB call
(:meth:`MirroredCollection.nearest`, :meth:`MirroredCollection.chunks_of`). A ChromaDB query
returning the texts, metadata and vectors of the hundred nearest chunks costs several times
that; an exact search also never misses a neighbour as HNSW's approximation can. The price is
memory, about 4 kB a chunk (the vector 1.5 kB, the rest text and metadata), and the first
search, which reads the collection (about a second for 10,000 chunks).

Staying in line with ChromaDB:

- The copy is built from the collection on first use (in pages), not at open; writes to the
  collection wait while it is read (a removal would shift the pages after it).
- Every write of the semantic store goes through the wrapper (``upsert``, ``add``, ``update``
  and ``delete`` are ChromaDB's own, passed on). Once ChromaDB has taken a write — or failed
  it — the chunk ids it named are noted, and the next search reads those chunks again from
  ChromaDB before answering: present ones are replaced, absent ones dropped. A ``delete`` that
  names no ids makes the next search build the copy afresh, as does a read that failed midway.
- A collection past ``semantic.in_process_chunks`` chunks is not held (its searches ask
  ChromaDB, as with the setting at 0; it is counted again only after a delete, the one write
  that can bring it under the limit), nor is any on a shared database, whose collections
  other replicas write: only a store's one owning process (the directory's lock) sees every
  write.

Part of the semantic layer."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from omoide.core.filters import may_read
from omoide.core.similarity import similarities
from omoide.core.vector_matrix import VectorMatrix
from omoide.storage.chroma import chroma_errors

__all__ = ["ChunkFlags", "Found", "MirroredCollection", "chunk_flags", "document_of"]

#: Chunks read from ChromaDB per request while the matrix is built.
_PAGE = 5_000


def document_of(chunk_id: str) -> str:
    """The document a chunk id (``doc#i``) belongs to."""
    return chunk_id.rsplit("#", 1)[0]


@dataclass(frozen=True)
class ChunkFlags:
    """What decides who may read a chunk and until when: its reader flags (the metadata keys
    :func:`~omoide.core.filters.may_read` reads) and its expiry."""

    #: ``_agent``, ``_global`` and the ``_r:agent:…`` / ``_r:team:…`` flags of the chunk.
    readers: Mapping[str, Any]
    #: When it expires (a timestamp), None when it never does.
    expires: float | None

    def readable(self, reader: str | None, teams: Iterable[str], now: float) -> bool:
        """True when ``reader`` (None: anyone) may read the chunk at ``now``: not expired, and
        :func:`~omoide.core.filters.may_read`'s rule, the one ChromaDB's filter applies."""
        if self.expires is not None and self.expires <= now:
            return False
        return reader is None or may_read(self.readers, reader, teams)


def chunk_flags(metadata: Mapping[str, Any] | None) -> ChunkFlags:
    """The reader flags and expiry in a chunk's metadata."""
    meta = metadata or {}
    expires = meta.get("_expires") if meta.get("_expiring") is True else None
    return ChunkFlags(
        readers={k: v for k, v in meta.items() if k in ("_agent", "_global") or k[:3] == "_r:"},
        expires=float(expires) if isinstance(expires, int | float) else None,
    )


#: A found chunk: its document, text, cosine similarity to the question, metadata and vector.
Found = tuple[str, str, float, dict[str, Any], "npt.NDArray[np.float32]"]


class MirroredCollection:
    """A ChromaDB collection whose chunk vectors are also held here (see the module's
    docstring). Everything not defined here is the collection's own."""

    def __init__(self, collection: Any, dimension: int, limit: int) -> None:
        self._coll = collection
        self._dim = dimension
        self._limit = limit
        self._lock = threading.Lock()  # the matrix and its tables
        self._noted_lock = threading.Lock()  # ids written since the last search
        #: Notified when a write or a build of the copy ends (under ``_noted_lock``).
        self._changed = threading.Condition(self._noted_lock)
        self._noted: set[str] = set()
        self._writing = 0  # writes under way
        self._building = False  # the whole collection is being read: writes wait
        self._rebuild = True
        #: The last count found the collection past the limit: it still is until a delete
        #: removes chunks that no later write put back (a store deletes a document's chunk ids
        #: and writes them again), so searches need not count it again until then.
        self._past_limit = False
        self._removed: set[str] = set()  # chunk ids deleted since the last search
        self._matrix: VectorMatrix | None = None
        self._keys: dict[str, int] = {}
        self._chunk_ids: dict[int, str] = {}
        self._flags: dict[int, ChunkFlags] = {}
        self._texts: dict[int, str] = {}
        self._metadata: dict[int, Mapping[str, Any]] = {}
        self._of_doc: dict[str, set[int]] = {}
        self._next_key = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._coll, name)

    # -- writes: ChromaDB's, noted ---------------------------------------------------------

    def upsert(self, *, ids: Sequence[str], **kwargs: Any) -> Any:
        return self._noting(ids, lambda: self._coll.upsert(ids=ids, **kwargs))

    def add(self, *, ids: Sequence[str], **kwargs: Any) -> Any:
        return self._noting(ids, lambda: self._coll.add(ids=ids, **kwargs))

    def update(self, *, ids: Sequence[str], **kwargs: Any) -> Any:
        return self._noting(ids, lambda: self._coll.update(ids=ids, **kwargs))

    def delete(self, ids: Sequence[str] | None = None, **kwargs: Any) -> Any:
        return self._noting(ids, lambda: self._coll.delete(ids=ids, **kwargs), shrinks=True)

    def _noting(
        self, ids: Sequence[str] | None, write: Callable[[], Any], *, shrinks: bool = False
    ) -> Any:
        with self._changed:
            while self._building:
                self._changed.wait()
            self._writing += 1
        try:
            return write()
        finally:  # after ChromaDB took it (or failed): a search never reads it half-done
            with self._changed:
                self._writing -= 1
                if ids is None:  # a delete by filter: any chunk may have gone
                    self._rebuild = True
                    self._past_limit = False
                else:
                    self._noted.update(str(i) for i in ids)
                    if shrinks:
                        self._removed.update(str(i) for i in ids)
                    else:
                        self._removed.difference_update(str(i) for i in ids)
                self._changed.notify_all()

    # -- searches ----------------------------------------------------------------------------

    def nearest(
        self,
        vector: npt.NDArray[np.float32],
        pool: int,
        readable: Callable[[ChunkFlags], bool],
    ) -> list[Found] | None:
        """The best chunk of each of the ``pool`` documents nearest ``vector`` whose chunks
        ``readable`` accepts, nearest first; None when the collection is past the limit (ask
        ChromaDB)."""
        with self._lock:
            matrix = self._current()
            if matrix is None:
                return None
            keys, sims = matrix.similarities(vector)
            if not len(keys):
                return []
            k = min(len(keys), 8 * pool)
            while True:
                order = np.argpartition(-sims, k - 1)[:k] if k < len(keys) else np.arange(k)
                order = order[np.argsort(-sims[order], kind="stable")]
                best: dict[str, tuple[int, float]] = {}  # document: its nearest chunk
                for i in order:
                    key = int(keys[i])
                    if not readable(self._flags[key]):
                        continue
                    doc_id = document_of(self._chunk_ids[key])
                    if doc_id not in best:
                        best[doc_id] = (key, float(sims[i]))
                        if len(best) == pool:
                            break
                if len(best) == pool or k == len(keys):
                    vectors = matrix.vectors([key for key, _ in best.values()])
                    return [
                        self._found(key, doc_id, cosine, vectors[n])
                        for n, (doc_id, (key, cosine)) in enumerate(best.items())
                    ]
                k = min(len(keys), 4 * k)

    def chunks_of(
        self,
        vector: npt.NDArray[np.float32],
        doc_ids: Iterable[str],
        readable: Callable[[ChunkFlags], bool],
    ) -> list[Found] | None:
        """The chunk of each of these documents nearest ``vector`` among those ``readable``
        accepts (a document without such chunks is left out); None past the limit."""
        with self._lock:
            matrix = self._current()
            if matrix is None:
                return None
            wanted = []
            for doc_id in doc_ids:
                keys = [k for k in sorted(self._of_doc.get(doc_id, ())) if readable(self._flags[k])]
                if keys:
                    wanted.append((doc_id, keys))
            every = [key for _, keys in wanted for key in keys]
            vectors = matrix.vectors(every)  # every chunk asked for, in one product
            sims = similarities(vectors, vector) if every else np.zeros(0, dtype=np.float32)
            found, start = [], 0
            for doc_id, keys in wanted:
                at = start + int(np.argmax(sims[start : start + len(keys)]))
                found.append(self._found(every[at], doc_id, float(sims[at]), vectors[at]))
                start += len(keys)
            return found

    def _found(self, key: int, doc_id: str, cosine: float, chunk: npt.NDArray[np.float32]) -> Found:
        return (doc_id, self._texts[key], cosine, dict(self._metadata[key]), chunk)

    # -- keeping in line ---------------------------------------------------------------------

    def _current(self) -> VectorMatrix | None:
        """The matrix, brought in line with what was written since the last search (None
        when the collection is past the limit). Called under ``_lock``."""
        with self._noted_lock:
            if self._past_limit and not self._removed:
                self._noted.clear()  # moot: the copy is built afresh once it is held again
                return None
            self._past_limit, self._removed = False, set()
            rebuild, noted = self._rebuild, self._noted
            self._rebuild, self._noted = False, set()
        try:
            return self._refresh(rebuild, noted)
        except BaseException:
            with self._noted_lock:  # ChromaDB failed midway: the next search starts afresh
                self._rebuild = True
            raise

    def _refresh(self, rebuild: bool, noted: set[str]) -> VectorMatrix | None:
        if rebuild or self._matrix is None:
            return self._build()
        if noted:
            ordered = sorted(noted)
            with chroma_errors("ids"):
                page = self._coll.get(ids=ordered, include=["embeddings", "documents", "metadatas"])
            self._drop([self._keys[c] for c in ordered if c in self._keys])
            self._put(page)
            if len(self._keys) > self._limit:
                self._clear()
                with self._noted_lock:
                    self._rebuild = True
                    self._past_limit = True
                return None
        return self._matrix

    def _build(self) -> VectorMatrix | None:
        """The matrix read afresh from the collection (None: past the limit). It is read in
        pages by offset, and a write removing a chunk between two pages would shift the
        second and skip a chunk no write names: writes wait while it is read (the ones under
        way first end), once a process, or again after a failed read."""
        with self._changed:
            self._building = True  # no write starts now
            while self._writing:
                self._changed.wait()
            self._noted = set()  # the read below sees every write so far
        try:
            self._clear()
            with chroma_errors("collection"):
                total = int(self._coll.count())
            if total > self._limit:
                with self._noted_lock:
                    self._rebuild = True  # counted again once a delete may have shrunk it
                    self._past_limit = True
                return None
            for start in range(0, total, _PAGE):
                with chroma_errors("collection"):
                    page = self._coll.get(
                        include=["embeddings", "documents", "metadatas"],
                        limit=_PAGE,
                        offset=start,
                    )
                self._put(page)
            return self._matrix
        finally:
            with self._changed:
                self._building = False
                self._changed.notify_all()

    def _clear(self) -> None:
        self._matrix = VectorMatrix(self._dim)
        self._keys, self._chunk_ids, self._flags, self._of_doc = {}, {}, {}, {}
        self._texts, self._metadata = {}, {}

    def _put(self, page: Mapping[str, Any]) -> None:
        ids = [str(i) for i in page["ids"]]
        if not ids:
            return
        assert self._matrix is not None
        keys = []
        for chunk_id, text, meta in zip(ids, page["documents"], page["metadatas"], strict=True):
            key = self._keys.get(chunk_id)
            if key is None:
                key = self._next_key
                self._next_key += 1
                self._keys[chunk_id] = key
                self._chunk_ids[key] = chunk_id
                self._of_doc.setdefault(document_of(chunk_id), set()).add(key)
            self._flags[key] = chunk_flags(meta)
            self._texts[key], self._metadata[key] = text or "", dict(meta or {})
            keys.append(key)
        self._matrix.add(keys, np.asarray(page["embeddings"], dtype=np.float32))

    def _drop(self, keys: Sequence[int]) -> None:
        assert self._matrix is not None
        self._matrix.remove(keys)
        for key in keys:
            chunk_id = self._chunk_ids.pop(key)
            del self._keys[chunk_id], self._flags[key], self._texts[key], self._metadata[key]
            doc_id = document_of(chunk_id)
            self._of_doc[doc_id].discard(key)
            if not self._of_doc[doc_id]:
                del self._of_doc[doc_id]
