"""Listing a tree like git: the gitignore walker agrees with git itself."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from omoide.errors import ValidationError
from omoide.ingest.filetree import IgnoreRules, list_files

REPO = Path(__file__).resolve().parents[1]

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

FILES = {
    ".gitignore": "# comment\n*.log\n!keep.log\nbuild/\n/root-only.txt\ndocs/**/draft-*.md\n"
    "\\#hash.txt\ntemp?/\nlogs/\n",
    "a.py": "print(1)\n",
    "debug.log": "ignored\n",
    "keep.log": "re-included by a negation\n",
    "root-only.txt": "anchored pattern: ignored here\n",
    "sub/root-only.txt": "anchored pattern: kept here\n",
    "build/out.txt": "ignored directory\n",
    "build-notes.md": "not the build/ directory\n",
    "sub/build/x.txt": "build/ matches at any depth\n",
    "sub/.gitignore": "!debug.log\n*.tmp\n",
    "sub/debug.log": "a deeper .gitignore re-includes it\n",
    "sub/a.tmp": "ignored by sub/.gitignore\n",
    "a.tmp": "sub/.gitignore does not apply here\n",
    "docs/final.md": "kept\n",
    "docs/x/y/draft-1.md": "ignored by **\n",
    "#hash.txt": "escaped # pattern\n",
    "temp1/f.txt": "temp?/ ignores this directory\n",
    "logs": "a file, and logs/ only ignores directories\n",
    "sub/nested/.gitignore": "/*.md\n",
    "sub/nested/a.md": "ignored by an anchored pattern in sub/nested\n",
    "sub/nested/deeper/b.md": "kept: the anchored pattern is relative to sub/nested\n",
    "日本語/メモ.txt": "non-ASCII paths\n",
}

EXPECTED = {
    ".gitignore",
    "a.py",
    "keep.log",
    "sub/root-only.txt",
    "build-notes.md",
    "sub/.gitignore",
    "sub/debug.log",
    "a.tmp",
    "docs/final.md",
    "logs",
    "sub/nested/.gitignore",
    "sub/nested/deeper/b.md",
    "日本語/メモ.txt",
}


def make_tree(root: Path) -> Path:
    for rel, text in FILES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


@pytest.fixture
def isolated_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Git without the machine's global or system configuration (e.g. excludes files)."""
    config = tmp_path / "gitconfig"
    config.write_text("[user]\n\tname = omoide tests\n\temail = tests@example.com\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(root), *args], check=True, capture_output=True, text=True
    ).stdout


def test_walker_applies_gitignore_rules(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "tree")
    listing = list_files(root, use_git=False)
    assert not listing.git and listing.commit is None
    assert set(listing.files) == EXPECTED
    assert list(listing.files) == sorted(listing.files)


@needs_git
@pytest.mark.usefixtures("isolated_git")
def test_walker_agrees_with_git(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "tree")
    git(root, "init", "-q")
    listed = git(root, "-c", "core.quotepath=off", "ls-files", "--others", "--exclude-standard")
    assert set(listed.splitlines()) == EXPECTED
    via_git = list_files(root)
    assert via_git.git
    assert set(via_git.files) == EXPECTED == set(list_files(root, use_git=False).files)


@needs_git
@pytest.mark.usefixtures("isolated_git")
def test_git_listing_records_the_commit_and_keeps_tracked_files(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "tree")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "add", "-f", "debug.log")  # tracked although ignored: git lists it
    git(root, "commit", "-q", "-m", "initial")
    (root / "a.py").unlink()  # deleted in the work tree, still in the index
    listing = list_files(root)
    assert listing.commit == git(root, "rev-parse", "HEAD").strip()
    assert "debug.log" in listing.files
    assert "a.py" in listing.files  # listed; the indexer finds it gone and treats it as deleted
    assert "debug.log" not in list_files(root, use_git=False).files


@needs_git
@pytest.mark.usefixtures("isolated_git")
def test_this_repository_lists_the_same_with_and_without_git() -> None:
    if subprocess.run(["git", "-C", str(REPO), "rev-parse"], capture_output=True).returncode:
        pytest.skip("not a git checkout")
    via_git = list_files(REPO)
    walked = list_files(REPO, use_git=False)
    tracked_ignored = set(
        git(REPO, "ls-files", "--cached", "--ignored", "--exclude-standard").splitlines()
    )
    assert via_git.git and via_git.commit
    assert set(via_git.files) - tracked_ignored == set(walked.files)
    assert "src/omoide/ingest/indexing.py" in walked.files
    assert not any(p.startswith((".venv/", ".git/")) or "__pycache__" in p for p in walked.files)


def test_include_exclude_and_skip(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "tree")
    only_md = list_files(root, include=["*.md"], use_git=False)
    assert set(only_md.files) == {"build-notes.md", "docs/final.md", "sub/nested/deeper/b.md"}
    no_sub = list_files(root, exclude=["sub/", "*.tmp"], use_git=False)
    assert not any(p.startswith("sub/") for p in no_sub.files)
    assert "a.tmp" not in no_sub.files and "a.py" in no_sub.files
    skipped = list_files(root, skip=[root / "sub"], use_git=False)
    assert not any(p.startswith("sub/") for p in skipped.files)


def test_use_git_true_outside_a_work_tree_is_refused(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "tree")
    if list_files(root).git:
        pytest.skip("the temporary directory is inside a git work tree")
    with pytest.raises(ValidationError) as info:
        list_files(root, use_git=True)
    assert info.value.field == "use_git"


def test_ignore_rules_deeper_file_overrides() -> None:
    rules = IgnoreRules()
    rules.add("", ["*.log", "cache/"])
    rules.add("a", ["!*.log"])
    assert rules.ignored("x.log")
    assert not rules.ignored("a/x.log")
    assert rules.ignored("a/b/cache/")
    assert not rules.ignored("a/readme.md")
