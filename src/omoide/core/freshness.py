"""How memories fade: freshness curves.

A :class:`FreshnessCurve` maps an age in days and a per-item decay rate to a freshness in
[0, 1]. The article's curve is linear (``1 - rate × days``, clamped at 0): with the default
rate 0.01 an episode is 0.5 fresh at 50 days and 0.1 at 90 days. Plug in another curve
through ``Memory(freshness=...)`` or ``EpisodicStore(freshness=...)``.
"""

from __future__ import annotations

import math
from typing import Protocol

__all__ = ["ExponentialDecay", "FreshnessCurve", "LinearDecay", "days_until"]


class FreshnessCurve(Protocol):
    """Freshness of an item ``age_days`` old with decay rate ``decay_rate``."""

    def __call__(self, age_days: float, decay_rate: float) -> float: ...


class LinearDecay:
    """The article's curve: ``max(0, 1 - decay_rate × age_days)``."""

    def __call__(self, age_days: float, decay_rate: float) -> float:
        return min(1.0, max(0.0, 1.0 - decay_rate * max(0.0, age_days)))

    def __repr__(self) -> str:
        return "LinearDecay()"


class ExponentialDecay:
    """``exp(-decay_rate × age_days)``: never reaches zero; halves every ln 2 / rate days."""

    def __call__(self, age_days: float, decay_rate: float) -> float:
        return math.exp(-decay_rate * max(0.0, age_days))

    def __repr__(self) -> str:
        return "ExponentialDecay()"


def days_until(
    curve: FreshnessCurve, decay_rate: float, level: float, *, horizon: float = 36_500.0
) -> float | None:
    """The age in days at which an item of ``decay_rate`` becomes less fresh than ``level``
    on ``curve`` (freshness never rises with age), or None if not within ``horizon`` days.

    Found by bisection, so it holds for any curve: what the pipelines say in their reports
    ("candidates once freshness falls below 0.5, after ~50 days") follows the configured one.
    """
    if curve(0.0, decay_rate) < level:
        return 0.0
    if curve(horizon, decay_rate) >= level:
        return None
    low, high = 0.0, horizon
    while high - low > 0.01:
        middle = (low + high) / 2
        if curve(middle, decay_rate) < level:
            high = middle
        else:
            low = middle
    return high
