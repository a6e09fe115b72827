"""ChromaDB ``where`` filters: the checks on a caller's filter, and the reserved reader flags.

Every chunk carries reader flags in its metadata (``_agent``, ``_scope``, ``_global``,
``_r:agent:NAME`` / ``_r:team:NAME``); :func:`reader_where` selects what one agent may read.
A caller's filter may use the documented operators only and never a key starting with ``_``
(:func:`check_where`), so that no filter can widen a scope.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from .errors import ValidationError
from .scope import GLOBAL, PRIVATE

__all__ = [
    "DOC_OPERATORS",
    "FIELD_OPERATORS",
    "WHERE_OPERATORS",
    "check_operand",
    "check_where",
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


def check_where(value: Any, field: str, operators: set[str], depth: int = 0) -> dict[str, Any]:
    """Validate a Chroma filter: known operators only, no reserved (``_``) keys."""
    if not isinstance(value, Mapping) or not value:
        raise ValidationError(field, "expected a non-empty mapping")
    if depth > 16:
        raise ValidationError(field, "is nested too deeply")
    for key, item in value.items():
        if not isinstance(key, str):
            raise ValidationError(field, "keys must be strings")
        if key in ("$and", "$or"):
            if not isinstance(item, list) or not item:
                raise ValidationError(f"{field}.{key}", "expected a non-empty list of filters")
            for i, sub in enumerate(item):
                check_where(sub, f"{field}.{key}[{i}]", operators, depth + 1)
        elif key.startswith("$"):
            if key not in operators:
                raise ValidationError(f"{field}.{key}", "unknown operator")
        elif operators is DOC_OPERATORS:
            raise ValidationError(f"{field}.{key}", "where_document takes operators only")
        elif key.startswith("_"):
            raise ValidationError(f"{field}.{key}", "keys starting with '_' are reserved")
        elif isinstance(item, Mapping):
            for op, operand in item.items():
                if op not in FIELD_OPERATORS:
                    raise ValidationError(f"{field}.{key}.{op}", "unknown operator")
                check_operand(f"{field}.{key}.{op}", operand)
        else:
            check_operand(f"{field}.{key}", item)
    if operators is DOC_OPERATORS:
        for key, item in value.items():
            if key not in ("$and", "$or") and not isinstance(item, str):
                raise ValidationError(f"{field}.{key}", "expected a string")
    return dict(value)


def check_operand(field: str, value: Any) -> None:
    """A filter operand: a string, a finite number, a boolean, or a list of them."""
    items = value if isinstance(value, list) else [value]
    for item in items:
        if isinstance(item, float) and not math.isfinite(item):
            raise ValidationError(field, "expected a finite number")
        if not isinstance(item, str | int | float | bool):
            raise ValidationError(field, f"expected a string, number or boolean, got {item!r}")


def public_metadata(meta: Mapping[str, Any]) -> dict[str, Any]:
    """``meta`` without omoide's reserved (``_``) keys."""
    return {k: v for k, v in meta.items() if not k.startswith("_")}
