"""A scripted tour of the four layers: three agents over four simulated weeks.

``omoide demo`` plays it on a temporary data directory (or ``--path`` to keep the data):
a CEO, a CTO and a designer agent make decisions, hit errors, get human feedback, store
knowledge and refine procedures, in Japanese and English, on a manual clock — then the demo
prints what each layer holds and what recall returns.
"""

from __future__ import annotations

import tempfile
from collections import Counter
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path

from omoide.cli.console import shorten
from omoide.clock import ManualClock
from omoide.memory import Memory

__all__ = ["run_demo"]

JST = timezone(timedelta(hours=9))
START = datetime(2026, 3, 2, 9, 0, tzinfo=JST)


def _script(mem: Memory, clock: ManualClock, say: Callable[[str], None]) -> None:
    """The demo's script, step after step. Long because it is a story told in order;
    splitting it would scatter one narrative.
    """
    episodic, semantic, procedural = mem.episodic, mem.semantic, mem.procedural

    say("Week 1 — the fleet gets to work")
    episodic.record(
        "operator",
        "feedback",
        "価格設定は¥500からスタートして",
        tags=["pricing"],
        context={"channel": "slack"},
    )
    episodic.record(
        "ceo",
        "decision",
        "新機能の優先順位をセキュリティ > パフォーマンスに決定",
        tags=["priority"],
        context={"options": ["security", "performance"]},
    )
    clock.advance(days=1, hours=3)
    episodic.record(
        "cto",
        "error",
        "Production deploy failed: DATABASE_URL was not set",
        outcome="Added DATABASE_URL to the deploy environment and re-ran the pipeline",
        tags=["deploy"],
    )
    episodic.record(
        "designer",
        "decision",
        "The landing page uses indigo (藍色) as its only brand colour",
        tags=["design"],
    )
    semantic.store(
        "knowledge",
        [
            "FastAPI middleware wraps every request: use it for auth, timing and request ids. "
            "Keep it fast; heavy work belongs in dependencies or background tasks.",
            "ChromaDBはベクトルデータベースです。コサイン類似度のHNSWインデックスで近傍検索を行い、"
            "メタデータのwhere条件で絞り込めます。",
        ],
        [{"topic": "fastapi"}, {"topic": "chromadb"}],
        agent_name="cto",
    )
    procedural.register(
        "write_article",
        "write_article|~記事|~article",
        "1) 読者を決める 2) 見出しを立てる 3) 下書き 4) AEOチェック",
        description="How the content agent writes an article",
        agent_name="ceo",
    )
    procedural.register(
        "deploy", "deploy:*", "Run tests → tag → deploy → watch error rate 15 min", agent_name="cto"
    )

    say("Week 2 — outcomes come in, a procedure evolves")
    clock.advance(days=7)
    for quality, ok in [(7.0, True), (6.5, True), (4.0, False)]:
        procedural.update_from_outcome("write_article", quality, ok)
    procedural.evolve(
        "write_article", "1) 読者を決める 2) 競合記事を3本読む 3) 見出し 4) 下書き 5) AEOチェック"
    )
    procedural.update_from_outcome("write_article", 9.0, True)
    episodic.record(
        "content", "success", "記事005がAEOスコア92で品質ゲートを通過", tags=["article"]
    )
    episodic.record(
        "cto",
        "conflict",
        "CTO vs Security: adopting a new YAML parser dependency",
        outcome="Security approved it after a licence and CVE review",
        tags=["dependency"],
    )
    for service in ("api", "web", "billing", "search"):
        episodic.record(
            "cto",
            "error",
            f"Deploy of service {service} failed: the database migration timed out",
            outcome="Raised the migration timeout to 10 minutes and re-ran the deploy",
            tags=["deploy"],
        )

    say("Week 3 — a busy CEO session overflows its working memory")
    clock.advance(days=7)
    wm = mem.working("ceo", "planning-2026-03", max_tokens=800)
    wm.set_slot("system", "You are the CEO agent of the AEGIS fleet.")
    wm.set_slot("active_task", "Q2の価格プランを決める / Decide the Q2 price plan")
    wm.pin("pricing-floor", "Never price below ¥500", reason="operator feedback, week 1")
    wm.add_message(
        {
            "role": "user",
            "importance": 0.9,
            "content": "The operator says: the Pro plan must include SSO. Remember this.",
        }
    )
    promoted = []
    for i in range(40):
        evictions = wm.add_message(
            {
                "role": "assistant" if i % 2 else "user",
                "importance": 0.3,
                "content": f"Status update {i}: comparing plan tiers, "
                f"draft {i} of the pricing table.",
            }
        )
        promoted += [e for e in evictions if e.promoted]
        clock.advance(minutes=2)
    say(f"  {len(promoted)} important message(s) promoted to the episodic store on overflow")

    say("Week 4 — the fleet remembers")
    clock.advance(days=7)

    say("Three months later — the nightly maintenance distils and forgets")
    clock.advance(days=90)
    report = mem.maintain()
    say(
        f"  distilled {report.distill.clusters} cluster(s) of similar episodes into "
        f"{len(report.distill.knowledge_written)} knowledge document(s); "
        f"forgetting acted on {report.forget.acted} item(s), every action in the audit log"
    )
    for doc_id in report.distill.knowledge_written:
        doc = mem.semantic.get(mem.config.distill.collection, doc_id)
        say(f"  knowledge: {shorten(doc.document, 110)}")


def _report(mem: Memory, say: Callable[[str], None]) -> None:
    now = mem.clock.now()
    say("")
    say("== What each layer holds ==")
    wm = mem.working("ceo", "planning-2026-03")
    tokens = wm.slot_tokens()
    say(
        f"Layer 1 working memory (ceo / planning-2026-03): {wm.total_tokens()} of "
        f"{wm.max_tokens} tokens — " + ", ".join(f"{k} {v}" for k, v in tokens.items())
    )
    for pin in wm.pins:
        say(f"  pinned {pin.key}: {pin.content}")
    say(f"  {len(wm.messages)} recent messages kept, newest: {wm.messages[-1].content!r}")
    listed = mem.episodic.browse(limit=1000)
    states = Counter(e.state for e in listed)
    say(
        f"Layer 2 episodic store: {len(listed)} episodes ("
        + ", ".join(f"{n} {state}" for state, n in sorted(states.items()))
        + ")"
    )
    for e in listed[:20]:
        age = (now - e.timestamp).days
        say(
            f"  [{e.event_type:<8}] {e.agent_name:<9} imp {e.importance:.2f} "
            f"fresh {mem.episodic.freshness_of(e):.2f} ({age}d)  {e.description}"
        )
    say(
        "Layer 3 semantic store: "
        + ", ".join(f"{name} {mem.semantic.count(name)}" for name in mem.semantic.collections)
    )
    say(f"Layer 4 procedural memory: {mem.procedural.count()} procedures")
    for p in mem.procedural.procedures():
        say(
            f"  {p.name} v{p.version} trigger {p.trigger!r} success {p.success_rate:.2f} "
            f"quality {p.avg_quality_score:.2f} runs {p.execution_count}"
        )

    say("")
    say("== Recall (Memory.recall: every layer, ranked, within a token budget) ==")
    for question in [
        "デプロイ失敗はどう直した？",
        "What did the operator say about pricing?",
        "Which colour is the brand colour?",
        "SSOについて何か言われた？",
        "ベクトル検索の仕組みは？",
        "Where should request timing live in FastAPI?",
    ]:
        say(f"Q: {question}")
        context = mem.recall(question, agent_name="ceo", budget_tokens=300)
        for item in context.items[:2]:
            text = shorten(item.text, 100)
            say(f"   {item.layer:<10} {item.score:.2f}  {item.author or '-'}: {text}")
    for task in ["技術記事を書く", "deploy:production"]:
        proc = mem.procedural.get_procedure(task)
        if proc is not None:
            say(f"Q: procedure for {task!r} → {proc.name} v{proc.version}: {proc.template}")


def run_demo(path: str | Path | None = None, say: Callable[[str], None] = print) -> None:
    """Play the scripted scenario and print what the layers hold and what recall returns."""
    clock = ManualClock(START)
    if path is None:
        with tempfile.TemporaryDirectory(prefix="omoide-demo-") as tmp:
            _play(Path(tmp) / "data", clock, say)
    else:
        _play(Path(path), clock, say)


def _play(path: Path, clock: ManualClock, say: Callable[[str], None]) -> None:
    say(f"omoide demo — data directory {path} (simulated time from {START:%Y-%m-%d})")
    with Memory(path, clock=clock) as mem:
        _script(mem, clock, say)
        _report(mem, say)
