"""What the pipelines report: a distillation run's :class:`DistillReport`, and why a run of
distillation or forgetting did nothing, in words (the reports' ``reason``), so that a new
store's empty runs explain themselves.

The waits are computed from the configured freshness curve (:func:`~omoide.core.freshness.
days_until`), never written down as constants: another curve or decay rate changes them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from omoide.core.config import DistillConfig
from omoide.core.freshness import FreshnessCurve, days_until
from omoide.core.policies import ForgettingPolicy

__all__ = ["DistillReport", "SkippedCluster", "distill_reason", "forget_reason"]


@dataclass(frozen=True)
class SkippedCluster:
    """A cluster that produced no knowledge this run, and why (it stays for the next run)."""

    source_ids: tuple[str, ...]
    reason: str


@dataclass
class DistillReport:
    """What a distillation run did."""

    #: Episodes eligible at the start of the run.
    candidates: int = 0
    #: Clusters of at least ``min_episodes_for_cluster`` episodes found.
    clusters: int = 0
    #: Ids of knowledge documents written by this run.
    knowledge_written: list[str] = field(default_factory=list)
    #: Ids of knowledge documents found already written (an interrupted run, completed).
    knowledge_existing: list[str] = field(default_factory=list)
    #: Ids of existing knowledge documents rewritten with newcomers on their topic.
    knowledge_updated: list[str] = field(default_factory=list)
    #: Episodes marked distilled by this run.
    episodes_marked: int = 0
    #: Seeds whose cluster was too small (they stay candidates).
    unclustered: int = 0
    skipped: list[SkippedCluster] = field(default_factory=list)
    seconds: float = 0.0
    #: False when the time budget ran out before every candidate was seen.
    complete: bool = True
    #: Episodes old enough but below ``distill.min_importance`` (never distilled).
    low_importance: int = 0
    #: Why the run wrote no knowledge, in words ("" when it wrote some).
    reason: str = ""


def distill_reason(
    config: DistillConfig,
    *,
    candidates: int,
    low_importance: int,
    curve: FreshnessCurve,
    decay_rate: float,
    undistilled: int,
    oldest_days: float | None,
) -> str:
    """Why a distillation run wrote no knowledge: no candidate yet (and when there will be),
    or candidates that form no cluster; and how many episodes are too unimportant."""
    low = (
        f"; {low_importance} old enough episode(s) are below distill.min_importance "
        f"{config.min_importance:g} and are never distilled"
        if low_importance
        else ""
    )
    if candidates:
        return (
            f"{candidates} candidate(s), no cluster: knowledge needs at least "
            f"{config.min_episodes_for_cluster} episodes of one scope that say the same "
            f"(calibrated similarity above {config.similarity_threshold:g}) and name the same "
            f"identifiers{low}"
        )
    days = days_until(curve, decay_rate, config.freshness_threshold)
    after = f"after ~{days:.0f} days" if days is not None else "never, on this curve"
    if undistilled and oldest_days is not None:
        held = (
            f"the oldest of {undistilled} undistilled episode(s) is "
            f"{max(0.0, oldest_days):.1f} days old"
        )
    else:
        held = "there is no undistilled episode"
    return (
        f"0 candidates: episodes become candidates when their freshness falls below "
        f"{config.freshness_threshold:g} ({after} at decay rate {decay_rate:g}); {held}{low}"
    )


def forget_reason(
    matched: Sequence[tuple[ForgettingPolicy, int, str | None]],
    counts: Mapping[str, int],
    *,
    curve: FreshnessCurve,
    decay_rate: float,
) -> str:
    """Why a forgetting run acts on nothing. ``matched`` holds each policy with how many items
    its condition held for and why the first was skipped (None: none was); ``counts`` the live
    items per layer."""
    parts = []
    for policy, candidates, skipped in matched:
        layer = policy.target_layer
        text = f"{policy.name} matched {candidates} of {counts.get(layer, 0)} {layer} item(s)"
        if skipped:
            text += f" and skipped them ({skipped})"
        text += f" [{policy.condition}; grace {policy.grace_period_days:g} days]"
        for level in re.findall(r"\bfreshness\s*<=?\s*([0-9.]+)", policy.condition):
            days = days_until(curve, decay_rate, float(level))
            if days is not None:
                text += f" (freshness {level} comes after ~{days:.0f} days)"
        parts.append(text)
    return "nothing to forget: " + ("; ".join(parts) or "no policy is configured")
