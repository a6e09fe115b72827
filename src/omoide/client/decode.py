"""JSON from the REST API back into the library's records.

The server answers with the records of :mod:`omoide.core.models` and the pipelines' reports
as JSON (datetimes as ISO 8601, tuples as arrays). :func:`decode` rebuilds them from the
dataclass's own type hints, so a record gains a field here when it gains one in the library:
unknown keys are ignored (a newer server) and missing ones take the field's default (an older
one).
"""

from __future__ import annotations

import dataclasses
import sys
import types
import typing
from collections.abc import Mapping
from datetime import datetime
from typing import Any, TypeVar, get_args, get_origin, get_type_hints

from omoide.core.models import Message
from omoide.errors import OmoideError
from omoide.layers.working import Eviction
from omoide.pipelines.retention import RetentionReport
from omoide.recall.context import Context

__all__ = ["decode", "decode_context", "decode_eviction"]

T = TypeVar("T")

#: Names the records' modules import only for type checking.
_NAMES: dict[str, Any] = {"RetentionReport": RetentionReport}


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    """The resolved field types of a record class (computed once per class)."""
    hints = _HINTS.get(cls)
    if hints is None:
        module = sys.modules[cls.__module__]
        hints = _HINTS[cls] = get_type_hints(cls, globalns={**_NAMES, **vars(module)})
    return hints


def decode(cls: type[T], data: Any) -> T:
    """The dataclass ``cls`` from its JSON form ``data``."""
    if not isinstance(data, Mapping):
        raise OmoideError(f"the server answered {type(data).__name__} where {cls.__name__} was due")
    hints = _hints(cls)
    values = {
        f.name: _value(hints[f.name], data[f.name])
        for f in dataclasses.fields(cls)  # type: ignore[arg-type]
        if f.init and f.name in data
    }
    return cls(**values)


def _value(kind: Any, data: Any) -> Any:
    """``data`` as the type ``kind`` (a dataclass, datetime, union, tuple, list or plain)."""
    if data is None:
        return None
    origin = get_origin(kind)
    if origin in (types.UnionType, typing.Union):
        options = [k for k in get_args(kind) if k is not type(None)]
        return _value(options[0], data) if len(options) == 1 else data
    if origin is tuple:
        args = get_args(kind)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_value(args[0], v) for v in data)
        return tuple(_value(a, v) for a, v in zip(args, data, strict=False))
    if origin is list:
        (item,) = get_args(kind) or (Any,)
        return [_value(item, v) for v in data]
    if origin is not None and isinstance(origin, type) and issubclass(origin, Mapping):
        return dict(data)
    if kind is datetime:
        return datetime.fromisoformat(data)
    if kind is float and isinstance(data, int):
        return float(data)
    if isinstance(kind, type) and dataclasses.is_dataclass(kind):
        return decode(kind, data)
    return data


def decode_context(data: Mapping[str, Any]) -> Context:
    """A recall's :class:`Context`; ``context`` holds the text :meth:`Context.render` gives."""
    return decode(Context, {**data, "_rendered": data.get("context", "")})


def decode_eviction(data: Mapping[str, Any]) -> Eviction:
    """One eviction of a working-memory answer (``promoted`` is derived, not stored)."""
    return Eviction(decode(Message, data["message"]), data.get("episode_id"))
