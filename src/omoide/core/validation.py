"""Checks at the boundary: every public call validates its arguments before it writes.

Each helper returns the cleaned value or raises :class:`~omoide.errors.ValidationError`
naming the field. Text must be a ``str`` that encodes as UTF-8 (no lone surrogates) and has
no NUL characters; numbers must be finite; JSON-like values must round-trip through JSON.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from omoide.clock import as_utc
from omoide.errors import ValidationError

__all__ = [
    "check_datetime",
    "check_json_mapping",
    "check_list",
    "check_metadata",
    "check_name",
    "check_names",
    "check_number",
    "check_positive_int",
    "check_string_list",
    "check_text",
    "check_time_range",
    "check_unit_interval",
]

MAX_NAME_CHARS = 200
MAX_LIST_ITEMS = 1_000
MAX_JSON_BYTES = 1_000_000
MAX_JSON_DEPTH = 32


def check_text(field: str, value: Any, *, max_chars: int, allow_empty: bool = False) -> str:
    """A string within ``max_chars`` that encodes as UTF-8 and holds no NUL."""
    if not isinstance(value, str):
        raise ValidationError(field, f"expected a string, got {type(value).__name__}")
    if not allow_empty and not value.strip():
        raise ValidationError(field, "must not be empty")
    if len(value) > max_chars:
        raise ValidationError(field, f"is {len(value):,} characters; the limit is {max_chars:,}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValidationError(
            field, f"is not valid UTF-8 text (lone surrogate at position {exc.start})"
        ) from None
    if "\x00" in value:
        raise ValidationError(field, "contains a NUL character")
    return value


def check_name(field: str, value: Any) -> str:
    """A short identifier-like string (agent names, session ids, tags, keys)."""
    text = check_text(field, value, max_chars=MAX_NAME_CHARS)
    if any(ord(c) < 32 or ord(c) == 127 for c in text):
        raise ValidationError(field, "contains control characters")
    if text != text.strip():
        raise ValidationError(field, "has leading or trailing whitespace")
    return text


def check_number(field: str, value: Any, *, low: float, high: float) -> float:
    """A finite real number within ``[low, high]``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValidationError(field, f"expected a number, got {type(value).__name__}")
    number = float(value)
    if math.isnan(number) or math.isinf(number):
        raise ValidationError(field, f"must be a finite number, got {value!r}")
    if not low <= number <= high:
        raise ValidationError(field, f"must be within [{low:g}, {high:g}], got {value!r}")
    return number


def check_unit_interval(field: str, value: Any) -> float:
    """A number within [0, 1] (importance, rates, thresholds)."""
    return check_number(field, value, low=0.0, high=1.0)


def check_positive_int(field: str, value: Any, *, maximum: int = 1_000_000) -> int:
    """An integer within ``[1, maximum]``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError(field, f"expected an integer, got {type(value).__name__}")
    if value < 1:
        raise ValidationError(field, f"must be >= 1, got {value}")
    if value > maximum:
        raise ValidationError(field, f"must be <= {maximum:,}, got {value:,}")
    return value


def check_string_list(
    field: str, value: Any, *, max_items: int = MAX_LIST_ITEMS
) -> tuple[str, ...]:
    """A list or tuple of names (tags, references), duplicates removed, order kept."""
    if value is None:
        return ()
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise ValidationError(field, f"expected a list of strings, got {type(value).__name__}")
    if len(value) > max_items:
        raise ValidationError(field, f"has {len(value)} items; the limit is {max_items}")
    return tuple(dict.fromkeys(check_name(f"{field}[{i}]", v) for i, v in enumerate(value)))


def check_list(field: str, value: Any, *, length: int | None = None) -> list[Any]:
    """A list or tuple, of ``length`` items if given (then None stands for that many
    Nones: ``metadatas=None`` beside ``length`` documents)."""
    if value is None:
        if length is None:
            raise ValidationError(field, "expected a list")
        return [None] * length
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise ValidationError(field, f"expected a list, got {type(value).__name__}")
    if length is not None and len(value) != length:
        raise ValidationError(field, f"has {len(value)} items but {length} were expected")
    return list(value)


def check_names(field: str, value: Any, *, length: int | None = None) -> list[str]:
    """A list of ids or names, each checked (``ids[2]`` names the bad one), order and
    duplicates kept."""
    items = check_list(field, value, length=length)
    return [check_name(f"{field}[{i}]", x) for i, x in enumerate(items)]


def _depth(value: Any, level: int = 0) -> int:
    if level > MAX_JSON_DEPTH:
        return level
    if isinstance(value, Mapping):
        return max((_depth(v, level + 1) for v in value.values()), default=level + 1)
    if isinstance(value, list | tuple):
        return max((_depth(v, level + 1) for v in value), default=level + 1)
    return level


def check_json_mapping(field: str, value: Any) -> dict[str, Any]:
    """A mapping of JSON values (str keys, finite numbers, bounded depth and size)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValidationError(field, f"expected a mapping, got {type(value).__name__}")
    if _depth(value) > MAX_JSON_DEPTH:
        raise ValidationError(field, f"is nested deeper than {MAX_JSON_DEPTH} levels")
    try:
        encoded = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValidationError(
            field, f"must hold JSON values only (strings as keys, finite numbers): {exc}"
        ) from None
    try:
        encoded.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError(field, "holds text that is not valid UTF-8") from None
    if len(encoded) > MAX_JSON_BYTES:
        raise ValidationError(
            field, f"is {len(encoded):,} bytes as JSON; the limit is {MAX_JSON_BYTES:,}"
        )
    decoded: dict[str, Any] = json.loads(encoded)
    return decoded


def check_metadata(
    field: str, value: Any, *, reserved_prefix: str = "_", max_keys: int = 64
) -> dict[str, str | int | float | bool]:
    """Flat metadata as ChromaDB stores it: str keys, values str, int, finite float or bool.

    Keys starting with ``reserved_prefix`` belong to omoide (owner, scope, chunk ...) and are
    refused, so a caller cannot forge them.
    """
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValidationError(field, f"expected a mapping, got {type(value).__name__}")
    if len(value) > max_keys:
        raise ValidationError(field, f"has {len(value)} keys; the limit is {max_keys}")
    clean: dict[str, str | int | float | bool] = {}
    for key, item in value.items():
        if not isinstance(key, str):
            raise ValidationError(field, f"keys must be strings, got {type(key).__name__}")
        check_name(f"{field} key", key)
        if key.startswith(reserved_prefix):
            raise ValidationError(
                f"{field}.{key}", f"keys starting with {reserved_prefix!r} are reserved"
            )
        where = f"{field}.{key}"
        if isinstance(item, bool):
            clean[key] = item
        elif isinstance(item, int):
            if not -(2**63) <= item < 2**63:
                raise ValidationError(where, "integer out of the 64-bit range")
            clean[key] = item
        elif isinstance(item, float):
            clean[key] = check_number(where, item, low=-math.inf, high=math.inf)
        elif isinstance(item, str):
            clean[key] = check_text(where, item, max_chars=100_000, allow_empty=True)
        else:
            raise ValidationError(
                where, f"values must be str, int, float or bool, got {type(item).__name__}"
            )
    return clean


def check_datetime(field: str, value: Any) -> datetime:
    """A datetime (or ISO 8601 string); naive values are read as UTC."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            raise ValidationError(field, f"not an ISO 8601 date-time: {value!r}") from None
    if not isinstance(value, datetime):
        raise ValidationError(field, f"expected a datetime, got {type(value).__name__}")
    return as_utc(value)


def check_time_range(field: str, value: Any) -> tuple[datetime | None, datetime | None]:
    """A ``(start, end)`` pair (either may be None for an open end), start <= end."""
    if value is None:
        return (None, None)
    if isinstance(value, str) or not isinstance(value, Sequence) or len(value) != 2:
        raise ValidationError(field, "expected a (start, end) pair")
    start = None if value[0] is None else check_datetime(f"{field}[0]", value[0])
    end = None if value[1] is None else check_datetime(f"{field}[1]", value[1])
    if start is not None and end is not None and start > end:
        raise ValidationError(
            field, f"is reversed: start {start.isoformat()} is after end {end.isoformat()}"
        )
    return (start, end)
