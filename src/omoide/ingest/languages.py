"""The language of a file, from its name or its ``#!`` line: what decides how it is split."""

from __future__ import annotations

from pathlib import PurePosixPath

__all__ = ["CODE_LANGUAGES", "LANGUAGES", "detect_language"]

#: File extension (lower case) -> language name recorded in metadata.
LANGUAGES: dict[str, str] = {
    ".md": "markdown",
    ".markdown": "markdown",
    ".mdx": "markdown",
    ".rst": "rst",
    ".rest": "rst",
    ".py": "python",
    ".pyi": "python",
    ".txt": "text",
    ".text": "text",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".tsx": "typescript",
    ".mts": "typescript",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".kt": "kotlin",
    ".kts": "kotlin",
    ".scala": "scala",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".hpp": "cpp",
    ".hh": "cpp",
    ".cs": "csharp",
    ".rb": "ruby",
    ".php": "php",
    ".swift": "swift",
    ".sh": "shell",
    ".bash": "shell",
    ".zsh": "shell",
    ".lua": "lua",
    ".pl": "perl",
    ".pm": "perl",
    ".r": "r",
    ".ex": "elixir",
    ".exs": "elixir",
    ".hs": "haskell",
    ".ml": "ocaml",
    ".dart": "dart",
    ".sql": "sql",
    ".css": "css",
    ".scss": "css",
    ".vue": "vue",
    ".svelte": "svelte",
    ".html": "html",
    ".htm": "html",
    ".xml": "xml",
    ".json": "json",
    ".jsonl": "json",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".toml": "toml",
    ".ini": "ini",
    ".cfg": "ini",
    ".csv": "csv",
    ".tsv": "csv",
}

_FILENAMES = {
    "makefile": "make",
    "gnumakefile": "make",
    "dockerfile": "dockerfile",
    "containerfile": "dockerfile",
    "rakefile": "ruby",
    "gemfile": "ruby",
}

_SHEBANGS = (
    ("python", "python"),
    ("node", "javascript"),
    ("bash", "shell"),
    ("zsh", "shell"),
    ("/sh", "shell"),
    ("ruby", "ruby"),
    ("perl", "perl"),
)

#: Languages split by the block fallback (Python falls back to it when it does not parse).
CODE_LANGUAGES = frozenset(
    {
        "javascript",
        "typescript",
        "go",
        "rust",
        "java",
        "kotlin",
        "scala",
        "c",
        "cpp",
        "csharp",
        "ruby",
        "php",
        "swift",
        "shell",
        "lua",
        "perl",
        "r",
        "elixir",
        "haskell",
        "ocaml",
        "dart",
        "sql",
        "css",
        "vue",
        "svelte",
        "make",
        "dockerfile",
    }
)


def detect_language(path: str, head: str = "") -> str:
    """The language of a file from its name (and a ``#!`` line in ``head``); else ``text``."""
    name = PurePosixPath(path).name
    language = LANGUAGES.get(PurePosixPath(name).suffix.lower())
    if language:
        return language
    language = _FILENAMES.get(name.lower())
    if language:
        return language
    if head.startswith("#!"):
        first = head.split("\n", 1)[0]
        for needle, lang in _SHEBANGS:
            if needle in first:
                return lang
    return "text"
