"""What the dashboard reads beyond the service's operations, with the same scope rules.

The service (:class:`~omoide.service.local.LocalOperations`) answers items one by one and
lists the live ones; a dashboard also browses forgotten items by state, counts growth per
day, and follows the recall log. Each query here selects with the caller's
:func:`~omoide.core.scope.reader_predicate` (exactly what the layers use for ``reader=``)
and, where an item is shown, fetches it through the service again, so what a key may not
read is absent here as it is from the REST API. Recalls are private to the agent that
asked (admins read all), as in :class:`~omoide.recall.log.RecallLog`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from omoide.clock import from_timestamp, to_timestamp
from omoide.core.scope import reader_predicate
from omoide.core.validation import check_datetime
from omoide.errors import NotFoundError, ValidationError
from omoide.layers.episodic.rows import BROWSE_STATES
from omoide.recall.log import RecallRecord
from omoide.service.local import LocalOperations

__all__ = ["EPISODE_STATES", "EpisodeFilter", "Reads", "maintenance_runs"]

#: The states the episode list filters by.
EPISODE_STATES = BROWSE_STATES


@dataclass(frozen=True)
class EpisodeFilter:
    """The episode list's filters, as given in the page's query string."""

    text: str = ""
    agent: str = ""
    event_type: str = ""
    tag: str = ""
    state: str = ""
    since: str = ""
    until: str = ""

    def conditions(self) -> dict[str, Any]:
        """The conditions of :meth:`EpisodicRows.browse` (ValidationError naming a bad field)."""
        if self.state and self.state not in EPISODE_STATES:
            raise ValidationError("state", f"expected one of {', '.join(EPISODE_STATES)}")
        until = None
        if self.until:
            end = check_datetime("until", self.until)
            if len(self.until) == 10:  # a date: the whole day
                end += timedelta(days=1)
            until = to_timestamp(end)
        return {
            "text": self.text,
            "agent_name": self.agent,
            "event_type": self.event_type,
            "tag": self.tag,
            "state": self.state,
            "since": to_timestamp(check_datetime("since", self.since)) if self.since else None,
            "until": until,
        }


class Reads:
    """The dashboard's queries, as the caller of ``ops``."""

    def __init__(self, ops: LocalOperations) -> None:
        self.ops = ops
        self.mem = ops.mem
        self.caller = ops.caller
        assert self.mem.db is not None
        self.db = self.mem.db

    def _scope(self, owner: str = "agent_name", scope: str = "scope") -> tuple[str, list[Any]]:
        return reader_predicate(
            self.caller.reader, self.caller.teams, owner_column=owner, scope_column=scope
        )

    # -- episodes ------------------------------------------------------------------------

    def episodes(self, filters: EpisodeFilter, *, limit: int, offset: int) -> list[dict[str, Any]]:
        """Episodes of every state matching ``filters``, newest first (through the service)."""
        ids = self.mem.episodic.rows.browse(
            self.caller.reader, self.caller.teams, filters.conditions(), limit=limit, offset=offset
        )
        found = []
        for episode_id in ids:
            try:
                found.append(self.ops.get_episode(episode_id))
            except NotFoundError:
                continue  # changed scope in between
        return found

    def search_episodes(self, filters: EpisodeFilter, *, limit: int) -> list[dict[str, Any]]:
        """The live episodes that best answer ``filters.text`` by meaning and words (the
        service's ranked search), within the other filters."""
        filters.conditions()  # the same checks as the list
        until = None
        if filters.until:
            until = check_datetime("until", filters.until)
            until += timedelta(days=1) if len(filters.until) == 10 else timedelta(0)
        found = self.ops.search_episodes(
            filters.text,
            agent_name=filters.agent or None,
            event_type=filters.event_type or None,
            since=filters.since or None,
            until=until,
            tags=[filters.tag] if filters.tag else None,
            top_k=limit,
        )
        if filters.state:
            found = [e for e in found if _in_state(e, filters.state)]
        return found

    def episode_facets(self) -> tuple[list[str], list[str], list[str]]:
        """The agents, event types and tags of the episodes the caller may read."""
        return self.mem.episodic.rows.facets(self.caller.reader, self.caller.teams)

    def distilled_into(self, episode_id: str) -> str | None:
        """The knowledge document a (readable) episode was distilled into, if any."""
        self.ops.get_episode(episode_id)
        return self.mem.episodic.rows.distilled_into_of(episode_id)

    def protected_episodes(self, limit: int = 20) -> list[dict[str, Any]]:
        return self.episodes(EpisodeFilter(state="protected"), limit=limit, offset=0)

    # -- growth ----------------------------------------------------------------------------

    def growth(self, days: int = 30) -> tuple[list[str], dict[str, list[float]]]:
        """Per day over the last ``days`` days with data: how many episodes (by their
        time), documents and procedures (by when they were stored) the caller can read had
        accumulated by the end of that day, whatever their state now."""
        reader, teams = self.caller.reader, self.caller.teams
        end = self.mem.clock.now()
        start = (end - timedelta(days=days - 1)).date()
        cutoff = to_timestamp(datetime(start.year, start.month, start.day, tzinfo=end.tzinfo))
        sources = {
            "episodes": self.mem.episodic.rows.timeline(reader, teams, cutoff),
            "documents": self.mem.semantic.timeline(reader, teams, cutoff),
            "procedures": self.mem.procedural.timeline(reader, teams, cutoff),
        }
        per_day: dict[str, dict[str, int]] = {}
        before: dict[str, int] = {}
        for name, (older, stamps) in sources.items():
            before[name] = older
            counts: dict[str, int] = defaultdict(int)
            for stamp in stamps:
                counts[from_timestamp(stamp).date().isoformat()] += 1
            per_day[name] = counts
        seen = sorted({d for counts in per_day.values() for d in counts})
        if not seen:
            return [], {}
        first = datetime.fromisoformat(seen[0]).date()
        labels = [
            (first + timedelta(days=i)).isoformat() for i in range((end.date() - first).days + 1)
        ]
        series: dict[str, list[float]] = {}
        for name, counts in per_day.items():
            total, values = before[name], []
            for label in labels:
                total += counts.get(label, 0)
                values.append(float(total))
            series[name] = values
        return labels, series

    # -- procedures --------------------------------------------------------------------------

    def procedure_outcomes(self, name: str, limit: int = 200) -> list[dict[str, Any]]:
        """The reported outcomes of a (readable) procedure, oldest first."""
        self.ops.get_procedure(name)
        return self.mem.procedural.outcomes(name, limit)

    # -- recall log ----------------------------------------------------------------------------

    @property
    def _recall_reader(self) -> str | None:
        return None if self.caller.read_all else (self.caller.agent or "")

    def recalls(self, *, agent: str | None = None, limit: int = 20) -> list[RecallRecord]:
        """Logged recalls the caller may see, newest first (an agent: its own)."""
        return self.mem.recall_log.entries(
            agent_name=agent or None, limit=limit, reader=self._recall_reader
        )

    def recall(self, recall_id: str) -> RecallRecord:
        return self.mem.recall_log.get(recall_id, reader=self._recall_reader)

    def recalls_containing(self, item_id: str, layer: str) -> list[RecallRecord]:
        return self.mem.recall_log.containing(
            item_id, layer=layer, limit=20, reader=self._recall_reader
        )

    def item_text(self, layer: str, item_id: str) -> tuple[str, str] | None:
        """(text, link) of a remembered item if the caller may read it now, else None."""
        try:
            if layer == "episodic":
                episode = self.ops.get_episode(item_id)
                return str(episode["description"]), f"/ui/episodes/{item_id}"
            if layer == "semantic" and "/" in item_id:
                collection, _, doc_id = item_id.partition("/")
                doc = self.ops.get_document(collection, doc_id.split("#")[0])
                return str(doc["document"]), f"/ui/knowledge/{collection}/{doc['id']}"
            if layer == "procedural":
                proc = self.ops.get_procedure(item_id)
                return str(proc["template"]), f"/ui/procedures/{item_id}"
        except (NotFoundError, ValidationError):
            return None
        return None

    def known_agents(self) -> list[str]:
        """Agents with a key (admins only may list keys), for the playground's "ask as"."""
        if not self.caller.admin:
            return [self.caller.agent or ""]
        names = {k["agent_name"] for k in self.ops.list_keys()}
        return sorted(names)


def _in_state(episode: dict[str, Any], state: str) -> bool:
    """Whether a (searched, so live) episode is in one of :data:`EPISODE_STATES`."""
    if state == "distilled":
        return episode["distilled_at"] is not None
    if state == "protected":
        return bool(episode["protected"])
    return bool(episode["state"] == state)


def maintenance_runs(entries: Sequence[dict[str, Any]], limit: int = 10) -> list[dict[str, Any]]:
    """Audit entries grouped by run: when each run acted, what it did (actions per policy)
    and how long its actions spanned, newest first."""
    runs: dict[str, dict[str, Any]] = {}
    for entry in entries:
        run = runs.setdefault(
            entry["run_id"],
            {"run_id": entry["run_id"], "first": entry["at"], "last": entry["at"], "actions": {}},
        )
        run["first"] = min(run["first"], entry["at"])
        run["last"] = max(run["last"], entry["at"])
        key = f"{entry['policy']}: {entry['action']}"
        run["actions"][key] = run["actions"].get(key, 0) + 1
    ordered = sorted(runs.values(), key=lambda r: r["last"], reverse=True)[:limit]
    for run in ordered:
        span = datetime.fromisoformat(run["last"]) - datetime.fromisoformat(run["first"])
        run["seconds"] = span.total_seconds()
    return ordered
