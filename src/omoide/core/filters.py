"""ChromaDB ``where`` filters: the checks on a caller's filter, and the reserved reader flags.

Every chunk carries reader flags in its metadata (``_agent``, ``_scope``, ``_global``,
``_r:agent:NAME`` / ``_r:team:NAME``); :func:`reader_where` selects what one agent may read.
A caller's filter may use the documented operators only and never a key starting with ``_``
(:func:`check_where`), so that no filter can widen a scope. A filter is also bounded in size
(:data:`MAX_FILTER_TERMS`, :data:`MAX_FILTER_DEPTH`, :data:`MAX_IN_VALUES`,
:data:`MAX_FILTER_VALUES`, :data:`MAX_OPERAND_CHARS`): ChromaDB answers a wide filter with an
internal error ("Expression tree is too large", "too many SQL variables") and a wider one
crashes its Rust bindings, so a filter past these limits is refused before it reaches ChromaDB.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from omoide.core.scope import GLOBAL, PRIVATE
from omoide.errors import ValidationError

__all__ = [
    "DOC_OPERATORS",
    "FIELD_OPERATORS",
    "MAX_FILTER_DEPTH",
    "MAX_FILTER_TERMS",
    "MAX_FILTER_VALUES",
    "MAX_IN_VALUES",
    "MAX_OPERAND_CHARS",
    "WHERE_OPERATORS",
    "check_operand",
    "check_where",
    "may_read",
    "public_metadata",
    "reader_flags",
    "reader_where",
]

WHERE_OPERATORS = {"$and", "$or"}
FIELD_OPERATORS = {
    "$eq",
    "$ne",
    "$gt",
    "$gte",
    "$lt",
    "$lte",
    "$in",
    "$nin",
    "$contains",
    "$not_contains",
}
DOC_OPERATORS = {"$contains", "$not_contains", "$regex", "$not_regex", "$and", "$or"}
LIST_OPERATORS = {"$in", "$nin"}

#: Conditions in one filter, counting every key of every mapping (``{"a": 1}`` is one term,
#: ``{"$or": [{"a": 1}, {"b": 2}]}`` three): ChromaDB fails at about 1,000.
MAX_FILTER_TERMS = 100
#: Nesting of ``$and`` / ``$or``.
MAX_FILTER_DEPTH = 8
#: Values of one ``$in`` / ``$nin`` list.
MAX_IN_VALUES = 100
#: Operand values in one filter, all lists together (each is an SQL variable in ChromaDB).
MAX_FILTER_VALUES = 1_000
#: Characters of one string operand (a metadata value, a text to contain, a regex).
MAX_OPERAND_CHARS = 1_000


def reader_flags(owner: str, scope: str) -> dict[str, Any]:
    """Chroma metadata that lets a ``where`` filter select what a reader may see."""
    flags: dict[str, Any] = {"_agent": owner, "_scope": scope, "_global": scope == GLOBAL}
    if scope not in (GLOBAL, PRIVATE):
        for member in scope.split(","):
            flags[f"_r:{member}"] = True
    return flags


def reader_where(reader: str, reader_teams: Iterable[str] = ()) -> dict[str, Any]:
    """A Chroma ``where`` clause selecting the chunks ``reader`` may read."""
    options: list[dict[str, Any]] = [
        {"_global": True},
        {"_agent": reader},
        {f"_r:agent:{reader}": True},
    ]
    options.extend({f"_r:team:{t}": True} for t in sorted(reader_teams))
    return {"$or": options}


def may_read(metadata: Mapping[str, Any], reader: str, reader_teams: Iterable[str] = ()) -> bool:
    """True when the chunk with these reader flags is one :func:`reader_where` selects for
    ``reader`` (the same rule, checked in Python on a result instead of inside ChromaDB)."""
    if metadata.get("_global") is True or metadata.get("_agent") == reader:
        return True
    if metadata.get(f"_r:agent:{reader}") is True:
        return True
    return any(metadata.get(f"_r:team:{t}") is True for t in reader_teams)


def check_where(value: Any, field: str, operators: set[str]) -> dict[str, Any]:
    """Validate a Chroma filter: known operators only, no reserved (``_``) keys, and within
    the size limits of this module (the error names the field and the limit)."""
    budget = _Budget(field)
    _check_node(value, field, operators, 0, budget)
    return dict(value)


class _Budget:
    """Terms and operand values counted over a whole filter."""

    def __init__(self, field: str) -> None:
        self.field = field
        self.terms = 0
        self.values = 0

    def term(self) -> None:
        self.terms += 1
        if self.terms > MAX_FILTER_TERMS:
            raise ValidationError(
                self.field,
                f"has more than {MAX_FILTER_TERMS} terms; the limit is {MAX_FILTER_TERMS}",
            )

    def value(self, count: int = 1) -> None:
        self.values += count
        if self.values > MAX_FILTER_VALUES:
            raise ValidationError(
                self.field,
                f"has more than {MAX_FILTER_VALUES} operand values; the limit is "
                f"{MAX_FILTER_VALUES}",
            )


def _check_node(value: Any, field: str, operators: set[str], depth: int, budget: _Budget) -> None:
    if not isinstance(value, Mapping) or not value:
        raise ValidationError(field, "expected a non-empty mapping")
    if depth > MAX_FILTER_DEPTH:
        raise ValidationError(field, f"is nested too deeply (the limit is {MAX_FILTER_DEPTH})")
    for key, item in value.items():
        budget.term()
        if not isinstance(key, str):
            raise ValidationError(field, "keys must be strings")
        if len(key) > MAX_OPERAND_CHARS:
            raise ValidationError(field, f"a key is longer than {MAX_OPERAND_CHARS} characters")
        if key in ("$and", "$or"):
            if not isinstance(item, list) or not item:
                raise ValidationError(f"{field}.{key}", "expected a non-empty list of filters")
            if len(item) > MAX_FILTER_TERMS:
                raise ValidationError(
                    f"{field}.{key}", f"has {len(item)} filters; the limit is {MAX_FILTER_TERMS}"
                )
            for i, sub in enumerate(item):
                _check_node(sub, f"{field}.{key}[{i}]", operators, depth + 1, budget)
        elif key.startswith("$"):
            if key not in operators:
                raise ValidationError(f"{field}.{key}", "unknown operator")
            if operators is DOC_OPERATORS:
                if not isinstance(item, str):
                    raise ValidationError(f"{field}.{key}", "expected a string")
                budget.value()
                check_operand(f"{field}.{key}", item)
        elif operators is DOC_OPERATORS:
            raise ValidationError(f"{field}.{key}", "where_document takes operators only")
        elif key.startswith("_"):
            raise ValidationError(f"{field}.{key}", "keys starting with '_' are reserved")
        elif isinstance(item, Mapping):
            if not item:
                raise ValidationError(f"{field}.{key}", "expected an operator")
            for op, operand in item.items():
                if op not in FIELD_OPERATORS:
                    raise ValidationError(f"{field}.{key}.{op}", "unknown operator")
                budget.term()
                _check_field_operand(f"{field}.{key}.{op}", op, operand, budget)
        else:
            _check_field_operand(f"{field}.{key}", "$eq", item, budget)


def _check_field_operand(field: str, op: str, operand: Any, budget: _Budget) -> None:
    """The operand of a metadata condition: a list of at most :data:`MAX_IN_VALUES` for
    ``$in`` / ``$nin``, one value for the others."""
    if op in LIST_OPERATORS:
        if not isinstance(operand, list) or not operand:
            raise ValidationError(field, "expected a non-empty list")
        if len(operand) > MAX_IN_VALUES:
            raise ValidationError(field, f"has {len(operand)} values; the limit is {MAX_IN_VALUES}")
        budget.value(len(operand))
    elif isinstance(operand, list):
        raise ValidationError(field, "expected one value, not a list")
    else:
        budget.value()
    check_operand(field, operand)


def check_operand(field: str, value: Any) -> None:
    """A filter operand: a string (at most :data:`MAX_OPERAND_CHARS`), a finite number, a
    boolean, or a list of them."""
    items = value if isinstance(value, list) else [value]
    for item in items:
        if isinstance(item, float) and not math.isfinite(item):
            raise ValidationError(field, "expected a finite number")
        if not isinstance(item, str | int | float | bool):
            raise ValidationError(field, f"expected a string, number or boolean, got {item!r}")
        if isinstance(item, str) and len(item) > MAX_OPERAND_CHARS:
            raise ValidationError(
                field, f"is {len(item):,} characters; the limit is {MAX_OPERAND_CHARS:,}"
            )


def public_metadata(meta: Mapping[str, Any]) -> dict[str, Any]:
    """``meta`` without omoide's reserved (``_``) keys."""
    return {k: v for k, v in meta.items() if not k.startswith("_")}
