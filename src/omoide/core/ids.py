"""The ids omoide generates, and the rule that keeps clients out of them.

omoide names items it creates itself with fixed prefixes: random episode ids (``ep-``),
episodes promoted from working memory (``wm-``), content-hashed documents (``h-``), cache
entries (``cache-``), indexed files (``file-``), episodes overflowed to the semantic layer
(``episode-``) and distilled knowledge (``distilled-``). An agent that could pick such an id
could create the item before the system does and have the system's write land on its text
(or be refused): so ids a client chooses may not start with one of these prefixes
(:func:`check_client_id`, applied by the front ends in :mod:`omoide.service.local`). The
library itself, and imports of an export, still write them.

Ids derived from something another agent could guess (a message number, a text) are keyed
by a secret of the data directory (:func:`omoide.storage.secrets.directory_secret`), so no
agent can compute the id the system will give someone else's item.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

from omoide.errors import ReservedIdError

__all__ = ["RESERVED_ID_PREFIXES", "check_client_id", "keyed_digest"]

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


def check_client_id(field: str, value: Any) -> Any:
    """Refuse a client-chosen id in a reserved prefix (any letter case); other values,
    including non-strings, pass through unchanged for the layer to validate."""
    if isinstance(value, str):
        folded = value.strip().casefold()
        for prefix in RESERVED_ID_PREFIXES:
            if folded.startswith(prefix):
                raise ReservedIdError(field, value, prefix)
    return value


def keyed_digest(secret: bytes, *parts: str) -> str:
    """HMAC-SHA256 of ``parts`` joined by the unit separator, as hex."""
    message = "\x1f".join(parts).encode("utf-8")
    return hmac.new(secret, message, hashlib.sha256).hexdigest()
