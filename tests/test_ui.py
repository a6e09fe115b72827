"""The dashboard's sign-in, cookies, CSRF and pages, in-process (FastAPI's TestClient).

The browser tests (``test_ui_browser.py``) drive the same pages in Chromium; these check
what a browser does not show: cookie flags, refusals, status codes and headers.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from omoide import Config, ManualClock, Memory
from omoide.core.settings import ServerConfig
from omoide.server.rest import create_app
from omoide.server.ui.sessions import SessionStore
from omoide.service.keys import KeyStore

START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
SECRET = "CTO-PRIVATE rotate the staging password"


@dataclass
class Site:
    mem: Memory
    keys: dict[str, str]
    ids: dict[str, str]
    clock: ManualClock

    app: Any = None

    def client(self) -> TestClient:
        """A browser of its own (its own cookies) on the one app of this site."""
        if self.app is None:
            self.app = create_app(self.mem, mcp=False)
        return TestClient(self.app, base_url="http://127.0.0.1")

    def signed_in(self, agent: str) -> TestClient:
        client = self.client()
        answer = client.post("/ui/login", data={"key": self.keys[agent]}, follow_redirects=False)
        assert answer.status_code == 303
        return client


@pytest.fixture(scope="module")
def site(
    tmp_path_factory: pytest.TempPathFactory, embedder: object, counter: object
) -> Iterator[Site]:
    """One small store for the module (opening one costs seconds); tests that change it
    change only what no other test reads."""
    clock = ManualClock(START)
    mem = Memory(
        tmp_path_factory.mktemp("ui") / "data",
        clock=clock,
        embedder=embedder,  # type: ignore[arg-type]
        token_counter=counter,  # type: ignore[arg-type]
        config=Config(teams={"leads": ("ceo", "cto")}),
    )
    try:
        assert mem.db is not None
        store = KeyStore(mem.db, clock=clock)
        keys = {a: store.add(a, admin=a == "admin")[1] for a in ("admin", "ceo", "cto")}
        episode = mem.episodic.record(
            "ceo",
            "decision",
            "価格は¥500 <script>alert('x')</script> from the start",
            tags=["pricing"],
        )
        mem.episodic.record("cto", "note", SECRET, scope="private")
        doc = mem.semantic.store(
            "knowledge", ["ChromaDBはコサイン類似度で検索する。"], agent_name="ceo"
        )[0]
        mem.semantic.store(
            "knowledge",
            [f"{SECRET} (document)"],
            agent_name="cto",
            scope="private",
            ids=["cto-secret"],
        )
        mem.procedural.register(
            "write_article", "write_article|~記事", "Outline → draft", agent_name="ceo"
        )
        mem.procedural.evolve("write_article", "Outline → draft → edit")
        recall = mem.recall("what price?", agent_name="ceo")
        assert recall.recall_id is not None
        ids = {"episode": episode.id, "doc": doc, "recall": recall.recall_id}
        yield Site(mem, keys, ids, clock)
    finally:
        mem.close()


def pages(site: Site) -> list[str]:
    return [
        "/ui",
        "/ui/episodes",
        "/ui/episodes?state=active&tag=pricing&since=2026-01-01&until=2026-12-31&text=%C2%A5",
        "/ui/episodes?text=staging+password+price&meaning=1",
        "/ui/episodes?text=CTO&meaning=1&state=active&until=2026-12-31",
        f"/ui/episodes/{site.ids['episode']}",
        "/ui/knowledge",
        "/ui/knowledge/knowledge",
        "/ui/knowledge/knowledge?state=archived",
        f"/ui/knowledge/knowledge/{site.ids['doc']}",
        "/ui/procedures",
        "/ui/procedures/write_article",
        "/ui/forgetting",
        "/ui/forgetting?action=archive&layer=episodic",
        "/ui/recall",
        f"/ui/recall/{site.ids['recall']}",
    ]


POSTS = [
    "/ui/forgetting/dry-run",
    "/ui/recall",
    "/ui/forgetting/restore",
    "/ui/procedures/write_article/rollback",
]


def csrf_of(page: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', page)
    assert found is not None
    return found.group(1)


@pytest.mark.parametrize("agent", ["ceo", "admin"])
def test_every_page_answers_signed_in(site: Site, agent: str) -> None:
    client = site.signed_in(agent)
    for path in pages(site):
        answer = client.get(path)
        assert answer.status_code == 200, (path, answer.text[:500])
        assert answer.headers["content-type"].startswith("text/html")
        assert "default-src 'none'" in answer.headers["content-security-policy"]
        assert answer.headers["cache-control"] == "no-store"
        assert site.keys[agent] not in answer.text
        if agent != "admin":
            assert SECRET not in answer.text, path


def test_signed_out_every_page_redirects_to_sign_in(site: Site) -> None:
    client = site.client()
    for path in pages(site):
        answer = client.get(path, follow_redirects=False)
        assert answer.status_code == 303, path
        assert answer.headers["location"].startswith("/ui/login?next=%2Fui")
    for path in POSTS:
        answer = client.post(path, data={"csrf": "x"}, follow_redirects=False)
        assert answer.status_code == 303
        assert answer.headers["location"].startswith("/ui/login")
    assert client.get("/ui/login").status_code == 200
    assert client.get("/ui/static/dashboard.css").headers["content-type"].startswith("text/css")


def test_sign_in_sets_a_strict_http_only_session_cookie(site: Site) -> None:
    client = site.client()
    answer = client.post(
        "/ui/login",
        data={"key": site.keys["ceo"], "next": "/ui/episodes"},
        follow_redirects=False,
    )
    assert answer.status_code == 303
    assert answer.headers["location"] == "/ui/episodes"
    cookie = answer.headers["set-cookie"]
    assert cookie.startswith("omoide_session=")
    assert "HttpOnly" in cookie
    assert "SameSite=strict" in cookie or "SameSite=Strict" in cookie
    assert "Path=/ui" in cookie
    token = cookie.split(";")[0].split("=", 1)[1]
    assert len(token) >= 40
    assert site.keys["ceo"] not in cookie
    assert site.keys["ceo"] not in answer.headers["location"]


def test_sign_in_refuses_bad_keys_and_foreign_targets(site: Site) -> None:
    client = site.client()
    for key in ("", "omoide_nope", site.keys["ceo"] + "x"):
        answer = client.post("/ui/login", data={"key": key}, follow_redirects=False)
        assert answer.status_code == 401
        assert "set-cookie" not in answer.headers
        assert "not accepted" in answer.text
    for target in ("https://evil.example/ui", "//evil.example/ui", "/v1/export", "/ui\\x"):
        answer = client.post(
            "/ui/login", data={"key": site.keys["ceo"], "next": target}, follow_redirects=False
        )
        assert answer.headers["location"] == "/ui"
    answer = client.post(
        "/ui/login",
        data={"key": site.keys["ceo"]},
        headers={"Origin": "http://evil.example"},
        follow_redirects=False,
    )
    assert answer.status_code == 403


def test_state_changing_forms_need_the_session_csrf_token(site: Site) -> None:
    client = site.signed_in("ceo")
    other = site.signed_in("cto")
    token = csrf_of(client.get("/ui/forgetting").text)
    assert token != csrf_of(other.get("/ui/forgetting").text)
    for form in ({}, {"csrf": ""}, {"csrf": "forged"}, {"csrf": csrf_of(other.get("/ui").text)}):
        answer = client.post("/ui/forgetting/dry-run", data=form)
        assert answer.status_code == 403
        assert "Dry run" not in answer.text
    cross = client.post(
        "/ui/forgetting/dry-run", data={"csrf": token}, headers={"Origin": "http://evil.example"}
    )
    assert cross.status_code == 403
    answer = client.post("/ui/forgetting/dry-run", data={"csrf": token})
    assert answer.status_code == 200
    assert "nothing was changed" in answer.text
    refused = client.post("/ui/procedures/write_article/rollback", data={"version": "1"})
    assert refused.status_code == 403
    assert site.mem.procedural.get("write_article").template == "Outline → draft → edit"
    rolled = client.post(
        "/ui/procedures/write_article/rollback",
        data={"csrf": token, "version": "1"},
        follow_redirects=False,
    )
    assert rolled.status_code == 303
    assert site.mem.procedural.get("write_article").template == "Outline → draft"
    site.mem.procedural.evolve("write_article", "Outline → draft → edit")


def test_sign_out_ends_the_session(site: Site) -> None:
    client = site.signed_in("ceo")
    token = csrf_of(client.get("/ui").text)
    assert client.post("/ui/logout", data={"csrf": "forged"}).status_code == 403
    assert client.get("/ui", follow_redirects=False).status_code == 200
    answer = client.post("/ui/logout", data={"csrf": token}, follow_redirects=False)
    assert answer.status_code == 303
    assert (
        'omoide_session=""' in answer.headers["set-cookie"]
        or "Max-Age=0" in answer.headers["set-cookie"]
    )
    assert client.get("/ui", follow_redirects=False).status_code == 303


def test_a_stolen_cookie_stops_working_after_sign_out_and_revocation(site: Site) -> None:
    assert site.mem.db is not None
    store = KeyStore(site.mem.db, clock=site.clock)
    site.keys["cto-spare"] = store.add("cto")[1]
    client = site.signed_in("cto-spare")
    cookie = client.cookies.get("omoide_session")
    assert cookie
    thief = site.client()
    stolen = {"Cookie": f"omoide_session={cookie}"}
    assert thief.get("/ui", headers=stolen, follow_redirects=False).status_code == 200
    store.revoke(store.verify(site.keys["cto-spare"]).id)
    assert thief.get("/ui", headers=stolen, follow_redirects=False).status_code == 303
    assert client.get("/ui", follow_redirects=False).status_code == 303


def test_sessions_expire_when_idle(site: Site) -> None:
    client = site.signed_in("ceo")
    site.clock.advance(timedelta(hours=9))
    assert client.get("/ui", follow_redirects=False).status_code == 303


def test_text_is_escaped_and_private_items_are_absent(site: Site) -> None:
    client = site.signed_in("ceo")
    page = client.get(f"/ui/episodes/{site.ids['episode']}").text
    assert "<script>alert" not in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page
    assert "価格は¥500" in page
    hidden = site.mem.db.scalar(  # type: ignore[union-attr]
        "SELECT id FROM episodes WHERE agent_name = 'cto'"
    )
    missing = client.get(f"/ui/episodes/{hidden}")
    absent = client.get("/ui/episodes/ep-does-not-exist")
    assert missing.status_code == absent.status_code == 404
    assert SECRET not in missing.text
    assert client.get("/ui/knowledge/knowledge/cto-secret").status_code == 404
    for path in pages(site):
        assert SECRET not in client.get(path).text, path
    ranked = client.get("/ui/episodes?text=price&meaning=1").text
    assert "価格は¥500" in ranked
    admin = site.signed_in("admin")
    assert SECRET in admin.get("/ui/episodes").text
    assert SECRET in admin.get("/ui/episodes?text=staging+password&meaning=1").text
    assert SECRET in admin.get("/ui/knowledge/knowledge/cto-secret").text


def test_the_dashboard_can_be_turned_off(site: Site) -> None:
    off = TestClient(create_app(site.mem, mcp=False, dashboard=False))
    assert off.get("/ui", follow_redirects=False).status_code == 404
    assert off.get("/healthz").status_code == 200
    assert ServerConfig().dashboard is True


def test_the_configuration_turns_it_off(tmp_path: Path) -> None:
    toml = tmp_path / "omoide.toml"
    toml.write_text("[server]\ndashboard = false\n", encoding="utf-8")
    assert Config.from_toml(toml).server.dashboard is False


def test_an_extracted_document_links_the_episodes_it_came_from(site: Site) -> None:
    episode = site.ids["episode"]
    doc = site.mem.semantic.store(
        "knowledge",
        ["The price starts at ¥500."],
        [{"subject": "pricing", "source": "extraction", "episode_ids": episode}],
        agent_name="ceo",
    )[0]
    page = site.signed_in("ceo").get(f"/ui/knowledge/knowledge/{doc}").text
    assert "extracted from 1 episodes" in page
    assert f"/ui/episodes/{episode}" in page


def test_a_session_outlives_a_restart_of_the_server(site: Site) -> None:
    """Sessions are rows of the database: a new app over the same store (a restarted server,
    or another replica) knows the browser; signing out there ends it everywhere."""
    client = site.signed_in("ceo")
    cookie = client.cookies.get("omoide_session")
    assert cookie
    restarted = TestClient(create_app(site.mem, mcp=False), base_url="http://127.0.0.1")
    restarted.cookies.set("omoide_session", cookie)
    assert restarted.get("/ui", follow_redirects=False).status_code == 200
    SessionStore(site.mem.db, site.clock).sign_out(cookie)  # type: ignore[arg-type]
    assert client.get("/ui", follow_redirects=False).status_code == 303
