"""Structured forgetting: declared policies decide what leaves memory, auditably.

A :class:`ForgettingPolicy` names a layer, a condition (see :mod:`omoide.core.conditions`), an
action (``delete``, ``archive`` or ``compress``, see :mod:`omoide.pipelines.lifecycle`) and a grace
period. The article's four policies are the defaults (``ForgettingConfig``); more come from
``omoide.toml`` (``[[forgetting.policies]]``) or code (:meth:`Forgetting.add_policy`).

A run first builds a *plan* from one snapshot of the store: for each policy in order, the live
items (active or compressed; compress skips already compressed ones) whose condition holds.
Of those, items protected by a never-forget rule, items younger than the grace period, and
items an earlier policy already claimed are skipped, with the reason. Only then are the
actions carried out, each audited. ``dry_run=True`` returns the same plan and changes nothing,
so a dry run reports exactly what a real run would do. A run that acts on nothing says why
in its report's ``reason`` (each policy's matches and grace period; the age at which a
``freshness <`` condition holds, from the configured curve).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from omoide.clock import Clock, to_timestamp
from omoide.core.freshness import FreshnessCurve
from omoide.core.policies import FORGETTABLE_LAYERS, ForgettingPolicy, policies_from_config
from omoide.core.protection import NeverForget
from omoide.errors import OmoideError, ValidationError
from omoide.pipelines.lifecycle import Lifecycle
from omoide.pipelines.reports import forget_reason
from omoide.storage import Database

__all__ = [
    "ForgetReport",
    "Forgetting",
    "ForgettingPolicy",
    "ItemNote",
    "PlannedAction",
    "PolicyReport",
    "policies_from_config",
]


@dataclass(frozen=True)
class PlannedAction:
    """One action of a plan: what a policy does (or would do) to one item, and why."""

    policy: str
    layer: str
    collection: str
    item_id: str
    action: str
    reason: str


class ItemNote(tuple[str, str]):
    """``(item id, text)`` of a skipped or failed item, which also knows the item's
    collection (``""`` for episodes): ids are unique only within a collection, so whoever
    filters a report by what a reader may see needs it. Compares and serializes as the pair.
    """

    collection: str

    def __new__(cls, item_id: str, text: str, collection: str = "") -> ItemNote:
        note = super().__new__(cls, (item_id, text))
        note.collection = collection
        return note


@dataclass
class PolicyReport:
    """What one policy found and did."""

    name: str
    layer: str
    action: str
    #: Items whose condition held (acted on or skipped).
    candidates: int = 0
    acted: list[PlannedAction] = field(default_factory=list)
    #: (item id, reason) of matching items left alone.
    skipped: list[tuple[str, str]] = field(default_factory=list)
    #: (item id, error) of planned actions that failed when carried out.
    failed: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class ForgetReport:
    """The result of :meth:`Forgetting.run`, one :class:`PolicyReport` per policy."""

    dry_run: bool
    run_id: str
    at: datetime
    policies: list[PolicyReport] = field(default_factory=list)
    seconds: float = 0.0
    #: Why the run acts on nothing, in words ("" when it acts).
    reason: str = ""

    @property
    def plan(self) -> list[PlannedAction]:
        """Every planned action, in order (equal for a dry run and the real run after it)."""
        return [a for p in self.policies for a in p.acted]

    @property
    def acted(self) -> int:
        """How many actions succeeded (or would, in a dry run)."""
        return sum(len(p.acted) - len(p.failed) for p in self.policies)


class Forgetting:
    """Runs forgetting policies over the episodic and semantic layers."""

    def __init__(
        self,
        db: Database,
        *,
        lifecycle: Lifecycle,
        never_forget: NeverForget,
        clock: Clock,
        freshness: FreshnessCurve,
        decay_rate: float,
        policies: Sequence[ForgettingPolicy],
        restore_exemption_days: float = 30.0,
    ) -> None:
        self._db = db
        #: How long a restored item is left alone (``forgetting.restore_exemption_days``).
        self.restore_exemption_days = restore_exemption_days
        self._lifecycle = lifecycle
        self._never_forget = never_forget
        self._clock = clock
        self._freshness = freshness
        self._decay_rate = decay_rate
        self._policies = list(policies)

    @property
    def policies(self) -> list[ForgettingPolicy]:
        """The policies, in the order they run."""
        return list(self._policies)

    def add_policy(self, policy: ForgettingPolicy) -> None:
        """Add a policy (it runs after the existing ones); names must be unique."""
        if not isinstance(policy, ForgettingPolicy):
            raise ValidationError("policy", "expected a ForgettingPolicy")
        if any(p.name == policy.name for p in self._policies):
            raise ValidationError("policy.name", f"a policy named {policy.name!r} exists")
        self._policies.append(policy)

    def remove_policy(self, name: str) -> ForgettingPolicy:
        """Remove a policy by name (for this Memory only) and return it."""
        for i, policy in enumerate(self._policies):
            if policy.name == name:
                return self._policies.pop(i)
        raise ValidationError("name", f"no policy named {name!r}")

    # -- running -------------------------------------------------------------------------

    def run(self, *, dry_run: bool = False) -> ForgetReport:
        """Plan every policy, then (unless ``dry_run``) carry the plan out."""
        started = self._clock.monotonic()
        now = self._clock.now()
        report = ForgetReport(dry_run=dry_run, run_id=f"forget-{uuid.uuid4().hex[:12]}", at=now)
        report.policies = self.plan(now)
        if not dry_run:
            for policy_report in report.policies:
                for action in policy_report.acted:
                    try:
                        self._lifecycle.apply(
                            action.layer,
                            action.item_id,
                            action.action,
                            collection=action.collection,
                            policy=action.policy,
                            reason=action.reason,
                            run_id=report.run_id,
                        )
                    except OmoideError as exc:
                        policy_report.failed.append(
                            ItemNote(action.item_id, str(exc), action.collection)
                        )
        report.seconds = self._clock.monotonic() - started
        if not report.plan:
            report.reason = self._reason(report)
        return report

    def _reason(self, report: ForgetReport) -> str:
        """Why no policy acts (see :func:`~omoide.pipelines.reports.forget_reason`)."""
        live = ("active", "compressed")
        episodic = self._lifecycle.episodic
        documents = self._lifecycle.semantic.registry.counts()
        counts = {
            "episodic": sum(episodic.count(state=state) for state in live),
            "semantic": sum(n for (_, state), n in documents.items() if state in live),
        }
        by_name = {p.name: p for p in self._policies}
        matched = [
            (by_name[r.name], r.candidates, r.skipped[0][1] if r.skipped else None)
            for r in report.policies
            if r.name in by_name
        ]
        return forget_reason(matched, counts, curve=self._freshness, decay_rate=self._decay_rate)

    def plan(self, now: datetime | None = None) -> list[PolicyReport]:
        """What each policy would do now, from one snapshot of the store."""
        now = now or self._clock.now()
        items = {layer: self._items(layer, now) for layer in FORGETTABLE_LAYERS}
        exempt = self._lifecycle.exemptions(now, self.restore_exemption_days)
        claimed: dict[tuple[str, str, str], str] = {}
        reports = []
        for policy in self._policies:
            report = PolicyReport(policy.name, policy.target_layer, policy.action)
            for item in items[policy.target_layer]:
                if policy.action == "compress" and item["state"] == "compressed":
                    continue
                if not policy.compiled(item):
                    continue
                report.candidates += 1
                key = (policy.target_layer, item["collection"] or "", item["id"])
                skip = exempt.get(key) or self._skip_reason(policy, item, claimed.get(key))
                if skip:
                    report.skipped.append(ItemNote(item["id"], skip, item["collection"] or ""))
                    continue
                claimed[key] = policy.name
                report.acted.append(
                    PlannedAction(
                        policy=policy.name,
                        layer=policy.target_layer,
                        collection=item["collection"] or "",
                        item_id=item["id"],
                        action=policy.action,
                        reason=f"{policy.condition} ({policy.compiled.explain(item)})",
                    )
                )
            reports.append(report)
        return reports

    def _skip_reason(
        self, policy: ForgettingPolicy, item: Mapping[str, Any], claimed_by: str | None
    ) -> str:
        if item["protected"]:
            categories = item["_categories"]
            named = ", ".join(categories) if categories else "a never-forget rule"
            return f"never forget: {named}"
        if item["age"] < policy.grace_period_days:
            return f"grace period: {item['age']:.1f} of {policy.grace_period_days:g} days"
        if claimed_by is not None:
            return f"already handled by policy {claimed_by!r}"
        return ""

    # -- facts ---------------------------------------------------------------------------

    def _items(self, layer: str, now: datetime) -> list[dict[str, Any]]:
        if layer == "episodic":
            return self._episode_facts(now)
        return self._document_facts(now)

    def _episode_facts(self, now: datetime) -> list[dict[str, Any]]:
        """The facts conditions read, for every live episode (see EPISODIC_FIELDS)."""
        now_ts = to_timestamp(now)
        rows = self._lifecycle.episodic.rows.live()
        items = []
        for r in rows:
            age = max(0.0, (now_ts - r["timestamp"]) / 86400)
            last = r["last_accessed"] if r["last_accessed"] is not None else r["timestamp"]
            context = json.loads(r["context"])
            tags = json.loads(r["tags"])
            facts: dict[str, Any] = {
                "id": r["id"],
                "collection": None,
                "agent_name": r["agent_name"],
                "event_type": r["event_type"],
                "scope": r["scope"],
                "state": r["state"],
                "outcome": r["outcome"],
                "importance": float(r["importance"]),
                "freshness": float(self._freshness(age, r["decay_rate"])),
                "access_count": int(r["access_count"]),
                "decay_rate": float(r["decay_rate"]),
                "length": len(r["description"]) + len(r["outcome"] or ""),
                "age": age,
                "days_since_access": max(0.0, (now_ts - last) / 86400),
                "has_resolution": bool((r["outcome"] or "").strip()),
                "distilled": r["distilled_at"] is not None,
                "protected": bool(r["protected"]),
                "tags": tags,
            }
            for key, value in context.items():
                facts[f"context.{key}"] = value
            facts["_categories"] = (
                self._never_forget.episode_categories(r["event_type"], tags, context)
                if r["protected"]
                else ()
            )
            items.append(facts)
        return items

    def _document_facts(self, now: datetime) -> list[dict[str, Any]]:
        """The facts conditions read, for every live document (see SEMANTIC_FIELDS)."""
        now_ts = to_timestamp(now)
        rows = self._lifecycle.semantic.registry.live()
        items = []
        for r in rows:
            meta = json.loads(r["metadata"])
            age = max(0.0, (now_ts - r["created_at"]) / 86400)
            last = r["last_accessed"] if r["last_accessed"] is not None else r["created_at"]
            raw_tags = meta.get("tags")
            tags = (
                [t.strip() for t in raw_tags.split(",") if t.strip()]
                if isinstance(raw_tags, str)
                else []
            )
            importance = meta.get("importance")
            confidence = meta.get("confidence")
            facts: dict[str, Any] = {
                "id": r["id"],
                "collection": r["collection"],
                "agent_name": r["agent_name"],
                "scope": r["scope"],
                "state": r["state"],
                "subject": r["subject"],
                "category": _text(meta.get("category")),
                "source": _text(meta.get("source")),
                "event_type": _text(meta.get("event_type")),
                "importance": float(importance) if _is_number(importance) else 0.5,
                "confidence": float(confidence) if _is_number(confidence) else None,
                "freshness": float(self._freshness(age, self._decay_rate)),
                "access_count": int(r["access_count"]),
                "version": r["version"],
                "length": len(r["content"]),
                "age": age,
                "days_since_access": max(0.0, (now_ts - last) / 86400),
                "superseded_days": (
                    max(0.0, (now_ts - r["superseded_at"]) / 86400)
                    if r["superseded_at"] is not None
                    else None
                ),
                "newer_version_exists": r["superseded_by"] is not None,
                "distilled": meta.get("source") == "distillation",
                "protected": bool(r["protected"]),
                "tags": tags,
            }
            for key, value in meta.items():
                facts[f"metadata.{key}"] = value
            facts["_categories"] = (
                self._never_forget.document_categories(r["collection"], meta)
                if r["protected"]
                else ()
            )
            items.append(facts)
        return items


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
