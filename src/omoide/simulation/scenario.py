"""A deterministic, seeded year in the life of a 24-agent fleet.

:class:`FleetScenario` plays 24 agents (CEO, CTO, designer, security, content, ...) day by
day: routine chatter, decisions, errors and their fixes, human feedback, conflicts, security
incidents and financial records, in Japanese and English. Some facts change over time (a
price set at ¥500, later ¥800; a dependency approved, later banned), and some items belong to
the never-forget categories. Every week the fleet asks questions whose right answers the
scenario knows: the current value of a changed fact, an error's fix from weeks ago, a
decision another agent made, a human's feedback from months ago.

The same seed always yields the same days, events and questions: the scenario is a pure
function of ``(seed, day)`` given the days before it.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from omoide.simulation.vocabulary import (
    FACTS,
    FEEDBACK,
    FIXES,
    ROUTINE_EN,
    ROUTINE_JA,
    SYMPTOMS,
    SYSTEMS,
    SYSTEMS_JA,
    TOPICS,
    Fact,
)

__all__ = ["AGENTS", "Event", "FleetScenario", "Question"]

AGENTS: tuple[str, ...] = (
    "ceo",
    "cto",
    "cfo",
    "coo",
    "designer",
    "security",
    "content",
    "marketing",
    "sales",
    "support",
    "legal",
    "hr",
    "data",
    "devops",
    "qa",
    "frontend",
    "backend",
    "mobile",
    "research",
    "pm",
    "finance",
    "ops",
    "community",
    "translator",
)


@dataclass(frozen=True)
class Event:
    """Something an agent writes to memory on a given day."""

    id: str
    day: int
    minute: int  # minutes after midnight
    agent: str
    event_type: str
    description: str
    outcome: str | None = None
    importance: float | None = None
    tags: tuple[str, ...] = ()
    context: dict[str, Any] = field(default_factory=dict)
    #: A never-forget category this item belongs to, if any.
    protected: str | None = None
    #: For decisions that set a changing fact: (subject, value).
    fact: tuple[str, str] | None = None
    #: For an error's fix: the id of the error episode it resolves.
    resolves: str | None = None


@dataclass(frozen=True)
class Question:
    """A question asked on ``day`` whose right answer the scenario knows."""

    day: int
    asker: str
    text: str
    kind: str  # current_fact | error_fix | decision | feedback
    #: The answer is right when a returned text contains this.
    expected: str
    #: Superseded values: the top result must not state one of these (current_fact).
    forbidden: tuple[str, ...] = ()
    #: A right answer also names this (the incident code, the deciding agent).
    anchor: str = ""
    #: Event id of the memory that holds the answer.
    source: str = ""


class FleetScenario:
    """Generate days of fleet activity and the questions that test memory of it.

    ``events_per_agent`` is the mean number of events each agent writes per day.
    """

    def __init__(
        self, seed: int = 7, *, events_per_agent: float = 3.0, japanese_share: float = 0.5
    ) -> None:
        self.seed = seed
        self.events_per_agent = events_per_agent
        self.japanese_share = japanese_share
        self._fact_values: dict[str, list[tuple[int, str]]] = {}
        self._open_errors: list[tuple[Event, int]] = []  # (error, day it gets fixed)
        self._fixed: list[tuple[Event, Event]] = []  # (error, fix)
        self._decisions: list[Event] = []
        self._feedback: list[Event] = []
        self._protected: list[Event] = []
        self._day = -1
        self._counter = 0

    # -- state the runner and scoring read --------------------------------------------

    def current_value(self, subject: str) -> str | None:
        history = self._fact_values.get(subject)
        return history[-1][1] if history else None

    @property
    def protected_events(self) -> list[Event]:
        """Every never-forget event generated so far."""
        return list(self._protected)

    # -- generation --------------------------------------------------------------------

    def days(self, count: int) -> Iterator[tuple[int, list[Event], list[Question]]]:
        """Yield ``(day, events, questions)`` for days 0 .. count-1, in order."""
        for day in range(count):
            events = self.events(day)
            yield day, events, self.questions(day)

    def events(self, day: int) -> list[Event]:
        """The events of ``day`` (days must be generated in order, each once)."""
        if day != self._day + 1:
            raise ValueError(f"days are generated in order; expected day {self._day + 1}")
        self._day = day
        rng = random.Random(f"{self.seed}:events:{day}")
        events: list[Event] = []
        if day == 0:
            for fact in FACTS:  # every fact starts with its first value
                events.append(self._set_fact(rng, day, fact, fact.values[0]))
        for fact in FACTS:
            history = self._fact_values.get(fact.subject, [])
            if day > 0 and rng.random() < 1 / 45 and len(history) < len(fact.values) + 2:
                choices = [v for v in fact.values if v != history[-1][1]]
                events.append(self._set_fact(rng, day, fact, rng.choice(choices)))
        for error, fix_day in list(self._open_errors):
            if fix_day == day:
                events.append(self._fix(rng, day, error))
                self._open_errors.remove((error, fix_day))
        for agent in AGENTS:
            for _ in range(_poisson(rng, self.events_per_agent)):
                events.append(self._agent_event(rng, day, agent))
        return sorted(events, key=lambda e: (e.minute, e.id))

    def _id(self, day: int) -> str:
        self._counter += 1
        return f"sim-{self.seed}-{day:03d}-{self._counter:06d}"

    def _ja(self, rng: random.Random) -> bool:
        return rng.random() < self.japanese_share

    def _set_fact(self, rng: random.Random, day: int, fact: Fact, value: str) -> Event:
        text = (fact.ja if self._ja(rng) else fact.en).format(value=value)
        self._fact_values.setdefault(fact.subject, []).append((day, value))
        event = Event(
            self._id(day),
            day,
            rng.randrange(540, 1080),
            fact.owner,
            "decision",
            text,
            importance=0.8,
            tags=("fact", fact.subject),
            fact=(fact.subject, value),
        )
        return event

    def _fix(self, rng: random.Random, day: int, error: Event) -> Event:
        fix = error.context["fix"]
        code = error.context["code"]
        text = f"{code}を修正: {fix}" if self._ja(rng) else f"Fixed {code}: we {fix}."
        event = Event(
            self._id(day),
            day,
            rng.randrange(540, 1080),
            error.agent,
            "success",
            text,
            outcome=f"{code} resolved: {fix}",
            tags=("fix", code),
            resolves=error.id,
        )
        self._fixed.append((error, event))
        return event

    def _agent_event(self, rng: random.Random, day: int, agent: str) -> Event:
        """One agent's event of a day. Long because it is the scenario's table of event kinds
        and their probabilities, one branch each.
        """
        minute = rng.randrange(480, 1200)
        roll = rng.random()
        ja = self._ja(rng)
        if roll < 0.62:  # routine chatter: low importance, meant to be forgotten
            text = rng.choice(ROUTINE_JA if ja else ROUTINE_EN)
            return Event(
                self._id(day),
                day,
                minute,
                agent,
                "observation",
                text,
                importance=round(rng.uniform(0.1, 0.4), 2),
                tags=("routine",),
            )
        if roll < 0.72:  # an error, fixed a few days later
            index = rng.randrange(len(SYSTEMS))
            code = f"E-{day:03d}{rng.randrange(100):02d}"
            symptom = rng.choice(SYMPTOMS)
            fix = rng.choice(FIXES)
            text = (
                f"{SYSTEMS_JA[index]}で障害 {code}: {symptom}"
                if ja
                else f"Incident {code}: the {SYSTEMS[index]} {symptom}."
            )
            event = Event(
                self._id(day),
                day,
                minute,
                agent,
                "error",
                text,
                tags=("incident",),
                context={"code": code, "system": SYSTEMS[index], "fix": fix},
            )
            self._open_errors.append((event, day + rng.randrange(1, 6)))
            return event
        if roll < 0.80:  # a decision on a topic
            topic, choices = rng.choice(TOPICS)
            topic = topic.format(q=1 + (day // 91) % 4)
            choice = rng.choice(choices)
            text = (
                f"{agent}の決定: {topic}は「{choice}」とする。"
                if ja
                else f"{agent.upper()} decided that {topic} is {choice}."
            )
            event = Event(
                self._id(day),
                day,
                minute,
                agent,
                "decision",
                text,
                tags=("decision",),
                context={"topic": topic, "choice": choice},
            )
            self._decisions.append(event)
            return event
        if roll < 0.86:  # human feedback: never forgotten
            area, said = rng.choice(FEEDBACK)
            text = (
                f"オペレーターからのフィードバック（{area}）: {said}"
                if ja
                else f"Operator feedback on {area}: {said}."
            )
            event = Event(
                self._id(day),
                day,
                minute,
                agent,
                "feedback",
                text,
                tags=("human_feedback", area),
                context={"area": area, "said": said},
                protected="human_feedback",
            )
            self._feedback.append(event)
            self._protected.append(event)
            return event
        if roll < 0.90:  # a conflict between two agents
            other = rng.choice([a for a in AGENTS if a != agent])
            text = (
                f"{agent}と{other}が新しい依存パッケージの採用で対立した"
                if ja
                else f"{agent} and {other} disagree about adopting a new dependency."
            )
            return Event(self._id(day), day, minute, agent, "conflict", text, tags=("conflict",))
        if roll < 0.93:  # security incident: never forgotten
            text = (
                f"セキュリティインシデント: {agent}のAPIキーが漏洩した疑い（SEC-{day:03d}）"
                if ja
                else f"Security incident SEC-{day:03d}: a leaked API key of {agent} was revoked."
            )
            event = Event(
                self._id(day),
                day,
                minute,
                agent,
                "security_incident",
                text,
                importance=1.0,
                tags=("security_incidents",),
                protected="security_incidents",
            )
            self._protected.append(event)
            return event
        if roll < 0.96:  # financial record: never forgotten
            amount = rng.randrange(10, 500) * 1000
            text = (
                f"請求書INV-{day:03d}-{agent}を支払った: ¥{amount:,}"
                if ja
                else f"Paid invoice INV-{day:03d}-{agent}: ¥{amount:,}."
            )
            event = Event(
                self._id(day),
                day,
                minute,
                agent,
                "financial",
                text,
                importance=0.6,
                tags=("financial_records",),
                protected="financial_records",
            )
            self._protected.append(event)
            return event
        text = (
            f"{agent}のタスクが完了した（品質スコア{rng.randrange(60, 100)}）"
            if ja
            else f"{agent} finished a task with quality score {rng.randrange(60, 100)}."
        )
        return Event(self._id(day), day, minute, agent, "success", text, tags=("task",))

    def questions(self, day: int) -> list[Question]:
        """The questions asked on ``day`` (every seventh day), after that day's events.

        Long because each question kind of the scenario is generated in its own short block, in one
        place.
        """
        if day % 7 != 6:
            return []
        rng = random.Random(f"{self.seed}:questions:{day}")
        asked: list[Question] = []
        for fact in FACTS:
            history = self._fact_values.get(fact.subject, [])
            if not history:
                continue
            current = history[-1][1]
            old = tuple(dict.fromkeys(v for _, v in history[:-1] if v != current))
            asked.append(
                Question(
                    day,
                    rng.choice(AGENTS),
                    fact.ask_ja if self._ja(rng) else fact.ask_en,
                    "current_fact",
                    current,
                    old,
                )
            )
        old_fixes = [(e, f) for e, f in self._fixed if day - f.day >= 14]
        for error, fix in rng.sample(old_fixes, min(3, len(old_fixes))):
            code = error.context["code"]
            text = (
                f"障害{code}はどうやって直した？"
                if self._ja(rng)
                else f"How did we fix incident {code}?"
            )
            asked.append(
                Question(
                    day,
                    rng.choice(AGENTS),
                    text,
                    "error_fix",
                    error.context["fix"],
                    source=fix.id,
                    anchor=code,
                )
            )
        # A decision is asked about only while it is its agent's latest word on the topic.
        latest: dict[tuple[str, str], Event] = {}
        for d in self._decisions:
            latest[(d.agent, d.context["topic"])] = d
        old_decisions = [d for d in latest.values() if day - d.day >= 7]
        for decision in rng.sample(old_decisions, min(2, len(old_decisions))):
            topic = decision.context["topic"]
            text = (
                f"{decision.agent}は{topic}について何を決めた？"
                if self._ja(rng)
                else f"What did {decision.agent} decide about {topic}?"
            )
            asked.append(
                Question(
                    day,
                    rng.choice([a for a in AGENTS if a != decision.agent]),
                    text,
                    "decision",
                    decision.context["choice"],
                    source=decision.id,
                    anchor=decision.agent,
                )
            )
        old_feedback = [f for f in self._feedback if day - f.day >= 30]
        for feedback in rng.sample(old_feedback, min(2, len(old_feedback))):
            area = feedback.context["area"]
            text = (
                f"オペレーターは{area}について何と言っていた？"
                if self._ja(rng)
                else f"What did the operator tell us about {area}?"
            )
            asked.append(
                Question(
                    day,
                    rng.choice(AGENTS),
                    text,
                    "feedback",
                    feedback.context["said"],
                    source=feedback.id,
                )
            )
        return asked


def _poisson(rng: random.Random, mean: float) -> int:
    """A Poisson draw by inversion (small means; the stdlib has no Poisson)."""
    limit, k, product = pow(2.718281828459045, -mean), 0, rng.random()
    while product > limit:
        k += 1
        product *= rng.random()
    return k
