"""Identifiers: the tokens of a text that name one specific thing.

Any run of ASCII letters and digits with at least one digit, possibly joined by ``-`` ``.``
``,`` ``:`` or ``/`` — incident codes (``E-04512``), invoice numbers (``INV-003-ceo``),
versions (``2.3.1``), amounts (``1,200``), quarters (``Q3``). Distillation never merges
episodes naming different identifiers (:mod:`omoide.distill`), and recall looks for the
documents that hold an identifier a question names (:mod:`omoide.router`).
"""

from __future__ import annotations

import re

__all__ = ["identifier_tokens", "identifiers"]

_IDENTIFIER = re.compile(r"[A-Za-z0-9]+(?:[-.,:/][A-Za-z0-9]+)*")


def identifier_tokens(text: str) -> list[str]:
    """The identifiers in ``text`` as written, each once, in order of appearance."""
    found = (t for t in _IDENTIFIER.findall(text) if any(c.isdigit() for c in t))
    return list(dict.fromkeys(found))


def identifiers(text: str) -> frozenset[str]:
    """The identifiers ``text`` names, case-folded (for comparing two texts)."""
    return frozenset(token.casefold() for token in identifier_tokens(text))
