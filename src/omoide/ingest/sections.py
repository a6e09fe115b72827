"""Splitting files into sections: the documents an indexed file becomes.

An indexed file is stored as one semantic document per *section*, a run of whole lines that
reads well on its own; the semantic store then chunks a long section to the embedder's
window on sentence boundaries (:mod:`omoide.providers.chunking`, which knows Japanese 。！？ as well
as
Western punctuation). How a file is cut depends on its language:

* **Markdown** — at ATX (``## Title``) and setext (``Title`` over ``===``/``---``) headings,
  never inside fenced code blocks or YAML front matter. A heading with nothing under it
  joins the section that follows, so ``# Guide`` directly over ``## Install`` is one section
  titled ``Guide > Install``. Text before the first heading is the *preamble*.
* **reStructuredText** — at section titles (a title line underlined, optionally overlined,
  with a repeated punctuation character at least as wide as the title); levels follow the
  order in which underline styles first appear, as docutils does.
* **Python** — parsed with :mod:`ast`: every top-level ``def``, ``async def`` and ``class``
  (with its decorators and the comment lines directly above it) is a section; the code
  between them (imports, constants, ``if __name__ == ...``) forms *module* sections. A class
  longer than ``max_chars`` is cut further at its methods (``Class.method``). A file that does
  not parse falls back to the rule for other languages.
* **Other programming languages** (the fallback) — a new block starts at a line in column 0
  that follows a blank line and is not a closer (``}``, ``)``, ``end``, ``fi``, ...); comment
  lines directly above a definition stay with it. A block whose first lines match a
  definition pattern (``function``/``class``/``interface`` in JS/TS, ``func`` in Go, ``fn`` /
  ``struct`` / ``impl`` in Rust, ``class``/``interface`` in Java/C#/Kotlin, ``def`` in Ruby,
  C-style ``type name(...)``, shell functions, SQL ``CREATE ...``) is a section named after
  the symbol; consecutive blocks without a symbol are merged into one section.
* **Everything else** (plain text — Japanese prose included —, JSON, YAML, TOML, HTML, ...)
  — the whole file is one section; the store chunks it on sentences with overlap.

Sections are contiguous and in order: together they hold every non-blank line of the file
exactly once (runs of blank lines between sections are dropped). Each has a ``key`` unique
within its file and stable while the content is unchanged (a repeated heading or symbol gets
a ``~2``, ``~3`` suffix), from which the indexer derives document ids.
"""

from __future__ import annotations

import ast
import dataclasses
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from omoide.ingest.languages import CODE_LANGUAGES, LANGUAGES, detect_language

__all__ = [
    "CODE_LANGUAGES",
    "LANGUAGES",
    "Section",
    "detect_language",
    "split_code",
    "split_file",
    "split_markdown",
    "split_python",
    "split_rst",
]

#: Longest heading or symbol title kept in metadata.
MAX_TITLE_CHARS = 300


@dataclass(frozen=True)
class Section:
    """A run of whole lines of a file, stored as one document."""

    #: Unique within the file; stable while the file's content is unchanged.
    key: str
    #: ``preamble``/``heading`` (documents), ``module``/``function``/``class``/``method``
    #: (Python), ``block``/``definition`` (other code) or ``file`` (whole file).
    kind: str
    #: Heading path (``Guide > Install``) or symbol (``SemanticStore.store``); may be empty.
    title: str
    text: str
    #: First and last line, 1-based and inclusive.
    line_start: int
    line_end: int


def split_file(text: str, language: str, *, max_chars: int = 2_000) -> list[Section]:
    """Sections of ``text`` written in ``language`` (see the module docstring for the rules)."""
    if language == "markdown":
        sections = split_markdown(text)
    elif language == "rst":
        sections = split_rst(text)
    elif language == "python":
        sections = split_python(text, max_chars=max_chars)
    elif language in CODE_LANGUAGES:
        sections = split_code(text)
    else:
        sections = _whole(text)
    return sections


# -- shared helpers ---------------------------------------------------------------------------

_LINE = re.compile(r"[^\n]*\n|[^\n]+$")


def _lines(text: str) -> list[str]:
    """Lines with their line ends (``"".join`` restores the text); only ``\\n`` ends a line."""
    return _LINE.findall(text)


def _section(
    lines: Sequence[str], start: int, end: int, key: str, kind: str, title: str
) -> Section | None:
    """Lines ``[start, end)`` as a section; None if they hold nothing but whitespace."""
    text = "".join(lines[start:end])
    if not text.strip():
        return None
    return Section(key, kind, title[:MAX_TITLE_CHARS], text, start + 1, end)


def _keep(sections: Sequence[Section | None]) -> list[Section]:
    return [s for s in sections if s is not None]


def _whole(text: str) -> list[Section]:
    lines = _lines(text)
    section = _section(lines, 0, len(lines), "file", "file", "")
    return [] if section is None else [section]


def _unique_keys(sections: list[Section]) -> list[Section]:
    """Suffix repeated keys (``~2``, ``~3`` ...) so every key is unique within the file."""
    seen: dict[str, int] = {}
    out = []
    for s in sections:
        n = seen.get(s.key, 0) + 1
        seen[s.key] = n
        out.append(s if n == 1 else dataclasses.replace(s, key=f"{s.key}~{n}"))
    return out


def _width(text: str) -> int:
    """Display width: East Asian wide characters count two columns (as docutils counts)."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


# -- headings: Markdown and reStructuredText ----------------------------------------------------

# (line where the section starts, line where the heading's body starts, level, title)
_Boundary = tuple[int, int, int, str]


def _heading_sections(lines: Sequence[str], boundaries: Sequence[_Boundary]) -> list[Section]:
    """Cut ``lines`` at heading boundaries; a heading with an empty body joins the next one."""
    sections: list[Section] = []
    if not boundaries:
        return _keep([_section(lines, 0, len(lines), "preamble", "preamble", "")])
    first = boundaries[0][0]
    if first > 0:
        sections.extend(_keep([_section(lines, 0, first, "preamble", "preamble", "")]))
    stack: list[tuple[int, str]] = []
    carry: int | None = None  # start of a heading-only section waiting to join the next
    for i, (start, body_start, level, title) in enumerate(boundaries):
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, title))
        end = boundaries[i + 1][0] if i + 1 < len(boundaries) else len(lines)
        begin = start if carry is None else carry
        if not "".join(lines[body_start:end]).strip() and i + 1 < len(boundaries):
            carry = begin
            continue
        carry = None
        path = " > ".join(t for _, t in stack if t)
        section = _section(lines, begin, end, "h:" + path, "heading", path)
        if section is not None:
            sections.append(section)
    return sections


_UNDERLINE = re.compile(r"^([!-/:-@\[-`{-~])\1*[ \t]*\r?\n?$")


def _is_underline(line: str) -> bool:
    return bool(_UNDERLINE.match(line)) and len(line.strip()) >= 2


_ATX = re.compile(r"^ {0,3}(#{1,6})(?=[ \t]|\r?\n|$)(.*)$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*\r?\n?$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_LIST_OR_QUOTE = re.compile(r"^\s*(?:[-*+>]|\d+[.)])(?:\s|$)")


def split_markdown(text: str) -> list[Section]:
    """Sections of a Markdown document, cut at its headings."""
    lines = _lines(text)
    boundaries: list[_Boundary] = []
    i = 0
    if lines and lines[0].rstrip() == "---":  # YAML front matter belongs to the preamble
        for j in range(1, len(lines)):
            if lines[j].rstrip() in ("---", "..."):
                i = j + 1
                break
    fence: str | None = None
    paragraph_start: int | None = None
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        fence_match = _FENCE.match(line)
        if fence is not None:
            if fence_match and _closes(fence, fence_match, line):
                fence = None
            i += 1
            continue
        if fence_match:
            fence = fence_match.group(1)
            paragraph_start = None
        elif not stripped:
            paragraph_start = None
        elif atx := _ATX.match(line.rstrip("\r\n")):
            title = re.sub(r"(?:^|[ \t]+)#+[ \t]*$", "", atx.group(2)).strip()
            boundaries.append((i, i + 1, len(atx.group(1)), title))
            paragraph_start = None
        elif setext := _SETEXT.match(line):  # an underline, or a thematic break
            if paragraph_start is not None:
                title = " ".join(x.strip() for x in lines[paragraph_start:i])
                level = 1 if setext.group(1)[0] == "=" else 2
                boundaries.append((paragraph_start, i + 1, level, title))
            paragraph_start = None
        elif paragraph_start is None and _starts_paragraph(line):
            paragraph_start = i
        i += 1
    return _unique_keys(_heading_sections(lines, boundaries))


def _closes(fence: str, match: re.Match[str], line: str) -> bool:
    """True when ``line`` (a fence) closes the code block opened by ``fence``."""
    marker = match.group(1)
    return marker[0] == fence[0] and len(marker) >= len(fence) and not line[match.end() :].strip()


def _starts_paragraph(line: str) -> bool:
    """A line that can open a paragraph (so a setext underline below makes it a heading)."""
    indent = len(line) - len(line.lstrip(" "))
    return indent < 4 and not line.startswith("\t") and not _LIST_OR_QUOTE.match(line)


def split_rst(text: str) -> list[Section]:
    """Sections of a reStructuredText document, cut at its section titles."""
    lines = _lines(text)
    styles: list[tuple[str, bool]] = []
    boundaries: list[_Boundary] = []

    def add(start: int, body: int, char: str, over: bool, title: str) -> None:
        if (char, over) not in styles:
            styles.append((char, over))
        boundaries.append((start, body, styles.index((char, over)) + 1, title.strip()))

    i = 0
    while i + 1 < len(lines):
        line, nxt = lines[i], lines[i + 1]
        if (  # overline, title (may be inset), underline of the same characters
            i + 2 < len(lines)
            and _is_underline(line)
            and nxt.strip()
            and not _is_underline(nxt)
            and lines[i + 2].strip() == line.strip()
            and len(line.strip()) >= _width(nxt.strip())
        ):
            add(i, i + 3, line.strip()[0], True, nxt)
            i += 3
        elif (  # title at the margin, underline at least as wide
            line.strip()
            and not line[0].isspace()
            and not _is_underline(line)
            and _is_underline(nxt)
            and len(nxt.strip()) >= _width(line.strip())
        ):
            add(i, i + 2, nxt.strip()[0], False, line)
            i += 2
        else:
            i += 1
    return _unique_keys(_heading_sections(lines, boundaries))


# -- Python -------------------------------------------------------------------------------------

_Def = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


def split_python(text: str, *, max_chars: int = 2_000) -> list[Section]:
    """Sections of a Python module: its top-level definitions and the code between them."""
    lines = _lines(text)
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return split_code(text)
    sections: list[Section | None] = []
    cursor = 0
    for node in tree.body:
        if not isinstance(node, _Def):
            continue
        end = node.end_lineno or node.lineno
        if end > len(lines):  # line ends ast counts differently (lone \r): be safe
            return split_code(text)
        start = _def_start(node, lines, cursor)
        if start > cursor:
            sections.append(_section(lines, cursor, start, "module", "module", ""))
        span = sum(len(x) for x in lines[start:end])
        if isinstance(node, ast.ClassDef) and span > max_chars:
            sections.extend(_split_class(node, lines, start, end))
        else:
            kind = "class" if isinstance(node, ast.ClassDef) else "function"
            prefix = "class:" if kind == "class" else "def:"
            sections.append(_section(lines, start, end, prefix + node.name, kind, node.name))
        cursor = end
    if cursor < len(lines):
        sections.append(_section(lines, cursor, len(lines), "module", "module", ""))
    return _unique_keys(_keep(sections))


def _def_start(node: _Def, lines: Sequence[str], floor: int) -> int:
    """0-based first line of a definition: its decorators and the comments right above."""
    start = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1
    while start - 1 >= floor and lines[start - 1].lstrip().startswith("#"):
        start -= 1
    return start


def _split_class(
    node: ast.ClassDef, lines: Sequence[str], start: int, end: int
) -> list[Section | None]:
    """A long class: its header (docstring, attributes), then one section per method."""
    methods = [n for n in node.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    if not methods:
        return [_section(lines, start, end, f"class:{node.name}", "class", node.name)]
    cuts: list[int] = []
    floor = start
    for method in methods:
        cut = _def_start(method, lines, floor)
        cuts.append(cut)
        floor = method.end_lineno or method.lineno
    pieces = [_section(lines, start, cuts[0], f"class:{node.name}", "class", node.name)]
    for i, method in enumerate(methods):
        stop = cuts[i + 1] if i + 1 < len(cuts) else end
        name = f"{node.name}.{method.name}"
        pieces.append(_section(lines, cuts[i], stop, f"class:{name}", "method", name))
    return pieces


# -- the fallback for other programming languages --------------------------------------------

_CLOSER = re.compile(r"^(?:[}\])]|end\b|fi\b|done\b|esac\b|</|\*/)")
_IDENT = r"[A-Za-z_$][\w$]*"
_DEFINITIONS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p)
    for p in (
        # JavaScript / TypeScript
        rf"^(?:export\s+)?(?:default\s+)?(?:declare\s+)?(?:async\s+)?function\*?\s+({_IDENT})",
        rf"^(?:export\s+)?(?:default\s+)?(?:declare\s+)?(?:abstract\s+)?class\s+({_IDENT})",
        rf"^(?:export\s+)?(?:declare\s+)?(?:interface|type|enum|namespace)\s+({_IDENT})",
        rf"^(?:export\s+)?(?:const|let|var)\s+({_IDENT})\s*(?::[^=]+)?=\s*(?:async\s*)?"
        r"(?:function\b|\([^)]*\)\s*(?::[^=]+)?=>|[A-Za-z_$][\w$]*\s*=>)",
        # Go
        r"^func\s+(?:\([^)]*\)\s*)?([A-Za-z_]\w*)",
        r"^type\s+([A-Za-z_]\w*)\s+(?:struct|interface|func|\w)",
        # Rust
        r"^(?:pub(?:\([^)]*\))?\s+)?(?:const\s+)?(?:async\s+)?(?:unsafe\s+)?(?:extern\s+\S+\s+)?"
        r"(?:fn|struct|enum|trait|mod|union|macro_rules!)\s+([A-Za-z_]\w*)",
        r"^(?:unsafe\s+)?impl(?:<[^>]*>)?\s+(?:[\w:<>, &']+\s+for\s+)?([A-Za-z_][\w:]*)",
        # Java, C#, Kotlin, Scala, Swift, PHP
        r"^(?:(?:public|private|protected|internal|static|final|abstract|sealed|open|data|"
        r"partial|inline|value|case|fileprivate)\s+)*"
        r"(?:class|interface|enum|record|struct|object|trait|protocol|extension)\s+([A-Za-z_]\w*)",
        r"^(?:(?:public|private|protected|internal|static|final|abstract|override|suspend|"
        r"inline|open)\s+)*(?:fun|func|function)\s+(?:<[^>]*>\s*)?([A-Za-z_][\w.]*)",
        # Ruby, Elixir, Lua, Perl, shell
        r"^(?:def|defp|defmodule|defmacro|module|class|sub)\s+([A-Za-z_][\w.:!?]*)",
        r"^(?:local\s+)?function\s+([A-Za-z_][\w.:]*)",
        r"^(?:function\s+)?([A-Za-z_][\w-]*)\s*\(\)\s*\{?",
        # SQL
        r"(?i)^create\s+(?:or\s+replace\s+)?(?:temp(?:orary)?\s+)?(?:virtual\s+)?(?:unique\s+)?"
        r"(?:table|view|index|function|procedure|trigger|type)\s+(?:if\s+not\s+exists\s+)?"
        r"([\w.\"`]+)",
        # C, C++: a return type, then name(...) with no ';' (a definition, not a declaration)
        r"^(?!(?:if|for|while|switch|return|else|do|case|catch)\b)"
        r"[A-Za-z_][\w\s\*&:<>,]*?[\s\*&]+([A-Za-z_~][\w:~]*)\s*\([^;]*$",
    )
)
_COMMENT = re.compile(r"^\s*(?://|/\*|\*|#(?![!\[])|--|;|%|<!--|@)")


def _symbol(block: Sequence[str]) -> str:
    """The name a block defines, from its first code lines; empty if none is recognised."""
    seen = 0
    for line in block:
        if not line.strip() or _COMMENT.match(line):
            continue
        for pattern in _DEFINITIONS:
            match = pattern.match(line)
            if match:
                return match.group(1).strip('"`')
        seen += 1
        if seen >= 3:  # attributes/annotations may precede the definition line
            break
    return ""


def split_code(text: str) -> list[Section]:
    """Sections of source code in a language without a parser here (see module docstring)."""
    lines = _lines(text)
    starts = [0]
    for i in range(1, len(lines)):
        line = lines[i]
        if line[:1].isspace() or not line.strip() or _CLOSER.match(line):
            continue
        if not lines[i - 1].strip():
            starts.append(i)
    bounds = list(zip(starts, [*starts[1:], len(lines)], strict=True))
    sections: list[Section | None] = []
    pending: int | None = None  # start of a run of blocks without a symbol
    for begin, end in bounds:
        name = _symbol(lines[begin:end])
        if not name:
            if pending is None:
                pending = begin
            continue
        if pending is not None:
            sections.append(_section(lines, pending, begin, "block", "block", ""))
            pending = None
        sections.append(_section(lines, begin, end, f"sym:{name}", "definition", name))
    if pending is not None:
        sections.append(_section(lines, pending, len(lines), "block", "block", ""))
    return _unique_keys(_keep(sections))
