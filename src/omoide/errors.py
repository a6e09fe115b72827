"""Every exception omoide raises on purpose.

All of them derive from :class:`OmoideError`, so ``except omoide.errors.OmoideError`` catches
anything the library signals deliberately. The hierarchy::

    OmoideError
    ├── ValidationError (also a ValueError)   bad input; nothing was written
    │   ├── UnknownCollectionError            a semantic collection that is not configured
    │   ├── UnknownLayerError                 a layer name other than the four (and "archive")
    │   ├── TokenBudgetError                  content larger than a working-memory slot allows
    │   ├── ScopeSyntaxError                  a scope string that does not parse
    │   ├── ReservedIdError                   a client-chosen id in a prefix omoide generates
    │   └── ConditionSyntaxError              a forgetting condition that does not parse
    ├── NotFoundError (also a KeyError)       an id or name that does not exist
    ├── AlreadyExistsError                    creating something whose name is taken
    ├── ConfigError                           a configuration that cannot work
    ├── StoreLockedError                      the data directory is held by another process
    ├── StorageError                          the store is damaged or inconsistent
    │   └── BackendError                      the vector store failed a request (not the
    │                                         caller's fault; servers answer 503)
    ├── CapacityError                         a collection is full and its rule is to refuse
    ├── ProtectedMemoryError                  never-forget: protected memory cannot be removed
    ├── PermissionDeniedError                 an agent reading or writing outside its scope
    ├── AuthenticationError                   no key or an unknown key (servers)
    ├── LLMError                              an LLM endpoint failed or answered unusably
    └── PayloadTooLargeError                  a request body past the server's limit (413)

Errors carry a human-readable message that names the offending field or item.
"""

from __future__ import annotations

__all__ = [
    "AlreadyExistsError",
    "AuthenticationError",
    "BackendError",
    "CapacityError",
    "ConditionSyntaxError",
    "ConfigError",
    "LLMError",
    "NotFoundError",
    "OmoideError",
    "PayloadTooLargeError",
    "PermissionDeniedError",
    "ProtectedMemoryError",
    "ReservedIdError",
    "ScopeSyntaxError",
    "StorageError",
    "StoreLockedError",
    "TokenBudgetError",
    "UnknownCollectionError",
    "UnknownLayerError",
    "ValidationError",
]


class OmoideError(Exception):
    """Base class of every error omoide raises deliberately."""


class ValidationError(OmoideError, ValueError):
    """An argument was rejected at the boundary; nothing was changed.

    ``field`` names the argument (or ``argument.key``) that was wrong.
    """

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        self.message = message
        super().__init__(f"{field}: {message}")


class UnknownCollectionError(ValidationError):
    """A semantic collection name that is not configured."""

    def __init__(self, name: object, known: list[str]) -> None:
        super().__init__(
            "collection", f"unknown collection {name!r}; known: {', '.join(sorted(known))}"
        )


class UnknownLayerError(ValidationError):
    """A layer name that omoide does not have."""

    def __init__(self, name: object, known: list[str], field: str = "layer") -> None:
        super().__init__(field, f"unknown layer {name!r}; known: {', '.join(known)}")


class TokenBudgetError(ValidationError):
    """Content does not fit the token budget of a working-memory slot."""


class ScopeSyntaxError(ValidationError):
    """A scope string that does not follow the scope grammar."""


class ReservedIdError(ValidationError):
    """A client-chosen id that starts with a prefix omoide generates ids with (``wm-``,
    ``ep-``, ``h-``, ...): such ids are the system's, so no agent can claim one in advance."""

    def __init__(self, field: str, value: str, prefix: str) -> None:
        self.value = value
        self.prefix = prefix
        super().__init__(
            field,
            f"ids starting with {prefix!r} are reserved for ids omoide generates; "
            "choose another id or leave it out",
        )


class ConditionSyntaxError(ValidationError):
    """A forgetting-policy condition that does not parse.

    ``position`` is the 0-based character offset where parsing failed; ``reason`` is the
    message without the position.
    """

    def __init__(self, condition: str, position: int, message: str) -> None:
        self.condition = condition
        self.position = position
        self.reason = message
        pointer = " " * position + "^"
        super().__init__(
            "condition", f"{message} at position {position}\n  {condition}\n  {pointer}"
        )


class NotFoundError(OmoideError, KeyError):
    """An id or name that does not exist (or is not visible to the caller)."""

    def __init__(self, kind: str, key: object) -> None:
        self.kind = kind
        self.key = key
        super().__init__(f"{kind} {key!r} not found")

    def __str__(self) -> str:  # KeyError would add quotes around the message
        return str(self.args[0])


class AlreadyExistsError(OmoideError):
    """Something with that name already exists."""


class ConfigError(OmoideError):
    """The configuration cannot work (bad value, incompatible embedder, ...)."""


class StoreLockedError(OmoideError):
    """The data directory is owned by another process (or another Memory in this one).

    ChromaDB's persistent client is not safe for several writer processes, so one process
    owns a data directory; others share it through ``omoide serve``.
    """


class StorageError(OmoideError):
    """The store on disk is damaged or inconsistent in a way omoide cannot repair."""


class BackendError(StorageError):
    """ChromaDB failed on a request in a way the caller's input does not explain (a busy or
    failing vector store): the request changed nothing and may be retried."""


class CapacityError(OmoideError):
    """A collection reached its cap and its declared rule is to refuse new documents."""


class ProtectedMemoryError(OmoideError):
    """A never-forget item cannot be deleted, archived or compressed, by any path."""


class PermissionDeniedError(OmoideError):
    """An agent tried to read or write outside the scopes it belongs to."""


class AuthenticationError(OmoideError):
    """A server request came without a key or with a key that is not configured."""


class LLMError(OmoideError):
    """An LLM endpoint failed, timed out, or answered with something unusable."""


class PayloadTooLargeError(OmoideError):
    """A request body larger than the server accepts (``server.max_body_bytes``)."""
