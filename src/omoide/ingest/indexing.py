"""Indexing documents and codebases into the semantic layer, incrementally.

``Memory.index(path, collection)`` walks a folder or git repository (:mod:`omoide.ingest.filetree`:
``.gitignore`` respected), splits each text file into sections (:mod:`omoide.ingest.sections`:
headings for Markdown and reStructuredText, top-level definitions for code, sentences for
prose) and stores every section as a document of ``collection`` (normally *code* or
*knowledge*) with metadata:

========================  ======================================================================
``source``                the tree's name (``source=`` argument; the root directory's name)
``path``                  the file, relative to the root, with ``/`` separators
``language``              ``python``, ``markdown``, ``rst``, ``text``, ``javascript``, ...
``content_hash``          SHA-256 of the file's bytes
``mtime``                 the file's modification time (seconds since the epoch)
``commit``                in a git repository: the commit HEAD pointed to when it was indexed
``heading`` / ``symbol``  the heading path (``Guide > Install``) or symbol (``Store.query``)
``section`` / ``kind``    the section's key within the file and its kind (see ``Section``)
``line_start/line_end``   where the section is in the file (1-based, inclusive)
========================  ======================================================================

Document ids are derived from the collection, source, path and section key, so indexing
again replaces documents instead of adding copies. A table of indexed files (SQLite,
``indexed_files``) remembers each file's content hash and documents, which makes runs
incremental: a file whose hash is unchanged is not read into the store again, an edited file
replaces its documents (and loses the sections it no longer has), and the documents of a file
that was deleted — or is now ignored, binary or too large — are removed. Running it on every
commit is cheap.

Files are skipped, and reported with the reason, when they are symlinks or not regular files,
larger than ``max_file_bytes`` (1 MB by default), binary (a NUL byte in the first 8,000 bytes,
git's test), not valid UTF-8, or empty. Files ignored by ``.gitignore`` or ``exclude`` are not
walked, so they are not reported.

Before writing anything the run checks the collection's cap: if the documents it would add
(less those it would remove) exceed ``max_docs`` under the ``refuse`` rule it raises
:class:`~omoide.errors.CapacityError` and changes nothing. Writes are crash-safe: a file's
row is marked in flight before its documents change and completed after, so an interrupted
run is finished by the next one.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omoide.clock import Clock, to_timestamp
from omoide.core.scope import normalize_scope
from omoide.core.validation import check_name, check_positive_int
from omoide.errors import CapacityError, UnknownCollectionError, ValidationError
from omoide.ingest.filetree import list_files
from omoide.ingest.reports import (
    IndexProgress,
    IndexReport,
    ProgressBar,
    ProgressCallback,
    SkippedFile,
)
from omoide.ingest.sections import Section, detect_language, split_file
from omoide.layers.semantic.store import SemanticStore
from omoide.storage import Database

__all__ = [
    "DEFAULT_MAX_FILE_BYTES",
    "IndexProgress",
    "IndexReport",
    "Indexer",
    "ProgressBar",
    "ProgressCallback",
    "SkippedFile",
    "document_id",
]

#: Files larger than this are skipped unless ``max_file_bytes`` says otherwise.
DEFAULT_MAX_FILE_BYTES = 1_000_000
#: Bytes examined for a NUL to call a file binary (git's heuristic).
BINARY_SNIFF_BYTES = 8_000
#: Sections embedded per batch: the unit of progress and of a write to the store.
BATCH_SECTIONS = 256
#: A Python class longer than this (characters) is indexed method by method.
CLASS_SPLIT_CHARS = 2_000

# Reasons a file is skipped.
SYMLINK = "symlink"
NOT_REGULAR = "not a regular file"
TOO_LARGE = "too large"
BINARY = "binary"
NOT_UTF8 = "not UTF-8"
EMPTY = "empty"
UNREADABLE = "unreadable"


def document_id(collection: str, source: str, path: str, section: str) -> str:
    """The id of the document holding ``section`` of file ``path`` in ``source``."""
    key = "\0".join((collection, source, path, section))
    return "file-" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]


@dataclass
class _FilePlan:
    """A new or changed file: its sections, about to be (re)written."""

    path: str
    content_hash: str
    size: int
    mtime: float
    language: str
    sections: list[Section]
    ids: list[str]
    old_ids: list[str] = field(default_factory=list)


@dataclass
class _Scan:
    plans: list[_FilePlan] = field(default_factory=list)
    skipped: list[SkippedFile] = field(default_factory=list)
    present: set[str] = field(default_factory=set)  # indexable files, changed or not
    seen: int = 0
    unchanged: int = 0


class Indexer:
    """Indexes source trees into semantic collections; obtain it as ``Memory.indexer``."""

    def __init__(
        self,
        db: Database,
        semantic: SemanticStore,
        *,
        clock: Clock,
        skip: Sequence[Path] = (),
    ) -> None:
        self._db = db
        self._semantic = semantic
        self._clock = clock
        self._skip = tuple(skip)
        self._lock = threading.Lock()

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
        """Index the text files under ``path`` into ``collection``; see the module docstring.

        ``source`` names the tree (default: the root directory's name); two trees indexed
        under one name would replace each other's documents. ``include``/``exclude`` are
        gitignore-style patterns relative to the root. ``use_git`` None uses git when the root
        is in a work tree. ``dry_run`` reports what would change and writes nothing.
        ``progress`` is called as files are scanned and indexed (see :class:`ProgressBar`).
        Long because a run is one sequence — list, scan, plan, remove, write in batches, report —
        whose steps share the run's counters.
        """
        started = self._clock.monotonic()
        if not isinstance(collection, str) or collection not in self._semantic.collections:
            raise UnknownCollectionError(collection, self._semantic.collections)
        if not isinstance(path, str | os.PathLike):
            raise ValidationError("path", f"expected a path, got {type(path).__name__}")
        root = Path(path)
        if not root.is_dir():
            raise ValidationError("path", f"{root} is not a directory")
        root = root.resolve()
        name = check_name("source", source if source is not None else (root.name or "root"))
        limit = check_positive_int("max_file_bytes", max_file_bytes, maximum=1_000_000_000)
        owner = "" if agent_name == "" else check_name("agent_name", agent_name)
        scope_value = None if scope is None else normalize_scope(scope)
        if progress is not None and not callable(progress):
            raise ValidationError("progress", "expected a callable")
        if use_git is not None and not isinstance(use_git, bool):
            raise ValidationError("use_git", "expected True, False or None (auto)")
        if not isinstance(dry_run, bool):
            raise ValidationError("dry_run", "expected True or False")
        listing = list_files(
            root,
            include=_patterns("include", include),
            exclude=_patterns("exclude", exclude),
            use_git=use_git,
            skip=self._skip,
        )
        with self._lock:
            stored = self._stored(collection, name)
            scan = self._scan(root, listing.files, stored, collection, name, limit, progress)
            removed_files = [p for p in stored if p not in scan.present]
            for plan in scan.plans:
                plan.old_ids = stored[plan.path][1] if plan.path in stored else []
            stale = [i for p in scan.plans for i in p.old_ids if i not in set(p.ids)]
            gone = [i for p in removed_files for i in stored[p][1]] + stale
            self._check_capacity(collection, [i for p in scan.plans for i in p.ids], gone)
            if dry_run:
                documents = sum(len(p.ids) for p in scan.plans)
                chunks = sum(
                    len(self._semantic.chunk(s.text)) for p in scan.plans for s in p.sections
                )
                removed_docs = len(self._existing(collection, gone))
            else:
                removed_docs = self._remove(collection, name, removed_files, stored, scan.plans)
                documents, chunks = self._write(
                    collection, name, listing.commit, scan.plans, owner, scope_value, progress
                )
        return IndexReport(
            collection=collection,
            source=name,
            root=str(root),
            git=listing.git,
            commit=listing.commit,
            files_seen=scan.seen,
            files_indexed=len(scan.plans),
            files_unchanged=scan.unchanged,
            files_removed=len(removed_files),
            skipped=tuple(scan.skipped),
            documents=documents,
            documents_removed=removed_docs,
            chunks=chunks,
            seconds=self._clock.monotonic() - started,
            dry_run=dry_run,
        )

    def files(self, collection: str, source: str | None = None) -> list[dict[str, Any]]:
        """The indexed files of a collection (optionally of one source), as plain records."""
        if collection not in self._semantic.collections:
            raise UnknownCollectionError(collection, self._semantic.collections)
        sql = "SELECT * FROM indexed_files WHERE collection=?"
        params: list[Any] = [collection]
        if source is not None:
            sql += " AND source=?"
            params.append(source)
        rows = self._db.query(sql + " ORDER BY source, path", params)
        return [{**dict(r), "doc_ids": json.loads(r["doc_ids"])} for r in rows]

    # -- scanning ---------------------------------------------------------------------------

    def _stored(self, collection: str, source: str) -> dict[str, tuple[str | None, list[str]]]:
        """path -> (content hash or None while in flight, document ids) of indexed files."""
        return {
            r["path"]: (r["content_hash"], json.loads(r["doc_ids"]))
            for r in self._db.query(
                "SELECT path, content_hash, doc_ids FROM indexed_files "
                "WHERE collection=? AND source=?",
                (collection, source),
            )
        }

    def _scan(
        self,
        root: Path,
        files: Sequence[str],
        stored: Mapping[str, tuple[str | None, list[str]]],
        collection: str,
        source: str,
        limit: int,
        progress: ProgressCallback | None,
    ) -> _Scan:
        """Read and hash every file; plan the new and changed ones."""
        scan = _Scan()
        max_chars = self._semantic.config.max_document_chars
        for n, rel in enumerate(files, 1):
            if progress is not None:
                progress(IndexProgress("scan", n, len(files), rel))
            outcome = _read(root / rel, rel, limit, max_chars)
            if outcome is None:  # vanished since it was listed (or a deleted tracked file)
                continue
            scan.seen += 1
            if isinstance(outcome, SkippedFile):
                scan.skipped.append(outcome)
                continue
            data, text, mtime = outcome
            digest = hashlib.sha256(data).hexdigest()
            scan.present.add(rel)
            if rel in stored and stored[rel][0] == digest:
                scan.unchanged += 1
                continue
            language = detect_language(rel, text[:200])
            sections = split_file(text, language, max_chars=CLASS_SPLIT_CHARS)
            ids = [document_id(collection, source, rel, s.key) for s in sections]
            scan.plans.append(_FilePlan(rel, digest, len(data), mtime, language, sections, ids))
        return scan

    def _existing(self, collection: str, ids: Iterable[str]) -> set[str]:
        """Which of ``ids`` are documents of ``collection`` that count against its cap."""
        wanted = list(dict.fromkeys(ids))
        rows = self._semantic.registry.rows(collection, wanted)
        return {r["id"] for r in rows if r["state"] in ("active", "pending")}

    def _check_capacity(self, collection: str, new: Sequence[str], gone: Sequence[str]) -> None:
        spec = self._semantic.config.collections[collection]
        if spec.on_full != "refuse":
            return
        added = len(set(new) - self._existing(collection, new))
        if not added:
            return
        removed = len(self._existing(collection, set(gone) - set(new)))
        current = self._semantic.count(collection) + self._semantic.count(
            collection, state="pending"
        )
        if current + added - removed > spec.max_docs:
            raise CapacityError(
                f"collection {collection!r} holds {current:,} of {spec.max_docs:,} documents; "
                f"this index run would add {added:,} and remove {removed:,}, exceeding its cap "
                "(rule: refuse); nothing was indexed"
            )

    # -- writing ----------------------------------------------------------------------------

    def _remove(
        self,
        collection: str,
        source: str,
        removed_files: Sequence[str],
        stored: Mapping[str, tuple[str | None, list[str]]],
        plans: Sequence[_FilePlan],
    ) -> int:
        """Mark changed files in flight, then delete the documents no longer wanted."""
        now = to_timestamp(self._clock.now())
        with self._db.transaction() as conn:
            conn.executemany(
                "INSERT INTO indexed_files(collection, source, path, content_hash, size, mtime, "
                "language, doc_ids, indexed_at) VALUES (?, ?, ?, NULL, ?, ?, ?, ?, ?) "
                "ON CONFLICT(collection, source, path) DO UPDATE SET content_hash=NULL, "
                "doc_ids=excluded.doc_ids",
                [
                    (
                        collection,
                        source,
                        p.path,
                        p.size,
                        p.mtime,
                        p.language,
                        json.dumps(list(dict.fromkeys([*p.old_ids, *p.ids]))),
                        now,
                    )
                    for p in plans
                ],
            )
        removed = 0
        for plan in plans:
            keep = set(plan.ids)
            removed += self._delete(collection, [i for i in plan.old_ids if i not in keep])
        for rel in removed_files:
            removed += self._delete(collection, stored[rel][1])
            with self._db.transaction() as conn:
                conn.execute(
                    "DELETE FROM indexed_files WHERE collection=? AND source=? AND path=?",
                    (collection, source, rel),
                )
        return removed

    def _delete(self, collection: str, ids: Sequence[str]) -> int:
        count = 0
        for start in range(0, len(ids), 500):
            count += self._semantic.delete(collection, ids[start : start + 500])
        return count

    def _write(
        self,
        collection: str,
        source: str,
        commit: str | None,
        plans: Sequence[_FilePlan],
        owner: str,
        scope: str | None,
        progress: ProgressCallback | None,
    ) -> tuple[int, int]:
        """Store the sections of new and changed files in batches; complete their rows."""
        documents = chunks = done = 0
        for batch in _batches(plans, BATCH_SECTIONS):
            texts: list[str] = []
            metas: list[dict[str, Any]] = []
            ids: list[str] = []
            for plan in batch:
                for section, doc_id in zip(plan.sections, plan.ids, strict=True):
                    texts.append(section.text)
                    metas.append(_metadata(source, commit, plan, section))
                    ids.append(doc_id)
            if ids:
                self._semantic.store(collection, texts, metas, ids, agent_name=owner, scope=scope)
            counts = self._chunk_counts(collection, ids)
            now = to_timestamp(self._clock.now())
            rows = []
            for plan in batch:
                file_chunks = sum(counts.get(i, 0) for i in plan.ids)
                chunks += file_chunks
                rows.append(
                    (
                        plan.content_hash,
                        plan.size,
                        plan.mtime,
                        plan.language,
                        commit,
                        json.dumps(plan.ids),
                        file_chunks,
                        now,
                        collection,
                        source,
                        plan.path,
                    )
                )
            with self._db.transaction() as conn:
                conn.executemany(
                    "UPDATE indexed_files SET content_hash=?, size=?, mtime=?, language=?, "
                    "commit_id=?, doc_ids=?, chunk_count=?, indexed_at=? "
                    "WHERE collection=? AND source=? AND path=?",
                    rows,
                )
            documents += len(ids)
            done += len(batch)
            if progress is not None:
                progress(IndexProgress("index", done, len(plans), batch[-1].path))
        return documents, chunks

    def _chunk_counts(self, collection: str, ids: Sequence[str]) -> dict[str, int]:
        counts: dict[str, int] = {}
        counts.update(
            (r["id"], int(r["chunk_count"])) for r in self._semantic.registry.rows(collection, ids)
        )
        return counts


def _patterns(field: str, value: Iterable[str]) -> list[str]:
    if isinstance(value, str):
        raise ValidationError(field, "expected a list of patterns, not a single string")
    return list(value)


def _read(
    full: Path, rel: str, limit: int, max_chars: int
) -> tuple[bytes, str, float] | SkippedFile | None:
    """A file's bytes, text and mtime; a SkippedFile saying why not; None if it is gone."""
    try:
        info = os.lstat(full)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return SkippedFile(rel, UNREADABLE, exc.strerror or str(exc))
    if stat.S_ISLNK(info.st_mode):
        return SkippedFile(rel, SYMLINK, "symbolic links are not followed")
    if not stat.S_ISREG(info.st_mode):
        return SkippedFile(rel, NOT_REGULAR, "a directory, submodule or device")
    if info.st_size > limit:
        return SkippedFile(rel, TOO_LARGE, f"{info.st_size:,} bytes; the limit is {limit:,}")
    try:
        with open(full, "rb") as fh:
            data = fh.read(limit + 1)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return SkippedFile(rel, UNREADABLE, exc.strerror or str(exc))
    if len(data) > limit:
        return SkippedFile(rel, TOO_LARGE, f"over {limit:,} bytes")
    nul = data.find(b"\0", 0, BINARY_SNIFF_BYTES)
    if nul >= 0:
        return SkippedFile(rel, BINARY, f"NUL byte at offset {nul}")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return SkippedFile(rel, NOT_UTF8, f"invalid UTF-8 at byte {exc.start}")
    if "\0" in text:
        return SkippedFile(rel, BINARY, "NUL character")
    if len(text) > max_chars:
        return SkippedFile(rel, TOO_LARGE, f"{len(text):,} characters; the limit is {max_chars:,}")
    if not text.strip():
        return SkippedFile(rel, EMPTY, "no text")
    return data, text, info.st_mtime


def _metadata(source: str, commit: str | None, plan: _FilePlan, section: Section) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "source": source,
        "path": plan.path,
        "language": plan.language,
        "content_hash": plan.content_hash,
        "mtime": plan.mtime,
        "section": section.key,
        "kind": section.kind,
        "line_start": section.line_start,
        "line_end": section.line_end,
    }
    if commit:
        meta["commit"] = commit
    if section.title:
        meta["heading" if section.kind in ("heading", "preamble") else "symbol"] = section.title
    return meta


def _batches(plans: Sequence[_FilePlan], size: int) -> Iterator[list[_FilePlan]]:
    """Whole files grouped until a batch holds at least ``size`` sections."""
    batch: list[_FilePlan] = []
    count = 0
    for plan in plans:
        batch.append(plan)
        count += len(plan.sections)
        if count >= size:
            yield batch
            batch, count = [], 0
    if batch:
        yield batch
