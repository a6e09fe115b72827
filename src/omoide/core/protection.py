"""Never forget: which memories no path may delete, archive or compress.

The categories are the article's five — ``human_feedback``, ``security_incidents``,
``manifesto_rules``, ``financial_records``, ``compliance_events`` — plus any the configuration
adds (``never_forget = [...]``; it can only extend the list). An item belongs to a category
``C`` when any of these holds:

1. its event type is ``C`` or ``C`` without its final ``s`` (``security_incident``,
   ``financial_record``, ``compliance_event``, ``manifesto_rule``, ``human_feedback``);
2. one of its tags is ``C`` (or the singular form);
3. its ``category`` (a context key for episodes, a metadata key for documents) is ``C`` (or
   the singular form), or a list containing it;
4. for ``human_feedback`` only: its event type is ``feedback`` and its ``source`` (or
   ``from``) is ``human`` — or, for a document of the ``feedback`` collection, it names no
   ``source`` or ``from`` at all (that collection holds human feedback; an agent's lesson
   stored there says so with ``source``).

For a semantic document the event type is its metadata ``event_type`` — or ``feedback`` for a
document in the ``feedback`` collection — and its tags are the metadata ``tags`` (a
comma-separated string). Comparisons ignore case.

The decision is taken when an item is written and stored in its ``protected`` column.
Protection only ever grows: database triggers refuse to delete, archive, compress or rewrite a
protected row and refuse to clear the flag, whatever path asks, and a category added later
protects the existing items it matches when the store is next opened.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = ["NeverForget"]

_HUMAN_SOURCES = frozenset({"human"})


def _forms(category: str) -> frozenset[str]:
    name = category.strip().lower()
    return frozenset({name, name[:-1]} if name.endswith("s") and len(name) > 1 else {name})


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value.strip().lower()]
    if isinstance(value, list | tuple):
        return [v.strip().lower() for v in value if isinstance(v, str)]
    return []


class NeverForget:
    """The never-forget rule over a list of categories (see the module docstring)."""

    def __init__(self, categories: Sequence[str]) -> None:
        self.categories: tuple[str, ...] = tuple(dict.fromkeys(categories))
        self._forms = {c: _forms(c) for c in self.categories}

    def categories_of(
        self, event_type: str | None, tags: Iterable[str], fields: Mapping[str, Any]
    ) -> tuple[str, ...]:
        """The categories an item with these properties belongs to (empty: not protected)."""
        kind = (event_type or "").strip().lower()
        tag_set = {t.strip().lower() for t in tags if isinstance(t, str)}
        declared = set(_strings(fields.get("category")))
        source = set(_strings(fields.get("source"))) | set(_strings(fields.get("from")))
        found = []
        for category, forms in self._forms.items():
            if (
                kind in forms
                or tag_set & forms
                or declared & forms
                or (
                    category == "human_feedback"
                    and kind == "feedback"
                    and bool(source & _HUMAN_SOURCES)
                )
            ):
                found.append(category)
        return tuple(found)

    def episode_categories(
        self, event_type: str, tags: Sequence[str], context: Mapping[str, Any]
    ) -> tuple[str, ...]:
        """Categories of an episode."""
        return self.categories_of(event_type, tags, context)

    def document_categories(self, collection: str, metadata: Mapping[str, Any]) -> tuple[str, ...]:
        """Categories of a semantic document."""
        event_type = metadata.get("event_type")
        if not isinstance(event_type, str):
            event_type = "feedback" if collection == "feedback" else None
        raw_tags = metadata.get("tags")
        tags = raw_tags.split(",") if isinstance(raw_tags, str) else _strings(raw_tags)
        found = self.categories_of(event_type, tags, metadata)
        if (
            collection == "feedback"
            and event_type == "feedback"
            and "human_feedback" in self._forms
            and "human_feedback" not in found
            and not _strings(metadata.get("source"))
            and not _strings(metadata.get("from"))
        ):
            # The feedback collection holds human feedback: what names no other source is.
            found = tuple(c for c in self.categories if c in (*found, "human_feedback"))
        return found

    def episode(self, event_type: str, tags: Sequence[str], context: Mapping[str, Any]) -> bool:
        """Whether an episode is protected (the ``protection`` hook of the episodic store)."""
        return bool(self.episode_categories(event_type, tags, context))

    def document(self, collection: str, metadata: Mapping[str, Any]) -> bool:
        """Whether a document is protected (the ``protection`` hook of the semantic store)."""
        return bool(self.document_categories(collection, metadata))

    def __repr__(self) -> str:
        return f"NeverForget({list(self.categories)!r})"
