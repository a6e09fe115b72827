"""The ids omoide generates, and the rule that keeps clients out of them.

omoide names items it creates itself with fixed prefixes: random episode ids (``ep-``),
episodes promoted from working memory (``wm-``), content-hashed documents (``h-``), cache
entries (``cache-``), indexed files (``file-``), episodes overflowed to the semantic layer
(``episode-``) and distilled knowledge (``distilled-``). An agent that could pick such an id
could create the item before the system does and have the system's write land on its text
(or be refused): so ids a client chooses may not start with one of these prefixes
(:func:`check_client_id`, applied by the front ends in :mod:`omoide.service.local`). The
library itself, and imports of an export, still write them.

On a server shared by agents that do not trust each other, an id a client chooses is the
client's own (:func:`qualified_id`): agent ``b``'s ``x`` is stored as ``b:x``, so two agents'
``x`` are two items and no write can collide with, or tell of, another agent's item. Agent
names may not contain ``:`` (API keys refuse it), so the writer of a qualified id is the part
before its first ``:``.

Ids derived from something another agent could guess (a message number, a text) are keyed
by a secret of the data directory (:func:`omoide.storage.secrets.directory_secret`), so no
agent can compute the id the system will give someone else's item.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from typing import Any

from omoide.core.validation import MAX_NAME_CHARS, check_name
from omoide.errors import ReservedIdError, ValidationError

__all__ = [
    "QUALIFIER",
    "RESERVED_ID_PREFIXES",
    "SYSTEM_DOCUMENTS",
    "check_client_id",
    "document_importance",
    "keyed_digest",
    "qualified_id",
    "system_source",
]

#: Separates the writer's name from the id it chose in a stored id (``ceo:weekly-plan``).
QUALIFIER = ":"

#: Prefixes of the ids omoide generates for episodes and documents.
RESERVED_ID_PREFIXES = (
    "ep-",
    "wm-",
    "msg-",
    "h-",
    "cache-",
    "file-",
    "episode-",
    "distilled-",
)

#: The documents omoide writes into the semantic layer itself, by the id prefix only it may
#: give (:data:`RESERVED_ID_PREFIXES`): knowledge distilled from episodes,
#: and episodes moved out of a full episodic store. Only these are believed when their
#: metadata says where they came from and when their episodes happened; any agent may write
#: ``{"source": "distillation"}`` into its own document's metadata.
SYSTEM_DOCUMENTS = {"distillation": "distilled-", "episodic_overflow": "episode-"}


def check_client_id(field: str, value: Any) -> Any:
    """Refuse a client-chosen id in a reserved prefix (any letter case); other values,
    including non-strings, pass through unchanged for the layer to validate."""
    if isinstance(value, str):
        folded = value.strip().casefold()
        for prefix in RESERVED_ID_PREFIXES:
            if folded.startswith(prefix):
                raise ReservedIdError(field, value, prefix)
    return value


def qualified_id(field: str, writer: str, value: Any) -> Any:
    """The stored id of ``value`` chosen by ``writer``: ``writer:value``, or ``value`` itself
    when it already starts with ``writer:`` (the stored id names the same item as the short
    one). Another agent's qualifier is kept inside (``a:x`` by ``b`` is ``b:a:x``), so it can
    never reach ``a``'s items. Non-strings pass through for the layer to refuse."""
    if not isinstance(value, str):
        return value
    check_name(field, value)
    if not writer or QUALIFIER in writer:
        raise ValidationError("agent_name", f"{writer!r} cannot qualify ids (it holds ':')")
    prefix = writer + QUALIFIER
    stored = value if value.startswith(prefix) else prefix + value
    if len(stored) > MAX_NAME_CHARS:
        raise ValidationError(
            field,
            f"is {len(value):,} characters; stored as {writer}:…, the limit is "
            f"{MAX_NAME_CHARS - len(prefix):,}",
        )
    return stored


def keyed_digest(secret: bytes, *parts: str) -> str:
    """HMAC-SHA256 of ``parts`` joined by the unit separator, as hex."""
    message = "\x1f".join(parts).encode("utf-8")
    return hmac.new(secret, message, hashlib.sha256).hexdigest()


def system_source(doc_id: str, metadata: Mapping[str, Any]) -> str | None:
    """``source`` of a document's metadata when it names what omoide writes itself and the
    id bears that writer's prefix (:data:`SYSTEM_DOCUMENTS`), else None."""
    source = metadata.get("source")
    prefix = SYSTEM_DOCUMENTS.get(source) if isinstance(source, str) else None
    return source if prefix is not None and doc_id.startswith(prefix) else None


def document_importance(doc_id: str, metadata: Mapping[str, Any]) -> float:
    """A document's importance in [0, 1]: its ``importance`` metadata (what its writer, or
    the episode it was moved out from, says); for knowledge omoide distilled, the mean of its
    episodes'; 0.5 when it says none."""
    value = metadata.get("importance")
    if system_source(doc_id, metadata) == "distillation":
        value = metadata.get("mean_importance", value)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        return 0.5
    return float(value)
