"""Splitting files into sections: headings, definitions, fallbacks, and the coverage rule."""

from __future__ import annotations

import ast
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from omoide.ingest.sections import (
    CODE_LANGUAGES,
    Section,
    detect_language,
    split_code,
    split_file,
    split_markdown,
    split_python,
    split_rst,
)

REPO = Path(__file__).resolve().parents[1]


def titles(sections: list[Section]) -> list[str]:
    return [s.title for s in sections]


def assert_covers(text: str, sections: list[Section]) -> None:
    """Sections are in order, disjoint, exact line slices, and hold every non-blank line."""
    lines = text.splitlines(keepends=True) if "\r" not in text else None
    all_lines = [*(lines or _lf_lines(text))]
    covered = [False] * len(all_lines)
    previous_end = 0
    for s in sections:
        assert s.line_start > previous_end, (s, previous_end)
        assert s.line_end >= s.line_start
        assert s.text == "".join(all_lines[s.line_start - 1 : s.line_end])
        assert s.text.strip()
        for i in range(s.line_start - 1, s.line_end):
            covered[i] = True
        previous_end = s.line_end
    for i, line in enumerate(all_lines):
        if line.strip():
            assert covered[i], f"line {i + 1} {line!r} is in no section"
    keys = [s.key for s in sections]
    assert len(keys) == len(set(keys))


def _lf_lines(text: str) -> list[str]:
    out = text.split("\n")
    lines = [x + "\n" for x in out[:-1]]
    if out[-1]:
        lines.append(out[-1])
    return lines


# -- Markdown --------------------------------------------------------------------------------

MARKDOWN = """\
---
title: front matter
# not a heading
---
Intro before any heading.

# Guide

## Install

Run `pip install omoide`.

```sh
# a comment in a fence, not a heading
```

Setext heading
--------------

本文です。文が二つあります。

## Install

The same heading again.

    # indented code, not a heading

## Closing ##
Done. C# is a language.
"""


def test_markdown_splits_on_headings_and_keeps_paths() -> None:
    sections = split_file(MARKDOWN, "markdown")
    assert titles(sections) == [
        "",
        "Guide > Install",
        "Guide > Setext heading",
        "Guide > Install",
        "Guide > Closing",
    ]
    assert [s.kind for s in sections] == ["preamble", "heading", "heading", "heading", "heading"]
    # A repeated heading gets a distinct key; the empty "# Guide" joined "## Install".
    assert [s.key for s in sections][1:4] == [
        "h:Guide > Install",
        "h:Guide > Setext heading",
        "h:Guide > Install~2",
    ]
    assert sections[1].text.startswith("# Guide\n\n## Install")
    assert "# a comment in a fence" in sections[1].text
    assert "# not a heading" in sections[0].text
    assert "indented code" in sections[3].text
    assert sections[4].text.endswith("C# is a language.\n")
    assert_covers(MARKDOWN, sections)


def test_markdown_without_headings_is_one_preamble() -> None:
    text = "Just a paragraph.\n\nAnd another one.\n"
    sections = split_markdown(text)
    assert [(s.key, s.kind) for s in sections] == [("preamble", "preamble")]
    assert sections[0].text == text


def test_markdown_thematic_break_is_not_a_heading() -> None:
    text = "# Title\n\nText.\n\n---\n\nMore text.\n"
    assert titles(split_markdown(text)) == ["Title"]


def test_markdown_last_heading_without_body_is_kept() -> None:
    sections = split_markdown("# A\n\nbody\n\n## B\n")
    assert titles(sections) == ["A", "A > B"]


# -- reStructuredText ------------------------------------------------------------------------

RST = """\
=======
 Title
=======

Intro paragraph.

Install
-------

Text::

    ======
    code, not a title
    ======

日本語の見出し
==============

本文。

Back to level two
-----------------

End.

----

After a transition.
"""


def test_rst_levels_follow_first_appearance_of_styles() -> None:
    sections = split_rst(RST)
    assert titles(sections) == [
        "Title",
        "Title > Install",
        "Title > Install > 日本語の見出し",
        "Title > Back to level two",
    ]
    assert "code, not a title" in sections[1].text
    assert sections[0].text.startswith("=======\n Title\n=======")
    assert sections[-1].text.rstrip().endswith("After a transition.")
    assert_covers(RST, sections)


def test_rst_underline_shorter_than_a_wide_title_is_not_a_title() -> None:
    # 日本語 is six columns wide; an underline of four does not make it a title.
    assert titles(split_rst("日本語\n====\n\ntext\n")) == [""]


# -- Python ----------------------------------------------------------------------------------

PYTHON = '''\
"""Module docstring."""

import os

CONSTANT = 1


# A comment that belongs to the function below.
@decorator
def first(x):
    return x


async def second():
    pass


class Small:
    """Fits one section."""

    def method(self):
        return 1


if __name__ == "__main__":
    first(CONSTANT)
'''


def test_python_splits_on_top_level_definitions() -> None:
    sections = split_python(PYTHON)
    assert [(s.key, s.kind, s.title) for s in sections] == [
        ("module", "module", ""),
        ("def:first", "function", "first"),
        ("def:second", "function", "second"),
        ("class:Small", "class", "Small"),
        ("module~2", "module", ""),
    ]
    assert sections[1].text.startswith("# A comment that belongs")
    assert "@decorator" in sections[1].text
    assert "import os" in sections[0].text and "CONSTANT = 1" in sections[0].text
    assert_covers(PYTHON, split_file(PYTHON, "python"))


def test_python_long_class_is_split_at_methods() -> None:
    body = "".join(
        f"    def method_{i}(self):\n        return {i}  # {'x' * 60}\n\n" for i in range(40)
    )
    text = f'class Big:\n    """Docs."""\n\n    attribute = 1\n\n{body}'
    sections = split_python(text, max_chars=500)
    assert sections[0].title == "Big" and sections[0].kind == "class"
    assert "attribute = 1" in sections[0].text
    assert [s.title for s in sections[1:]] == [f"Big.method_{i}" for i in range(40)]
    assert all(s.kind == "method" for s in sections[1:])
    assert_covers(text, sections)
    # Under the threshold the class stays whole.
    assert [s.title for s in split_python(text, max_chars=10**6)] == ["Big"]


def test_python_that_does_not_parse_falls_back_to_blocks() -> None:
    text = "def broken(:\n    pass\n\ndef fine():\n    pass\n"
    sections = split_python(text)
    assert sections == split_code(text)
    assert "fine" in titles(sections)


def test_python_symbols_of_this_repository_match_ast() -> None:
    """Every module of the package: sections name exactly its top-level definitions."""
    for path in sorted((REPO / "src" / "omoide").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text)
        expected = [
            n.name
            for n in tree.body
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        ]
        sections = split_python(text, max_chars=10**9)
        assert [s.title for s in sections if s.kind != "module"] == expected, path.name
        assert_covers(text, sections)


# -- other languages -------------------------------------------------------------------------

JAVASCRIPT = """\
import x from 'y';
import z from 'w';

// Adds two numbers.
export function add(a, b) {
  return a + b;

}

const limit = 10;

export default class Store {
  get(key) {}
}

export const handler = async (event) => {
  return event;
};

interface Shape {
  area(): number;
}
"""


def test_code_fallback_names_definitions_and_merges_the_rest() -> None:
    sections = split_code(JAVASCRIPT)
    assert [(s.kind, s.title) for s in sections] == [
        ("block", ""),
        ("definition", "add"),
        ("block", ""),
        ("definition", "Store"),
        ("definition", "handler"),
        ("definition", "Shape"),
    ]
    assert sections[1].text.startswith("// Adds two numbers.")
    # A blank line inside a body does not cut it: the closer stays with its block.
    assert sections[1].text.rstrip().endswith("}")
    assert_covers(JAVASCRIPT, sections)


def test_code_fallback_recognises_common_languages() -> None:
    cases = {
        "go": ("package main\n\nfunc (s *Server) Serve() error {\n}\n", "Serve"),
        "rust": ("use std::io;\n\npub fn parse(x: &str) -> u32 {\n}\n", "parse"),
        "c": ("#include <stdio.h>\n\nstatic int *make_table(int n)\n{\n}\n", "make_table"),
        "shell": ("#!/bin/sh\n\ndeploy() {\n  echo hi\n}\n", "deploy"),
        "sql": ("-- schema\n\nCREATE TABLE IF NOT EXISTS users (\n  id int\n);\n", "users"),
        "java": ("package a;\n\npublic final class Account {\n}\n", "Account"),
        "ruby": ("require 'x'\n\ndef greet(name)\nend\n", "greet"),
    }
    for language, (text, symbol) in cases.items():
        assert language in CODE_LANGUAGES
        sections = split_file(text, language)
        assert symbol in titles(sections), (language, sections)
        assert_covers(text, sections)


def test_prose_and_data_are_one_section() -> None:
    text = "一行目です。\n\n二行目です。\n"
    for language in ("text", "json", "yaml", "toml", "html"):
        sections = split_file(text, language)
        assert [(s.key, s.kind) for s in sections] == [("file", "file")]
        assert sections[0].text == text
    assert split_file("  \n\n", "text") == []


def test_detect_language() -> None:
    assert detect_language("docs/README.md") == "markdown"
    assert detect_language("a/b/index.RST") == "rst"
    assert detect_language("src/x.pyi") == "python"
    assert detect_language("web/app.tsx") == "typescript"
    assert detect_language("Makefile") == "make"
    assert detect_language("bin/tool", "#!/usr/bin/env python3\nprint(1)") == "python"
    assert detect_language("bin/run", "#!/bin/sh\n") == "shell"
    assert detect_language("LICENSE") == "text"
    assert detect_language("notes.ja.txt") == "text"


# -- properties ------------------------------------------------------------------------------

_LINE_PARTS = st.sampled_from(
    [
        "# Title",
        "## Sub",
        "Title",
        "=====",
        "-----",
        "```",
        "~~~",
        "    indented",
        "def f():",
        "    return 1",
        "class C:",
        "@dec",
        "}",
        "function g() {",
        "日本語の文です。",
        "text.",
        "",
        "   ",
        "---",
        "#",
    ]
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(_LINE_PARTS, max_size=40),
    st.sampled_from(["markdown", "rst", "python", "javascript", "text"]),
    st.booleans(),
)
def test_sections_always_cover_the_file(parts: list[str], language: str, newline: bool) -> None:
    text = "\n".join(parts) + ("\n" if newline else "")
    assert_covers(text, split_file(text, language, max_chars=40))
