"""A second fleet, written apart from the first: twelve agents of a freight and warehouse company.

:class:`LogisticsScenario` plays a dispatcher, a warehouse lead, fleet maintenance, a customs
broker, a buyer, billing, safety, route planning, the client desk, IT operations and crew
scheduling, day by day, in Japanese and English: routine chatter, decisions on orders, routes
and carriers, breakdowns of scanners, reefer units, purchase orders, customs entries and the
dispatch app with their fixes (``HX-88``, ``rack B7``, ``PO#4471``, ``truck T-27``), operator
feedback (as ``feedback`` events, some marked as coming from a human, and as prose inside
other events), never-forget records (dangerous-goods logs, settled freight bills, security
reports), and standing facts (roll call time, the returns dock, the live WMS release, ...)
that change now and then. Facts are only ever prose: no ``subject``, no tag says which fact a
sentence is about, and the agent who announces a change is often not the one who set the
value first.

Every seventh day the fleet asks, in either language whatever the language of the answer:
the current value of each fact stated so far (the first item must state it and no older
value), how an error was fixed, what was decided for an order, a route or an account, what
an operator said about an area. Questions paraphrase; some name a time ("先月", "two weeks
ago") that holds their answer. Each question's ``source`` is the event that holds its answer.

The same seed gives the same days, events and questions; :class:`Event` and :class:`Question`
are those of :mod:`omoide.simulation.scenario`, so the same runner plays either fleet.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

from bench.scenarios.logistics_words import (
    AGENTS,
    CHATTER_EN,
    CHATTER_JA,
    DECISIONS,
    FACTS,
    FEEDBACK,
    SYSTEMS,
    Fact,
    System,
)
from omoide.simulation.scenario import Event, Question

__all__ = ["AGENTS", "LogisticsScenario"]

#: Day 0 of the runner (a Monday), for calendar time expressions in questions.
START = datetime(2026, 1, 5, tzinfo=UTC)
_EN_NUMBERS = {2: "two", 3: "three", 4: "four", 5: "five", 6: "six"}


class LogisticsScenario:
    """Generate the logistics fleet's days and the questions that test memory of them.

    ``events_per_agent`` is the mean number of an agent's own events per day (twelve agents
    at 4.0 write about fifty episodes a day with the facts and fixes).
    """

    agents = AGENTS

    def __init__(
        self, seed: int = 7, *, events_per_agent: float = 4.0, japanese_share: float = 0.5
    ) -> None:
        self.seed = seed
        self.events_per_agent = events_per_agent
        self.japanese_share = japanese_share
        self._facts: dict[str, list[tuple[str, Event]]] = {}  # key -> [(value, statement)]
        self._open: list[tuple[Event, int]] = []  # (error, day it gets fixed)
        self._fixed: list[tuple[Event, Event]] = []
        self._decisions: dict[str, Event] = {}  # identifier -> latest decision
        self._feedback: list[Event] = []
        #: What the scenario knows of an event and the store is not told (its area, its
        #: fix, ...), by event id.
        self._meta: dict[str, dict[str, Any]] = {}
        self._protected: list[Event] = []
        self._day = -1
        self._counter = 0
        self._tickets = 80

    @property
    def protected_events(self) -> list[Event]:
        """Every never-forget event generated so far."""
        return list(self._protected)

    def current_value(self, key: str) -> str | None:
        """The value a fact has now (None before it is first stated)."""
        history = self._facts.get(key)
        return history[-1][0] if history else None

    def days(self, count: int) -> Iterator[tuple[int, list[Event], list[Question]]]:
        """Yield ``(day, events, questions)`` for days 0 .. count-1."""
        for day in range(count):
            events = self.events(day)
            yield day, events, self.questions(day)

    # -- events -------------------------------------------------------------------------

    def events(self, day: int) -> list[Event]:
        """The events of ``day`` (days are generated in order, each once)."""
        if day != self._day + 1:
            raise ValueError(f"days are generated in order; expected day {self._day + 1}")
        self._day = day
        rng = random.Random(f"logistics:{self.seed}:events:{day}")
        events: list[Event] = []
        for index, fact in enumerate(FACTS):
            history = self._facts.get(fact.key, [])
            if not history and day == index % 4:
                events.append(self._state(rng, day, fact, fact.values[0], change=False))
            elif history and day > 10 and rng.random() < 1 / 30 and len(history) < 8:
                used = {v for v, _ in history}
                fresh = [v for v in fact.values if v not in used]
                pool = fresh or [v for v in fact.values if v != history[-1][0]]
                events.append(self._state(rng, day, fact, rng.choice(pool), change=True))
        for error, fix_day in list(self._open):
            if fix_day == day:
                events.append(self._fix(rng, day, error))
                self._open.remove((error, fix_day))
        for agent in AGENTS:
            for _ in range(_poisson(rng, self.events_per_agent)):
                events.append(self._agent_event(rng, day, agent))
        return sorted(events, key=lambda e: (e.minute, e.id))

    def _id(self, day: int) -> str:
        self._counter += 1
        return f"lg-{self.seed}-{day:03d}-{self._counter:06d}"

    def _ja(self, rng: random.Random) -> bool:
        return rng.random() < self.japanese_share

    def _state(
        self, rng: random.Random, day: int, fact: Fact, value: str, *, change: bool
    ) -> Event:
        """A prose statement of a fact's value (a change, a first statement or a reminder)."""
        ja = self._ja(rng)
        if change:
            text = rng.choice(fact.change_ja if ja else fact.change_en).format(v=value)
        else:
            text = rng.choice(fact.state_ja if ja else fact.state_en).format(v=value)
            if self._facts.get(fact.key):
                text = ("念のため再掲：" if ja else "Reminder: ") + text
        event = Event(
            self._id(day),
            day,
            rng.randrange(420, 1140),
            rng.choice(fact.owners),
            rng.choice(("message", "observation", "decision")),
            text,
            tags=(rng.choice(("announcement", "ops", "notice")),),
        )
        self._facts.setdefault(fact.key, []).append((value, event))
        return event

    def _fix(self, rng: random.Random, day: int, error: Event) -> Event:
        """The fix of an open error, by one of the system's owners, as a success or a note."""
        c = self._meta[error.id]
        system = SYSTEMS[c["system"]]
        fix_ja, fix_en = system.fixes[c["fix"]]
        ja = self._ja(rng)
        if ja:
            text = rng.choice(
                (
                    f"{c['ticket']}解決：{c['ident']}の{system.name_ja}、{fix_ja}。",
                    f"{c['ident']}の件（{c['ticket']}）、{fix_ja}ところ復旧した。",
                )
            )
        else:
            text = rng.choice(
                (
                    f"{c['ticket']} closed: on {c['ident']} we {fix_en}.",
                    f"Follow-up on {c['ident']}: {fix_en}, so {c['ticket']} is done.",
                )
            )
        event = Event(
            self._id(day),
            day,
            rng.randrange(420, 1140),
            rng.choice(system.owners),
            rng.choice(("success", "success", "observation")),
            text,
            tags=("ticket",),
            context={"ticket": c["ticket"]},
            resolves=error.id,
        )
        self._fixed.append((error, event))
        return event

    def _agent_event(self, rng: random.Random, day: int, agent: str) -> Event:
        """One of an agent's own events: the scenario's table of event kinds, one branch each."""
        minute = rng.randrange(420, 1200)
        roll = rng.random()
        if roll < 0.56:
            return self._chatter(rng, day, minute, agent)
        if roll < 0.64:
            return self._error(rng, day, minute, agent)
        if roll < 0.72:
            return self._decision(rng, day, minute, agent)
        if roll < 0.77:
            return self._feedback_event(rng, day, minute, agent)
        if roll < 0.82:
            return self._record(rng, day, minute, agent)
        if roll < 0.85:
            facts = [f for f in FACTS if agent in f.owners and self._facts.get(f.key)]
            if facts:
                fact = rng.choice(facts)
                value = self._facts[fact.key][-1][0]
                return self._state(rng, day, fact, value, change=False)
        ja = self._ja(rng)
        route, pallets = rng.randrange(10, 99), rng.randrange(4, 33)
        text = (
            f"R-{route}便に{pallets}パレットを定刻どおり積み込み完了。"
            if ja
            else f"Loaded {pallets} pallets onto the R-{route} run on schedule."
        )
        return Event(self._id(day), day, minute, agent, "success", text, tags=("loading",))

    def _chatter(self, rng: random.Random, day: int, minute: int, agent: str) -> Event:
        template = rng.choice(CHATTER_JA if self._ja(rng) else CHATTER_EN)
        text = template.format(
            z=rng.choice("PQRSTU"),
            l=rng.randrange(1, 9),
            n=rng.randrange(100, 140),
            k=rng.randrange(3, 40),
        )
        importance = round(rng.uniform(0.1, 0.35), 2)
        return Event(self._id(day), day, minute, agent, "observation", text, importance=importance)

    def _error(self, rng: random.Random, day: int, minute: int, agent: str) -> Event:
        index = rng.randrange(len(SYSTEMS))
        system: System = SYSTEMS[index]
        rack = f"{rng.choice('ABCDE')}{rng.randrange(1, 10)}"
        ident = system.ident.format(n=rng.randrange(10, 9999), r=rack)
        if "T-" in system.ident:
            ident = system.ident.format(n=rng.randrange(10, 60))
        self._tickets += 1
        ticket = f"HX-{self._tickets}"
        symptom = rng.randrange(len(system.symptoms))
        ja_s, en_s, _, _ = system.symptoms[symptom]
        text = (
            f"{ticket}起票：{ident}の{system.name_ja}が{ja_s}。"
            if self._ja(rng)
            else f"Opened {ticket}: the {system.name_en} on {ident} {en_s}."
        )
        event = Event(
            self._id(day),
            day,
            minute,
            agent if agent in system.owners else rng.choice(system.owners),
            "error",
            text,
            tags=("ticket",),
            context={"ticket": ticket},
        )
        self._meta[event.id] = {
            "ticket": ticket,
            "ident": ident,
            "system": index,
            "symptom": symptom,
            "fix": rng.randrange(len(system.fixes)),
        }
        self._open.append((event, day + rng.randrange(1, 5)))
        return event

    def _decision(self, rng: random.Random, day: int, minute: int, agent: str) -> Event:
        index = rng.randrange(len(DECISIONS))
        kind = DECISIONS[index]
        ident = kind.ident.format(
            n=rng.randrange(1000, 9999) if "PO" in kind.ident else rng.randrange(10, 999)
        )
        choice = rng.choice(kind.choices)
        template = rng.choice(kind.say_ja if self._ja(rng) else kind.say_en)
        event = Event(
            self._id(day),
            day,
            minute,
            rng.choice(kind.owners),
            "decision",
            template.format(id=ident, c=choice),
            tags=("decision",),
        )
        self._meta[event.id] = {"kind": index, "ident": ident, "choice": choice}
        self._decisions[ident] = event
        return event

    def _feedback_event(self, rng: random.Random, day: int, minute: int, agent: str) -> Event:
        """Operator feedback: from a human (protected), as an unsourced ``feedback`` event, or
        as prose inside an observation."""
        index = rng.randrange(len(FEEDBACK))
        area = FEEDBACK[index]
        period = (day // 40) % len(area.said)
        said_ja, said_en = area.said[period]
        # One operator per area and period: what they said is said in one language.
        ja, style = (index + day // 40) % 2 == 0, rng.random()
        context: dict[str, Any] = {}
        if style < 0.4:
            text = (
                f"センター長より{area.area_ja}について：{said_ja}。"
                if ja
                else f"Operator feedback on {area.area_en}: {said_en}."
            )
            event = Event(
                self._id(day), day, minute, agent, "feedback", text,
                context={"from": "human"}, protected="human_feedback",
            )  # fmt: skip
            self._protected.append(event)
        elif style < 0.7:
            text = (
                f"現場責任者の意見（{area.area_ja}）— {said_ja}、とのこと。"
                if ja
                else f"Site manager's view on {area.area_en}: {said_en}, please."
            )
            event = Event(self._id(day), day, minute, agent, "feedback", text, context=context)
        else:
            text = (
                f"今日の巡回で所長から指示あり。{area.area_ja}は{said_ja}。"
                if ja
                else f"Walk-through today: the site lead asked us to {said_en} ({area.area_en})."
            )
            event = Event(self._id(day), day, minute, agent, "observation", text, context=context)
        self._feedback.append(event)
        self._meta[event.id] = {"area": index, "period": period, "said": said_ja if ja else said_en}
        return event

    def _record(self, rng: random.Random, day: int, minute: int, agent: str) -> Event:
        """A never-forget record, marked by event type, by tag or by a category field."""
        ja, roll = self._ja(rng), rng.random()
        n = rng.randrange(1000, 9999)
        if roll < 0.4:
            litres = rng.randrange(200, 4000)
            text = (
                f"危険物輸送記録 HZ-{n}：UN1203 {litres}L、書類確認済み。"
                if ja
                else f"Dangerous goods log HZ-{n}: UN1203, {litres} L, paperwork checked."
            )
            kind, protected, tags, context = "compliance_event", "compliance_events", (), {}
        elif roll < 0.8:
            amount = rng.randrange(20, 900) * 1000
            text = (
                f"運賃精算 BL-{n}：¥{amount:,}を支払済み。"
                if ja
                else f"Freight bill BL-{n} settled: ¥{amount:,}."
            )
            kind, protected, tags, context = (
                "payment",
                "financial_records",
                ("financial_records",),
                {},
            )
        else:
            trailer = rng.randrange(10, 60)
            text = (
                f"警備報告：トレーラーT-{trailer}の封印SL-{n}が切断されていた。警察に届出済み。"
                if ja
                else f"Security report: seal SL-{n} on trailer T-{trailer} found cut; police told."
            )
            kind, protected, tags = "report", "security_incidents", ()
            context = {"category": "security_incidents"}
        event = Event(
            self._id(day), day, minute, agent, kind, text, importance=0.9,
            tags=tags, context=context, protected=protected,
        )  # fmt: skip
        self._protected.append(event)
        return event

    # -- questions ------------------------------------------------------------------------

    def questions(self, day: int) -> list[Question]:
        """The questions of ``day`` (every seventh day), asked after that day's events."""
        if day % 7 != 6:
            return []
        rng = random.Random(f"logistics:{self.seed}:questions:{day}")
        asked = [self._fact_question(rng, day, f) for f in FACTS if self._facts.get(f.key)]
        fixes = [(e, f) for e, f in self._fixed if day - f.day >= 10]
        for error, fix in rng.sample(fixes, min(4, len(fixes))):
            asked.append(self._fix_question(rng, day, error, fix))
        decisions = [d for d in self._decisions.values() if day - d.day >= 7]
        for decision in rng.sample(decisions, min(3, len(decisions))):
            asked.append(self._decision_question(rng, day, decision))
        # Feedback is asked about while it is still the operator's latest word on its area.
        latest = {self._meta[f.id]["area"]: self._meta[f.id]["period"] for f in self._feedback}
        old = [
            f
            for f in self._feedback
            if day - f.day >= 21 and latest[self._meta[f.id]["area"]] == self._meta[f.id]["period"]
        ]
        for feedback in rng.sample(old, min(3, len(old))):
            asked.append(self._feedback_question(rng, day, feedback))
        return asked

    def _asker(self, rng: random.Random, not_: str = "") -> str:
        return rng.choice([a for a in AGENTS if a != not_])

    def _fact_question(self, rng: random.Random, day: int, fact: Fact) -> Question:
        history = self._facts[fact.key]
        current, statement = history[-1]
        old = tuple(dict.fromkeys(v for v, _ in history if v != current))
        text = rng.choice(fact.ask_ja if self._ja(rng) else fact.ask_en)
        return Question(
            day, self._asker(rng), text, "current_fact", current, old, source=statement.id
        )

    def _fix_question(self, rng: random.Random, day: int, error: Event, fix: Event) -> Question:
        c = self._meta[error.id]
        system = SYSTEMS[c["system"]]
        _, _, asked_ja, asked_en = system.symptoms[c["symptom"]]
        fix_ja, fix_en = system.fixes[c["fix"]]
        ja = self._ja(rng)
        when = _when(rng, day, fix.day, ja)
        # The thing that broke names the incident only if nothing else broke there.
        same = sum(1 for m in self._meta.values() if m.get("ident") == c["ident"])
        by_ticket = same > 1 or rng.random() < 0.4
        anchor = c["ticket"] if by_ticket else c["ident"]
        if ja:
            text = (
                f"{when}{c['ticket']}はどう対処したんだっけ？"
                if by_ticket
                else f"{when}{c['ident']}で{system.name_ja}が{asked_ja}件、何をして直した？"
            )
        else:
            text = (
                f"What was the remedy for {c['ticket']}{' ' + when if when else ''}?"
                if by_ticket
                else f"What got the {system.name_en} at {c['ident']} back in shape ({asked_en})"
                f"{' ' + when if when else ''}?"
            )
        expected = fix_ja if _is_ja(fix.description) else fix_en
        return Question(
            day, self._asker(rng), text, "error_fix", expected, anchor=anchor, source=fix.id
        )

    def _decision_question(self, rng: random.Random, day: int, decision: Event) -> Question:
        meta = self._meta[decision.id]
        kind = DECISIONS[meta["kind"]]
        ja = self._ja(rng)
        text = rng.choice(kind.ask_ja if ja else kind.ask_en).format(id=meta["ident"])
        return Question(
            day,
            self._asker(rng, decision.agent),
            text,
            "decision",
            meta["choice"],
            anchor=meta["ident"],
            source=decision.id,
        )

    def _feedback_question(self, rng: random.Random, day: int, feedback: Event) -> Question:
        meta = self._meta[feedback.id]
        area = FEEDBACK[meta["area"]]
        ja = self._ja(rng)
        when = _when(rng, day, feedback.day, ja)
        if ja:
            text = f"{when}{area.asked_ja}について、現場の責任者から何と言われた？"
        else:
            later = f" {when}" if when else ""
            text = f"What did management ask of us regarding {area.asked_en}{later}?"
        return Question(
            day,
            self._asker(rng),
            text,
            "feedback",
            meta["said"],
            source=feedback.id,
        )


def _is_ja(text: str) -> bool:
    return any("\u3040" <= ch <= "\u30ff" or "\u4e00" <= ch <= "\u9fff" for ch in text)


def _when(rng: random.Random, day: int, then: int, ja: bool) -> str:
    """Sometimes a time expression that holds day ``then`` as seen on ``day`` ("" otherwise):
    last week, N weeks ago (calendar weeks, Monday first) or last month."""
    if rng.random() > 0.45:
        return ""
    options: list[str] = []
    weeks = day // 7 - then // 7  # day 0 is a Monday
    if weeks == 1:
        options.append("先週" if ja else "last week")
    elif 2 <= weeks <= 6:
        options.append(f"{weeks}週間前に" if ja else f"{_EN_NUMBERS[weeks]} weeks ago")
    now, past = START + timedelta(days=day), START + timedelta(days=then)
    if (now.year * 12 + now.month) - (past.year * 12 + past.month) == 1:
        options.append("先月" if ja else "last month")
    if not options:
        return ""
    phrase = rng.choice(options)
    return phrase + ("、" if ja and not phrase.endswith("に") else "")


def _poisson(rng: random.Random, mean: float) -> int:
    """A Poisson draw by inversion (small means)."""
    limit, k, product = pow(2.718281828459045, -mean), 0, rng.random()
    while product > limit:
        k += 1
        product *= rng.random()
    return k
