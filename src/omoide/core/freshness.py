"""How memories fade: freshness curves.

A :class:`FreshnessCurve` maps an age in days and a per-item decay rate to a freshness in
[0, 1]. The article's curve is linear (``1 - rate × days``, clamped at 0): with the default
rate 0.01 an episode is 0.5 fresh at 50 days and 0.1 at 90 days. Plug in another curve
through ``Memory(freshness=...)`` or ``EpisodicStore(freshness=...)``.
"""

from __future__ import annotations

import math
from typing import Protocol

__all__ = ["ExponentialDecay", "FreshnessCurve", "LinearDecay"]


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
