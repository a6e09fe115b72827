"""Capacity overflow: episodes leaving a full episodic store are handed to the semantic layer.

An episode already distilled into a live knowledge document is represented there: it gets no
document of its own (the knowledge names its topic and identifiers; see
:mod:`omoide.pipelines.distill`). Every other episode becomes one document of the distillation
collection. Each hand-over is audited (policy ``capacity``, action ``overflow``) with the
whole episode as its snapshot, context included, so nothing is lost on overflow.
"""

from __future__ import annotations

from collections import defaultdict

from omoide.core.models import Episode
from omoide.layers.episodic.store import episode_text
from omoide.pipelines.lifecycle import Lifecycle

__all__ = ["Overflow"]


class Overflow:
    """The overflow sink of the episodic store (see the module)."""

    def __init__(self, lifecycle: Lifecycle, collection: str) -> None:
        self._lifecycle = lifecycle
        self._collection = collection

    def __call__(self, episodes: list[Episode]) -> None:
        """Store ``episodes`` durably in the semantic layer, then audit the hand-over."""
        collection = self._collection
        represented = self.distilled_into([e.id for e in episodes])
        groups: dict[tuple[str, str], list[Episode]] = defaultdict(list)
        for episode in episodes:
            if episode.id not in represented:
                groups[(episode.agent_name, episode.scope)].append(episode)
        for (agent, scope), group in groups.items():
            self._lifecycle.semantic.store(
                collection,
                [episode_text(e.description, e.outcome) for e in group],
                [
                    {
                        "source": "episodic_overflow",
                        "episode_id": e.id,
                        "event_type": e.event_type,
                        "timestamp": e.timestamp.isoformat(),
                        "importance": e.importance,
                        "tags": ",".join(e.tags),
                    }
                    for e in group
                ],
                ids=[f"episode-{e.id}" for e in group],
                agent_name=agent,
                scope=scope,
                known_scope=True,  # the scope the episode was stored with
            )
        self._lifecycle.record_overflow(episodes, collection, represented)

    def distilled_into(self, ids: list[str]) -> dict[str, str]:
        """For those of ``ids`` distilled into a live document of the collection whose text
        holds the episode's own description (the offline extractor quotes its cluster's
        representative; identical episodes are all quoted): the document's id. An episode
        the knowledge only paraphrases is not represented by it."""
        distilled = self._lifecycle.episodic.rows.distilled_into(ids)
        content = {
            r["id"]: r["content"]
            for r in self._lifecycle.semantic.registry.rows(
                self._collection, list(dict.fromkeys(r["distilled_into"] for r in distilled))
            )
            if r["state"] in ("active", "compressed")
        }
        return {
            r["id"]: r["distilled_into"]
            for r in distilled
            if r["distilled_into"] in content
            and _words(r["description"]) in _words(content[r["distilled_into"]])
        }


def _words(text: str) -> str:
    """``text`` with its whitespace runs made single spaces (for containment checks)."""
    return " ".join(text.split())
