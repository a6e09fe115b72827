"""Build omoide's bundled Japanese-English word list from JMdict.

    python tools/build_lexicon.py PATH/TO/jamdict.db

The input is the SQLite edition of JMdict that the ``jamdict-data`` package ships (unpacked,
``jamdict.db``). The entries JMdict marks as common (any ``ke_pri``/``re_pri`` tag) are kept,
and loanwords (a katakana form of three characters or more, without a middle dot, in an
entry with no kanji form) whether common or not, each with the English glosses of its first
three senses: a word list for matching a question's words against a text in the other
language, not a dictionary. The output, ``src/omoide/text/lexicon-ja-en.tsv.gz``, has one
line per Japanese form::

    form<TAB>gloss; gloss; ...

JMdict is the property of the Electronic Dictionary Research and Development Group and is used
under its licence (Creative Commons Attribution-ShareAlike 4.0); so is the derived file.
"""

from __future__ import annotations

import gzip
import re
import sqlite3
import sys
from collections import defaultdict
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "src" / "omoide" / "text" / "lexicon-ja-en.tsv.gz"
_KATAKANA = re.compile(r"^[\u30a0-\u30ff]+$")
SENSES = 3


def build(db: Path) -> dict[str, list[str]]:
    con = sqlite3.connect(db)
    kanji: dict[int, set[str]] = defaultdict(set)
    for idseq, text in con.execute(
        "SELECT k.idseq, k.text FROM Kanji k JOIN KJP p ON p.kid = k.ID"
    ):
        kanji[idseq].add(text)
    kana: dict[int, set[str]] = defaultdict(set)
    for idseq, text in con.execute("SELECT k.idseq, k.text FROM Kana k JOIN KNP p ON p.kid = k.ID"):
        kana[idseq].add(text)
    senses: dict[int, list[int]] = defaultdict(list)
    for sid, idseq in con.execute("SELECT ID, idseq FROM Sense ORDER BY ID"):
        senses[idseq].append(sid)
    glosses: dict[int, list[str]] = defaultdict(list)
    for sid, text in con.execute("SELECT sid, text FROM SenseGloss WHERE lang = 'eng'"):
        glosses[sid].append(text.replace("\t", " ").replace(";", ","))

    def add(table: dict[str, list[str]], word: str, idseq: int) -> None:
        """The glosses of the entry's first senses, to those the word has."""
        known = table.setdefault(word, [])
        meanings = (g for sid in senses[idseq][:SENSES] for g in glosses[sid])
        known.extend(g for g in meanings if g not in known)

    forms: dict[str, list[str]] = {}
    for idseq in sorted(set(kanji) | set(kana)):
        words = set(kanji.get(idseq, ()))
        # A kana form only for loanwords, or words JMdict has no common kanji form for.
        words |= {k for k in kana.get(idseq, ()) if _KATAKANA.match(k) or idseq not in kanji}
        for word in sorted(words):
            add(forms, word, idseq)
    # Loanwords, common or not: written in katakana and with no kanji form, they are most of
    # the technical vocabulary a fleet writes in Japanese (デプロイ, ロールバック, チルド). A
    # form the common entries have keeps their glosses alone.
    loans: dict[str, list[str]] = {}
    for idseq, text in con.execute(
        "SELECT idseq, text FROM Kana WHERE idseq NOT IN (SELECT idseq FROM Kanji)"
    ):
        if text in forms or not _KATAKANA.match(text) or len(text) < 3 or "・" in text:
            continue
        add(loans, text, idseq)
    return forms | {word: meanings for word, meanings in loans.items() if meanings}


def main() -> int:
    forms = build(Path(sys.argv[1]))
    with gzip.open(OUT, "wt", encoding="utf-8", compresslevel=9) as out:
        for word in sorted(forms):
            out.write(f"{word}\t{'; '.join(forms[word])}\n")
    print(f"{len(forms)} forms -> {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
