"""Indexing trees into the semantic layer: metadata, incrementality, skips, safety."""

from __future__ import annotations

import ast
import hashlib
import io
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from omoide import Config, ManualClock, Memory
from omoide.errors import CapacityError, NotFoundError, UnknownCollectionError, ValidationError
from omoide.ingest.filetree import list_files
from omoide.ingest.indexing import IndexProgress, ProgressBar, document_id

REPO = Path(__file__).resolve().parents[1]
needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

PYTHON = '''\
"""Greeting helpers."""

import os


def greet(name: str) -> str:
    """Say hello."""
    return f"hello {name}"


class Greeter:
    """Greets people by name."""

    def __call__(self, name: str) -> str:
        return greet(name)
'''

JAVASCRIPT = """\
import fs from 'fs';

// Reads a config file.
export function readConfig(path) {
  return JSON.parse(fs.readFileSync(path));
}
"""

NOTES = (
    "今日の会議では来年度の予算を承認した。"
    "新しいサーバーを三台購入することが決まった。"
    "導入は四月から始める予定である。"
    "担当は田中さんと佐藤さんの二人である。"
    "移行作業の手順書は来週までに用意する。"
    "障害が起きたときの連絡先も一覧にまとめる。"
    "古いサーバーは六月末に停止する。"
    "停止の前に全データのバックアップを取る。"
    "費用の見積もりは経理部に確認してもらう。"
    "次回の会議は二週間後の火曜日に開く。\n"
)

TREE: dict[str, str | bytes] = {
    "README.md": "# Project\n\nIntro.\n\n## Install\n\nRun `pip install project`.\n\n"
    "## 使い方\n\n記憶を保存して、あとで検索します。\n",
    "docs/guide.rst": "Guide\n=====\n\nIntro.\n\nSetup\n-----\n\nInstall the package first.\n",
    "src/app.py": PYTHON,
    "src/util.js": JAVASCRIPT,
    "notes/会議メモ.txt": NOTES,
    ".gitignore": "build/\n*.log\n",
    "build/out.md": "# Generated, ignored\n",
    "debug.log": "ignored by *.log\n",
    "assets/logo.png": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
    "data/big.txt": "x" * 5_000,
    "legacy/sjis.txt": "日本語のメモ".encode("shift_jis"),
    "empty.md": "\n\n",
}
INDEXED = {"README.md", "docs/guide.rst", "src/app.py", "src/util.js", "notes/会議メモ.txt"}
INDEXED |= {".gitignore"}
SKIPPED = {
    "assets/logo.png": "binary",
    "data/big.txt": "too large",
    "legacy/sjis.txt": "not UTF-8",
    "empty.md": "empty",
}
LIMIT = 4_000  # max_file_bytes in these tests: data/big.txt is over it


def write_tree(root: Path, files: dict[str, str | bytes] = TREE) -> Path:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root


@pytest.fixture
def small_chunks(tmp_path: Path, clock: ManualClock) -> Iterator[Memory]:
    """A Memory whose chunks are small, so the Japanese notes span several chunks."""
    config = Config.from_dict({"semantic": {"chunk_tokens": 48, "chunk_overlap_tokens": 12}})
    with Memory(tmp_path / "data", clock=clock, config=config) as memory:
        yield memory


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return write_tree(tmp_path / "tree")


def docs_of(mem: Memory, path: str, collection: str = "code") -> list[Any]:
    (row,) = [r for r in mem.indexer.files(collection) if r["path"] == path]
    return [mem.semantic.get(collection, i) for i in row["doc_ids"]]


def all_chunks(mem: Memory, collection: str, path: str) -> list[str]:
    hits = mem.semantic.query(
        collection, "text", n_results=1000, where={"path": path}, dedupe=False, touch=False
    )
    return [h.document for h in sorted(hits, key=lambda h: (h.doc_id, h.chunk_index))]


def test_first_index_stores_sections_with_metadata(small_chunks: Memory, tree: Path) -> None:
    mem = small_chunks
    report = mem.index(tree, "code", max_file_bytes=LIMIT)
    assert (report.collection, report.source, report.root) == ("code", "tree", str(tree))
    assert report.files_seen == len(INDEXED) + len(SKIPPED)
    assert report.files_indexed == len(INDEXED)
    assert (report.files_unchanged, report.files_removed) == (0, 0)
    assert {s.path: s.reason for s in report.skipped} == SKIPPED
    assert all(s.detail for s in report.skipped)
    assert report.skipped_by_reason() == {r: 1 for r in SKIPPED.values()}
    assert "skipped" in report.summary() and "6 of 10 files" in report.summary()

    rows = {r["path"]: r for r in mem.indexer.files("code")}
    assert set(rows) == INDEXED  # .gitignore'd files were not walked
    assert report.documents == sum(len(r["doc_ids"]) for r in rows.values())
    assert report.documents == mem.semantic.count("code")
    assert (
        report.chunks
        == mem.semantic.count_chunks("code")
        == sum(r["chunk_count"] for r in rows.values())
    )

    for rel, row in rows.items():
        data = (tree / rel).read_bytes()
        text = data.decode("utf-8")
        assert row["content_hash"] == hashlib.sha256(data).hexdigest()
        for doc in docs_of(mem, rel):
            meta = doc.metadata
            assert meta["source"] == "tree" and meta["path"] == rel
            assert meta["content_hash"] == row["content_hash"]
            assert meta["mtime"] == pytest.approx(os.stat(tree / rel).st_mtime)
            assert "commit" not in meta  # not a git repository
            assert doc.id == document_id("code", "tree", rel, str(meta["section"]))
            lines = text.splitlines(keepends=True)
            assert doc.document == "".join(lines[meta["line_start"] - 1 : meta["line_end"]])

    readme = docs_of(mem, "README.md")
    assert [d.metadata["heading"] for d in readme] == [
        "Project",
        "Project > Install",
        "Project > 使い方",
    ]
    assert {d.metadata["language"] for d in readme} == {"markdown"}
    guide = docs_of(mem, "docs/guide.rst")
    assert [d.metadata["heading"] for d in guide] == ["Guide", "Guide > Setup"]
    app = docs_of(mem, "src/app.py")
    assert [d.metadata.get("symbol") for d in app] == [None, "greet", "Greeter"]
    assert [d.metadata["kind"] for d in app] == ["module", "function", "class"]
    js = docs_of(mem, "src/util.js")
    assert [d.metadata.get("symbol") for d in js] == [None, "readConfig"]
    assert js[1].metadata["language"] == "javascript"

    # Japanese prose: one document, chunked on sentence boundaries.
    (notes,) = docs_of(mem, "notes/会議メモ.txt")
    assert notes.metadata["language"] == "text" and notes.metadata["kind"] == "file"
    chunks = all_chunks(mem, "code", "notes/会議メモ.txt")
    assert len(chunks) == notes.chunk_count > 1
    assert all(c.endswith("。") for c in chunks)
    top = mem.semantic.query("code", "予算は承認されましたか", n_results=1)
    assert top[0].metadata["path"] == "notes/会議メモ.txt"


def test_second_run_changes_nothing(mem: Memory, tree: Path, clock: ManualClock) -> None:
    first = mem.index(tree, "code", max_file_bytes=LIMIT)
    before = {d.id: d.updated_at for d in mem.semantic.documents("code", limit=1000)}
    chunks = mem.semantic.count_chunks("code")
    clock.advance(days=1)
    second = mem.index(tree, "code", max_file_bytes=LIMIT)
    assert second.files_seen == first.files_seen
    assert (second.files_indexed, second.files_unchanged) == (0, len(INDEXED))
    assert (second.files_removed, second.documents, second.chunks) == (0, 0, 0)
    assert second.documents_removed == 0
    assert len(second.skipped) == len(SKIPPED)
    after = {d.id: d.updated_at for d in mem.semantic.documents("code", limit=1000)}
    assert after == before  # nothing was rewritten
    assert mem.semantic.count_chunks("code") == chunks


def test_editing_one_file_reindexes_only_that_file(
    mem: Memory, tree: Path, clock: ManualClock
) -> None:
    mem.index(tree, "code", max_file_bytes=LIMIT)
    old_readme = {d.metadata["section"]: d.id for d in docs_of(mem, "README.md")}
    others = {
        d.id: d.updated_at
        for d in mem.semantic.documents("code", limit=1000)
        if d.metadata["path"] != "README.md"
    }
    clock.advance(days=1)
    (tree / "README.md").write_text(
        "# Project\n\nIntro.\n\n## Install\n\nRun `uv add project`.\n", encoding="utf-8"
    )
    report = mem.index(tree, "code", max_file_bytes=LIMIT)
    assert (report.files_indexed, report.files_unchanged) == (1, len(INDEXED) - 1)
    assert report.documents == 2 and report.documents_removed == 1
    readme = docs_of(mem, "README.md")
    assert [d.metadata["heading"] for d in readme] == ["Project", "Project > Install"]
    assert "uv add" in readme[1].document
    assert readme[1].id == old_readme["h:Project > Install"]  # same section, same id
    with pytest.raises(NotFoundError):
        mem.semantic.get("code", old_readme["h:Project > 使い方"])
    assert mem.semantic.query("code", "使い方", where={"heading": "Project > 使い方"}) == []
    now = {
        d.id: d.updated_at
        for d in mem.semantic.documents("code", limit=1000)
        if d.metadata["path"] != "README.md"
    }
    assert now == others  # the other files were not touched


def test_deleting_a_file_removes_its_documents_and_chunks(mem: Memory, tree: Path) -> None:
    mem.index(tree, "code", max_file_bytes=LIMIT)
    (row,) = [r for r in mem.indexer.files("code") if r["path"] == "src/app.py"]
    docs, chunks = mem.semantic.count("code"), mem.semantic.count_chunks("code")
    (tree / "src" / "app.py").unlink()
    report = mem.index(tree, "code", max_file_bytes=LIMIT)
    assert (report.files_removed, report.files_indexed) == (1, 0)
    assert report.documents_removed == len(row["doc_ids"])
    assert mem.semantic.count("code") == docs - len(row["doc_ids"])
    assert mem.semantic.count_chunks("code") == chunks - row["chunk_count"]
    assert "src/app.py" not in {r["path"] for r in mem.indexer.files("code")}
    for doc_id in row["doc_ids"]:
        with pytest.raises(NotFoundError):
            mem.semantic.get("code", doc_id)
    assert mem.semantic.query("code", "greet", where={"path": "src/app.py"}) == []


def test_files_that_become_ignored_or_binary_are_removed(mem: Memory, tree: Path) -> None:
    mem.index(tree, "code", max_file_bytes=LIMIT)
    with (tree / ".gitignore").open("a", encoding="utf-8") as fh:
        fh.write("docs/\n")
    (tree / "src" / "util.js").write_bytes(b"\x00binary now")
    report = mem.index(tree, "code", max_file_bytes=LIMIT)
    assert report.files_removed == 2  # docs/guide.rst (ignored) and src/util.js (binary)
    assert report.files_indexed == 1  # .gitignore itself changed
    assert {s.path: s.reason for s in report.skipped}["src/util.js"] == "binary"
    paths = {r["path"] for r in mem.indexer.files("code")}
    assert "docs/guide.rst" not in paths and "src/util.js" not in paths
    assert mem.semantic.count("code") == sum(len(r["doc_ids"]) for r in mem.indexer.files("code"))


def test_symlinks_are_skipped(mem: Memory, tree: Path) -> None:
    (tree / "link.md").symlink_to(tree / "README.md")
    report = mem.index(tree, "code", max_file_bytes=LIMIT)
    assert {s.path: s.reason for s in report.skipped}["link.md"] == "symlink"


def test_dry_run_reports_the_same_figures_and_writes_nothing(mem: Memory, tree: Path) -> None:
    planned = mem.index(tree, "code", max_file_bytes=LIMIT, dry_run=True)
    assert planned.dry_run and "would index" in planned.summary()
    assert mem.semantic.count("code") == 0 and mem.indexer.files("code") == []
    done = mem.index(tree, "code", max_file_bytes=LIMIT)
    assert (planned.files_indexed, planned.documents, planned.chunks) == (
        done.files_indexed,
        done.documents,
        done.chunks,
    )


def test_capacity_is_checked_before_anything_is_written(tmp_path: Path, tree: Path) -> None:
    config = Config.from_dict({"semantic": {"collections": {"code": {"max_docs": 5}}}})
    with Memory(tmp_path / "data", clock=ManualClock(), config=config) as mem:
        with pytest.raises(CapacityError, match="nothing was indexed"):
            mem.index(tree, "code", max_file_bytes=LIMIT)
        assert mem.semantic.count("code") == 0
        assert mem.indexer.files("code") == []
        # A tree that fits is indexed; then growing past the cap is refused again.
        small = write_tree(tmp_path / "small", {"a.md": "# A\n\nalpha\n", "b.md": "# B\n\nbeta\n"})
        assert mem.index(small, "code").documents == 2
        (small / "c.md").write_text("# C\n\nc\n\n# D\n\nd\n\n# E\n\ne\n\n# F\n\nf\n")
        with pytest.raises(CapacityError):
            mem.index(small, "code")
        assert mem.semantic.count("code") == 2
        # Removing files makes room within the same run.
        (small / "a.md").unlink()
        (small / "b.md").unlink()
        assert mem.index(small, "code").documents == 4
        assert mem.semantic.count("code") == 4


def test_an_interrupted_run_is_completed_by_the_next(
    mem: Memory, tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def crash(*args: object, **kwargs: object) -> None:
        raise RuntimeError("simulated crash while embedding")

    with monkeypatch.context() as patch:
        patch.setattr(mem.semantic, "store", crash)
        with pytest.raises(RuntimeError):
            mem.index(tree, "code", max_file_bytes=LIMIT)
    rows = mem.indexer.files("code")
    assert rows and all(r["content_hash"] is None for r in rows)  # in flight
    (tree / "src" / "app.py").unlink()  # deleted before the next run
    report = mem.index(tree, "code", max_file_bytes=LIMIT)
    assert report.files_indexed == len(INDEXED) - 1 and report.files_removed == 1
    rows = mem.indexer.files("code")
    assert all(r["content_hash"] for r in rows)
    assert mem.semantic.count("code") == sum(len(r["doc_ids"]) for r in rows)
    assert mem.semantic.query("code", "greet", where={"path": "src/app.py"}) == []


def test_sources_are_separate_and_ids_stable(mem: Memory, tree: Path) -> None:
    first = mem.index(tree, "code", source="alpha", max_file_bytes=LIMIT)
    mem.index(tree, "code", source="beta", max_file_bytes=LIMIT)
    assert mem.semantic.count("code") == 2 * first.documents
    alpha = {r["path"]: r["doc_ids"] for r in mem.indexer.files("code", "alpha")}
    beta = {r["path"]: r["doc_ids"] for r in mem.indexer.files("code", "beta")}
    assert set(alpha) == set(beta)
    alpha_ids = {i for ids in alpha.values() for i in ids}
    assert not alpha_ids & {i for ids in beta.values() for i in ids}
    # The same tree in another collection is independent too.
    mem.index(tree, "knowledge", source="alpha", max_file_bytes=LIMIT)
    assert mem.semantic.count("knowledge") == first.documents
    assert mem.index(tree, "code", source="alpha", max_file_bytes=LIMIT).documents == 0


def test_owner_and_scope_apply_to_indexed_documents(mem: Memory, tree: Path) -> None:
    mem.index(tree, "code", agent_name="cto", scope="private", max_file_bytes=LIMIT)
    assert mem.semantic.query("code", "install", reader="ceo") == []
    assert mem.semantic.query("code", "install", reader="cto")


def test_the_data_directory_inside_the_tree_is_never_indexed(tmp_path: Path) -> None:
    tree = write_tree(tmp_path / "tree", {"a.md": "# A\n\nalpha\n"})
    with Memory(tree / "memory-data", clock=ManualClock()) as mem:
        mem.semantic.store("knowledge", ["something"])
        report = mem.index(tree, "code")
        assert [r["path"] for r in mem.indexer.files("code")] == ["a.md"]
        assert report.files_seen == 1


@needs_git
def test_git_repository_records_the_commit(
    mem: Memory, tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "gitconfig"
    config.write_text("[user]\n\tname = omoide tests\n\temail = tests@example.com\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "initial"]):
        subprocess.run(["git", "-C", str(tree), *args], check=True, capture_output=True)
    head = subprocess.run(
        ["git", "-C", str(tree), "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()
    report = mem.index(tree, "code", max_file_bytes=LIMIT)
    assert report.git and report.commit == head
    assert report.files_indexed == len(INDEXED)
    assert {d.metadata["commit"] for d in mem.semantic.documents("code", limit=1000)} == {head}
    assert {r["commit_id"] for r in mem.indexer.files("code")} == {head}


def test_progress_is_reported(mem: Memory, tree: Path) -> None:
    events: list[IndexProgress] = []
    report = mem.index(tree, "code", max_file_bytes=LIMIT, progress=events.append)
    scans = [e for e in events if e.phase == "scan"]
    indexes = [e for e in events if e.phase == "index"]
    assert [e.done for e in scans] == list(range(1, report.files_seen + 1))
    assert {e.total for e in scans} == {report.files_seen}
    assert indexes[-1].done == indexes[-1].total == report.files_indexed

    plain = io.StringIO()
    bar = ProgressBar(plain)
    for event in events:
        bar(event)
    assert plain.getvalue().splitlines() == [
        f"scan: {report.files_seen}/{report.files_seen} files",
        f"index: {report.files_indexed}/{report.files_indexed} files",
    ]

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    terminal = Terminal()
    bar = ProgressBar(terminal, width=10, clock=ManualClock())
    for event in events:
        bar(event)
    assert "\rscan  [##########]" in terminal.getvalue()
    assert terminal.getvalue().endswith("\n")


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"path": "missing"}, "path"),
        ({"source": ""}, "source"),
        ({"source": " padded "}, "source"),
        ({"include": "*.md"}, "include"),
        ({"exclude": "*.md"}, "exclude"),
        ({"max_file_bytes": 0}, "max_file_bytes"),
        ({"agent_name": "\n"}, "agent_name"),
        ({"progress": 42}, "progress"),
        ({"use_git": "yes"}, "use_git"),
        ({"dry_run": 1}, "dry_run"),
    ],
)
def test_bad_input_is_refused_and_changes_nothing(
    mem: Memory, tree: Path, kwargs: dict[str, Any], field: str
) -> None:
    args: dict[str, Any] = {"path": tree, **kwargs}
    if args["path"] == "missing":
        args["path"] = tree / "missing"
    path = args.pop("path")
    with pytest.raises(ValidationError) as info:
        mem.index(path, "code", **args)
    assert info.value.field == field
    assert mem.indexer.files("code") == [] and mem.semantic.count("code") == 0


def test_unknown_collection_is_refused(mem: Memory, tree: Path) -> None:
    with pytest.raises(UnknownCollectionError):
        mem.index(tree, "nope")
    with pytest.raises(ValidationError, match="not a directory"):
        mem.index(tree / "README.md", "code")


# -- this repository ---------------------------------------------------------------------------


def test_indexing_this_repository(mem: Memory) -> None:
    """The whole repository as a dry run; a sample of it for real, then again unchanged."""
    listing = list_files(REPO)
    whole = mem.index(REPO, "code", source="omoide", dry_run=True)
    assert whole.files_seen == len([p for p in listing.files if (REPO / p).exists()])
    assert whole.files_indexed == whole.files_seen - len(whole.skipped)
    assert whole.documents > whole.files_indexed and whole.chunks >= whole.documents
    assert mem.semantic.count("code") == 0

    sample = [
        "README.md",
        "pyproject.toml",
        "src/omoide/providers/chunking.py",
        "src/omoide/clock.py",
    ]
    report = mem.index(REPO, "code", source="omoide", include=sample)
    assert report.files_indexed == len(sample) and not report.skipped
    assert report.git == listing.git and report.commit == listing.commit
    for rel in sample:
        data = (REPO / rel).read_bytes()
        docs = docs_of(mem, rel)
        assert {d.metadata["content_hash"] for d in docs} == {hashlib.sha256(data).hexdigest()}
        if listing.commit:
            assert {d.metadata["commit"] for d in docs} == {listing.commit}
        if rel.endswith(".py"):
            tree = ast.parse(data.decode("utf-8"))
            defs = [
                n.name
                for n in tree.body
                if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            ]
            symbols = [d.metadata["symbol"] for d in docs if d.metadata["kind"] != "module"]
            # Long classes are indexed per method: their top-level name still comes first.
            assert [s for s in symbols if "." not in s] == defs
    hit = mem.semantic.query("code", "split text into chunks on sentence boundaries", n_results=3)
    assert "src/omoide/providers/chunking.py" in {h.metadata["path"] for h in hit}

    again = mem.index(REPO, "code", source="omoide", include=sample)
    assert (again.files_indexed, again.files_unchanged, again.documents) == (0, len(sample), 0)
