"""The fleets the runner can play: the library's own scenario and ones written apart from it.

:data:`SCENARIOS` maps a name to a factory ``(seed, events_per_agent) -> scenario``; a
scenario has ``events(day)``, ``questions(day)`` and ``protected_events``, with the
:class:`~omoide.simulation.scenario.Event` and :class:`~omoide.simulation.scenario.Question`
of :mod:`omoide.simulation.scenario`. ``events_per_agent`` None means the scenario's default.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from bench.scenarios.logistics import LogisticsScenario
from omoide.simulation import FleetScenario
from omoide.simulation.runner import Scenario

__all__ = ["SCENARIOS", "make"]


def _fleet(seed: int, events_per_agent: float | None) -> Scenario:
    return FleetScenario(
        seed, events_per_agent=3.0 if events_per_agent is None else events_per_agent
    )


def _logistics(seed: int, events_per_agent: float | None) -> Scenario:
    return LogisticsScenario(
        seed, events_per_agent=4.0 if events_per_agent is None else events_per_agent
    )


#: Scenario name -> factory. ``fleet``: 24 agents of a software company (the library's own,
#: :mod:`omoide.simulation.scenario`); ``logistics``: 12 agents of a freight company.
SCENARIOS: Mapping[str, Callable[[int, float | None], Scenario]] = {
    "fleet": _fleet,
    "logistics": _logistics,
}


def make(name: str, seed: int, events_per_agent: float | None = None) -> Scenario:
    """A new scenario ``name`` with ``seed``; KeyError names the known ones."""
    if name not in SCENARIOS:
        raise KeyError(f"unknown scenario {name!r}; known: {', '.join(SCENARIOS)}")
    return SCENARIOS[name](seed, events_per_agent)
