"""Listing the files of a source tree the way git sees it: ``.gitignore`` respected.

In a git work tree the list comes from git itself — ``git ls-files --cached --others
--exclude-standard``: tracked files plus untracked ones that no ``.gitignore``,
``.git/info/exclude`` or user excludes file ignores (a tracked file stays listed even if a
pattern matches it, as in git). Elsewhere the tree is walked and every ``.gitignore`` met on
the way is applied with git's rules (:class:`pathspec.GitIgnoreSpec`): patterns are relative
to the directory holding the file, a deeper file overrides a shallower one, the last
matching pattern of a file wins, and nothing below an ignored directory can be re-included.
``.git`` (a directory, or a file in linked worktrees and submodules) is never listed.

``include`` and ``exclude`` take patterns in the same gitignore syntax, relative to the
root: with ``include`` only matching files are listed; ``exclude`` drops matching ones.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pathspec

from omoide.errors import ValidationError

__all__ = ["FileListing", "IgnoreRules", "compile_patterns", "list_files"]

_GIT_TIMEOUT = 120.0


@dataclass(frozen=True)
class FileListing:
    """The files of a tree, as paths relative to ``root`` (POSIX separators, sorted)."""

    root: Path
    files: tuple[str, ...]
    #: True when git listed the files (the root is inside a git work tree).
    git: bool
    #: The commit HEAD pointed to, when git was used and the repository has one.
    commit: str | None


def compile_patterns(field: str, patterns: Iterable[str]) -> pathspec.GitIgnoreSpec | None:
    """Gitignore-style patterns as a matcher (None for no patterns); bad ones name ``field``."""
    lines = list(patterns)
    for i, line in enumerate(lines):
        if not isinstance(line, str):
            raise ValidationError(f"{field}[{i}]", f"expected a string, got {type(line).__name__}")
    if not lines:
        return None
    try:
        return pathspec.GitIgnoreSpec.from_lines(lines)
    except (ValueError, TypeError) as exc:
        raise ValidationError(field, f"not a valid gitignore pattern: {exc}") from None


class IgnoreRules:
    """The ``.gitignore`` files of a tree, applied with git's precedence."""

    def __init__(self) -> None:
        self._specs: dict[str, pathspec.GitIgnoreSpec] = {}

    def add(self, directory: str, lines: Iterable[str]) -> None:
        """Register the patterns of the ``.gitignore`` in ``directory`` ('' for the root)."""
        self._specs[directory] = pathspec.GitIgnoreSpec.from_lines(list(lines))

    def ignored(self, path: str) -> bool:
        """Whether ``path`` (relative; directories end with ``/``) is ignored."""
        parts = path.rstrip("/").split("/")
        for depth in range(len(parts) - 1, -1, -1):  # the deepest .gitignore decides first
            base = "/".join(parts[:depth])
            spec = self._specs.get(base)
            if spec is None:
                continue
            result = spec.check_file(path[len(base) + 1 :] if base else path)
            if result.include is not None:
                return bool(result.include)
        return False


def _git(root: Path, *args: str) -> bytes | None:
    """Output of a git command run in ``root``, or None if git is missing or fails."""
    executable = shutil.which("git")
    if executable is None:
        return None
    try:
        done = subprocess.run(
            [executable, "-C", str(root), *args],
            capture_output=True,
            check=False,
            timeout=_GIT_TIMEOUT,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def _in_git_work_tree(root: Path) -> bool:
    out = _git(root, "rev-parse", "--is-inside-work-tree")
    return out is not None and out.strip() == b"true"


def _git_files(root: Path) -> list[str] | None:
    out = _git(root, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    if out is None:
        return None
    return list(dict.fromkeys(os.fsdecode(p) for p in out.split(b"\0") if p))


def _walk_files(root: Path, skip: Sequence[Path]) -> list[str]:
    rules = IgnoreRules()
    skipped = {os.path.normcase(str(p)) for p in skip}
    files: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = Path(dirpath).relative_to(root).as_posix()
        rel_dir = "" if rel_dir == "." else rel_dir
        gitignore = Path(dirpath) / ".gitignore"
        if gitignore.is_file():
            with contextlib.suppress(OSError):
                text = gitignore.read_text(encoding="utf-8", errors="replace")
                rules.add(rel_dir, text.splitlines())
        kept = []
        for name in sorted(dirnames):
            rel = f"{rel_dir}/{name}" if rel_dir else name
            if name == ".git" or os.path.normcase(os.path.join(dirpath, name)) in skipped:
                continue
            if not rules.ignored(rel + "/"):
                kept.append(name)
        dirnames[:] = kept
        for name in filenames:
            rel = f"{rel_dir}/{name}" if rel_dir else name
            if name != ".git" and not rules.ignored(rel):  # .git is a file in worktrees
                files.append(rel)
    return files


def list_files(
    root: str | os.PathLike[str],
    *,
    include: Iterable[str] = (),
    exclude: Iterable[str] = (),
    use_git: bool | None = None,
    skip: Sequence[Path] = (),
) -> FileListing:
    """The files under ``root`` that git would consider, filtered by include/exclude.

    ``use_git`` None asks git when ``root`` is inside a work tree and walks otherwise; True
    requires git (ValidationError if the root is not in a work tree); False always walks.
    Directories in ``skip`` (absolute paths, such as the memory's own data directory) are
    left out.
    """
    base = Path(root).resolve()
    include_spec = compile_patterns("include", include)
    exclude_spec = compile_patterns("exclude", exclude)
    skip_abs = [Path(p).resolve() for p in skip]
    files: list[str] | None = None
    commit: str | None = None
    if use_git is not False and _in_git_work_tree(base):
        files = _git_files(base)
        head = _git(base, "rev-parse", "--verify", "-q", "HEAD")
        commit = head.decode().strip() if head else None
    elif use_git:
        raise ValidationError("use_git", f"{base} is not inside a git work tree")
    git = files is not None
    if files is None:
        files = _walk_files(base, skip_abs)
    kept = []
    for rel in files:
        if include_spec is not None and not include_spec.match_file(rel):
            continue
        if exclude_spec is not None and exclude_spec.match_file(rel):
            continue
        if skip_abs and any(_under(base / rel, s) for s in skip_abs):
            continue
        kept.append(rel)
    return FileListing(root=base, files=tuple(sorted(kept)), git=git, commit=commit)


def _under(path: Path, directory: Path) -> bool:
    return path == directory or directory in path.parents
