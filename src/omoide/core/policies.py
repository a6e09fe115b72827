"""Policies as data: forgetting policies and the daily schedule, parsed and validated.

Configuration (:mod:`omoide.core.config`) holds them as plain tables and strings; these
classes turn them into checked values, so a bad policy or schedule fails when the
configuration loads, before any pipeline runs. The pipelines that act on them
(:mod:`omoide.pipelines.forgetting`, :mod:`omoide.pipelines.scheduler`) import them from here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta, tzinfo
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from omoide.core.conditions import Condition, parse_condition
from omoide.errors import ConditionSyntaxError, ConfigError, UnknownLayerError, ValidationError

__all__ = [
    "ACTIONS",
    "FORGETTABLE_LAYERS",
    "ForgettingPolicy",
    "Schedule",
    "policies_from_config",
]

#: What a forgetting policy may do to an item.
ACTIONS = ("delete", "archive", "compress")
#: The layers forgetting policies act on (working memory overflows; procedures are versioned).
FORGETTABLE_LAYERS = ("episodic", "semantic")

_TIME = re.compile(r"^([01]?\d|2[0-3]):([0-5]\d)(?:\s+(\S+))?$")

_POLICY_KEYS = {"name", "target_layer", "condition", "action", "grace_period_days"}


@dataclass(frozen=True)
class ForgettingPolicy:
    """A rule for forgetting: which items of a layer, what to do, after how long.

    The condition is parsed on construction: a malformed one raises
    :class:`~omoide.errors.ConditionSyntaxError` here, not when the policy runs.
    """

    name: str
    target_layer: str
    condition: str
    action: str
    grace_period_days: float = 0
    compiled: Condition = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValidationError("name", "a policy needs a non-empty name")
        if self.target_layer not in FORGETTABLE_LAYERS:
            raise UnknownLayerError(
                self.target_layer, list(FORGETTABLE_LAYERS), field="target_layer"
            )
        if self.action not in ACTIONS:
            raise ValidationError(
                "action", f"expected one of {', '.join(ACTIONS)}, got {self.action!r}"
            )
        grace = self.grace_period_days
        if isinstance(grace, bool) or not isinstance(grace, int | float) or not grace >= 0:
            raise ValidationError("grace_period_days", f"expected a number >= 0, got {grace!r}")
        compiled = parse_condition(self.condition, self.target_layer, label=f"policy {self.name!r}")
        object.__setattr__(self, "compiled", compiled)

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], where: str = "policy") -> ForgettingPolicy:
        """A policy from configuration data (a TOML table)."""
        unknown = set(data) - _POLICY_KEYS
        if unknown:
            raise ValidationError(f"{where}.{sorted(unknown)[0]}", "unknown policy key")
        missing = {"name", "target_layer", "condition", "action"} - set(data)
        if missing:
            raise ValidationError(f"{where}.{sorted(missing)[0]}", "is required")
        try:
            return cls(**dict(data))
        except ConditionSyntaxError:
            raise
        except ValidationError as exc:
            raise ValidationError(f"{where}.{exc.field}", exc.message) from None


def policies_from_config(
    policies: Iterable[Mapping[str, Any] | ForgettingPolicy],
) -> list[ForgettingPolicy]:
    """Build (and so validate) the configured policies; names must be unique."""
    built: list[ForgettingPolicy] = []
    for i, spec in enumerate(policies):
        policy = (
            spec
            if isinstance(spec, ForgettingPolicy)
            else ForgettingPolicy.from_mapping(spec, f"forgetting.policies[{i}]")
        )
        if any(p.name == policy.name for p in built):
            raise ValidationError(
                f"forgetting.policies[{i}].name", f"policy {policy.name!r} is defined twice"
            )
        built.append(policy)
    return built


@dataclass(frozen=True)
class Schedule:
    """A daily time of day, in a zone (None: the zone of the clock's ``now()``)."""

    hour: int
    minute: int
    zone: tzinfo | None = None

    @classmethod
    def parse(cls, text: str) -> Schedule:
        """``"HH:MM"`` or ``"HH:MM Area/City"``; ConfigError otherwise."""
        match = _TIME.match(text.strip()) if isinstance(text, str) else None
        if match is None:
            raise ConfigError(
                f"distill.schedule: expected 'HH:MM' or 'HH:MM Area/City', got {text!r}"
            )
        zone: tzinfo | None = None
        if match.group(3):
            try:
                zone = ZoneInfo(match.group(3))
            except (ZoneInfoNotFoundError, ValueError):
                raise ConfigError(
                    f"distill.schedule: unknown time zone {match.group(3)!r}"
                ) from None
        return cls(int(match.group(1)), int(match.group(2)), zone)

    def _slot(self, day: datetime) -> datetime:
        return day.replace(hour=self.hour, minute=self.minute, second=0, microsecond=0)

    def latest(self, moment: datetime) -> datetime:
        """The last scheduled time at or before ``moment``."""
        local = moment.astimezone(self.zone) if self.zone else moment
        slot = self._slot(local)
        if slot > local:
            slot = self._slot(local - timedelta(days=1))
        return slot

    def following(self, moment: datetime) -> datetime:
        """The first scheduled time strictly after ``moment``."""
        local = moment.astimezone(self.zone) if self.zone else moment
        slot = self._slot(local)
        if slot <= local:
            slot = self._slot(local + timedelta(days=1))
        return slot
