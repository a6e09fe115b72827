"""Never forget, reaching back: protect stored items that a newly configured category covers.

Protection is decided when an item is written; a never-forget category added to the
configuration later must reach the items already stored. On open, if the categories differ from
those recorded in ``meta``, every unprotected episode and document the rule now covers is
protected, in one transaction with the new record.
"""

from __future__ import annotations

import json

from omoide.core.protection import NeverForget
from omoide.layers.episodic.rows import EpisodicRows
from omoide.layers.semantic.registry import DocumentRegistry
from omoide.storage import Database

__all__ = ["reach_back"]

_META_KEY = "never_forget"


def reach_back(
    db: Database, rule: NeverForget, episodes: EpisodicRows, documents: DocumentRegistry
) -> None:
    """Protect what ``rule`` covers among unprotected items, once per change of categories."""
    signature = json.dumps(sorted(rule.categories))
    if db.get_meta(_META_KEY) == signature:
        return
    episode_rows = [
        int(r["rowid"])
        for r in episodes.unprotected()
        if rule.episode(r["event_type"], json.loads(r["tags"]), json.loads(r["context"]))
    ]
    document_rows = [
        int(r["rowid"])
        for r in documents.unprotected()
        if rule.document(r["collection"], json.loads(r["metadata"]))
    ]
    with db.transaction() as conn:
        episodes.raise_protection(conn, episode_rows)
        documents.raise_protection(conn, document_rows)
        db.set_meta(_META_KEY, signature)  # joins this transaction
