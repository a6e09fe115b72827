"""Simulating a fleet of agents over simulated months, to measure memory over time."""

from omoide.simulation.scenario import AGENTS, Event, FleetScenario, Question
from omoide.simulation.scoring import answers, is_current

__all__ = ["AGENTS", "Event", "FleetScenario", "Question", "answers", "is_current"]
