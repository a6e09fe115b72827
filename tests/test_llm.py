"""Knowledge extractors: the offline default, and the chat-completions client against a real
HTTP server on 127.0.0.1 that speaks the protocol from a script."""

from __future__ import annotations

import json
import socket
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from conftest import ScriptedServer
from omoide.core.config import LLMConfig
from omoide.core.models import Episode
from omoide.errors import ConfigError, LLMError
from omoide.providers.llm import (
    ChatCompletionsLLM,
    Cluster,
    Knowledge,
    OfflineExtractor,
    llm_from_config,
    parse_knowledge,
)

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


def ep(
    i: int,
    description: str,
    *,
    event_type: str = "error",
    outcome: str | None = None,
    tags: tuple[str, ...] = (),
    agent: str = "cto",
) -> Episode:
    return Episode(
        id=f"ep-{i}",
        timestamp=T0 + timedelta(days=i),
        agent_name=agent,
        event_type=event_type,
        description=description,
        outcome=outcome,
        tags=tags,
    )


@pytest.fixture
def cluster() -> Cluster:
    return Cluster(
        episodes=(
            ep(
                0,
                "Deploy failed: DB migration timed out",
                outcome="raised timeout to 120s",
                tags=("deploy", "db"),
            ),
            ep(
                1,
                "Deployment failed because the DB migration timed out",
                outcome="raised timeout to 120s",
                tags=("deploy",),
                agent="sre",
            ),
            ep(
                2,
                "Release broke: database migration hit its timeout",
                outcome="split the migration",
                tags=("db", "deploy"),
            ),
        ),
        representative=1,
        cohesion=0.9,
    )


# -- the offline extractor -----------------------------------------------------------------


def test_offline_summary_is_faithful_to_the_cluster(cluster: Cluster) -> None:
    knowledge = OfflineExtractor().extract(cluster)
    lines = knowledge.summary.splitlines()
    assert lines[0] == "Deployment failed because the DB migration timed out"  # representative
    assert lines[1] == "→ raised timeout to 120s (2/3)"  # the outcome most share
    # Provenance is the document's metadata, not part of the lesson it states.
    assert len(lines) == 2
    assert knowledge.category == "error_pattern"
    assert knowledge.confidence == pytest.approx(0.9 * 3 / 5)


def test_offline_category_follows_the_event_types() -> None:
    def category(*types: str) -> str:
        episodes = tuple(ep(i, f"event {i}", event_type=t) for i, t in enumerate(types))
        return OfflineExtractor().extract(Cluster(episodes)).category

    assert category("decision", "decision", "error") == "decision_pattern"
    assert category("success", "optimization", "message") == "optimization"
    assert category("feedback", "feedback", "decision") == "preference"
    assert category("message", "note", "chat") == "observation"  # no signal: not a decision
    # Ties resolve in the fixed category order, so the result never depends on input order.
    assert category("error", "decision") == category("decision", "error") == "decision_pattern"


def test_offline_confidence_grows_with_size_and_cohesion() -> None:
    small = Cluster(tuple(ep(i, "same") for i in range(3)), cohesion=0.8)
    large = Cluster(tuple(ep(i, "same") for i in range(12)), cohesion=0.8)
    loose = Cluster(tuple(ep(i, "same") for i in range(12)), cohesion=0.5)
    extractor = OfflineExtractor()
    assert extractor.extract(small).confidence < extractor.extract(large).confidence
    assert extractor.extract(loose).confidence < extractor.extract(large).confidence
    assert 0 <= extractor.extract(loose).confidence <= 1


def test_offline_extractor_keeps_japanese_text() -> None:
    episodes = (
        ep(0, "デプロイ失敗：マイグレーションがタイムアウト", outcome="タイムアウトを120秒に変更"),
        ep(
            1,
            "デプロイが失敗した。DBマイグレーションのタイムアウト",
            outcome="タイムアウトを120秒に変更",
        ),
        ep(2, "リリース失敗：マイグレーションが時間切れ"),
    )
    knowledge = OfflineExtractor().extract(Cluster(episodes))
    assert knowledge.summary.startswith("デプロイ失敗：マイグレーションがタイムアウト")
    assert "→ タイムアウトを120秒に変更 (2/3)" in knowledge.summary


def test_offline_extractor_refuses_an_empty_cluster() -> None:
    with pytest.raises(LLMError):
        OfflineExtractor().extract(Cluster(()))


# -- answer validation -----------------------------------------------------------------------


def test_parse_knowledge_accepts_plain_and_fenced_json() -> None:
    answer = {"summary": "Raise migration timeouts.", "category": "error_pattern", "confidence": 1}
    assert parse_knowledge(json.dumps(answer)) == Knowledge(
        "Raise migration timeouts.", "error_pattern", 1.0
    )
    assert parse_knowledge("```json\n" + json.dumps(answer) + "\n```").category == "error_pattern"


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        ("Sure! The lesson is: raise timeouts.", "not JSON"),
        ("[1, 2]", "JSON object"),
        ('{"summary": "x", "category": "error_pattern"}', r"missing key\(s\): confidence"),
        ('{"summary": " ", "category": "error_pattern", "confidence": 0.5}', "summary"),
        ('{"summary": "x", "category": "lesson", "confidence": 0.5}', "category"),
        ('{"summary": "x", "category": "preference", "confidence": 1.5}', "confidence"),
        ('{"summary": "x", "category": "preference", "confidence": true}', "confidence"),
        ('{"summary": "x", "category": "preference", "confidence": "high"}', "confidence"),
    ],
)
def test_parse_knowledge_names_the_problem(answer: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        parse_knowledge(answer)


# -- the chat-completions client over real HTTP ----------------------------------------------


GOOD = {
    "summary": "DB migrations need a longer timeout.",
    "category": "error_pattern",
    "confidence": 0.8,
}


def test_client_asks_for_json_and_returns_validated_knowledge(
    server: ScriptedServer, cluster: Cluster
) -> None:
    server.answer(json.dumps(GOOD))
    client = ChatCompletionsLLM(server.url + "/", "qwen2.5:7b", api_key="sk-test")
    assert client.extract(cluster) == Knowledge(GOOD["summary"], "error_pattern", 0.8)
    [request] = server.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["headers"]["Authorization"] == "Bearer sk-test"
    body = request["body"]
    assert body["model"] == "qwen2.5:7b"
    assert body["response_format"] == {"type": "json_object"}
    assert body["temperature"] == 0
    system, user = body["messages"]
    assert system["role"] == "system" and '"category"' in system["content"]
    assert user["content"].splitlines()[1] == (
        "- [2026-01-05] (error, cto) Deploy failed: DB migration timed out → raised timeout to 120s"
    )
    assert len(user["content"].splitlines()) == 4


def test_client_retries_a_malformed_answer_once_with_the_problem(
    server: ScriptedServer, cluster: Cluster
) -> None:
    server.answer("Here is the lesson: raise the timeout.")
    server.answer("```json\n" + json.dumps(GOOD) + "\n```")
    knowledge = ChatCompletionsLLM(server.url, "m").extract(cluster)
    assert knowledge.summary == GOOD["summary"]
    assert len(server.requests) == 2
    retry = server.requests[1]["body"]["messages"]
    assert retry[2] == {"role": "assistant", "content": "Here is the lesson: raise the timeout."}
    assert retry[3]["role"] == "user" and "not JSON" in retry[3]["content"]


def test_client_gives_up_after_two_malformed_answers(
    server: ScriptedServer, cluster: Cluster
) -> None:
    server.answer('{"summary": "x", "category": "lesson", "confidence": 0.5}')
    server.answer('{"summary": "x", "category": "still wrong", "confidence": 0.5}')
    server.answer(json.dumps(GOOD))  # never requested
    with pytest.raises(LLMError, match=r"malformed answer twice.*category"):
        ChatCompletionsLLM(server.url, "m").extract(cluster)
    assert len(server.requests) == 2


def test_a_refusal_is_not_retried(server: ScriptedServer, cluster: Cluster) -> None:
    server.answer(None, refusal="I can't help with that.")
    with pytest.raises(LLMError, match="refused: I can't help with that"):
        ChatCompletionsLLM(server.url, "m").extract(cluster)
    server.answer("", finish_reason="content_filter")
    with pytest.raises(LLMError, match="content filter"):
        ChatCompletionsLLM(server.url, "m").extract(cluster)
    assert len(server.requests) == 2


@pytest.mark.parametrize(
    ("status", "payload", "message"),
    [
        (500, {"error": {"message": "model crashed"}}, r"HTTP 500.*model crashed"),
        (401, {"error": {"message": "bad key"}}, "HTTP 401"),
        (200, b"<html>not json</html>", "chat-completions format"),
        (200, {"choices": []}, "chat-completions format"),
        (200, {"choices": [{"message": {"role": "assistant"}}]}, "without text content"),
    ],
)
def test_transport_and_protocol_failures_raise_llm_error(
    server: ScriptedServer, cluster: Cluster, status: int, payload: Any, message: str
) -> None:
    server.script.append((status, payload))
    with pytest.raises(LLMError, match=message):
        ChatCompletionsLLM(server.url, "m", json_mode=False).extract(cluster)
    assert "response_format" not in server.requests[0]["body"]


def test_an_unreachable_endpoint_raises_llm_error(cluster: Cluster) -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = ChatCompletionsLLM(f"http://127.0.0.1:{port}/v1", "m", timeout_seconds=5)
    with pytest.raises(LLMError, match="cannot reach"):
        client.extract(cluster)


def test_the_prompt_is_capped_but_says_how_many_more(server: ScriptedServer) -> None:
    episodes = tuple(ep(i, f"deploy failed again, attempt {i}") for i in range(30))
    server.answer(json.dumps(GOOD))
    ChatCompletionsLLM(server.url, "m", max_episodes=5).extract(Cluster(episodes, 7, 0.9))
    user = server.requests[0]["body"]["messages"][1]["content"].splitlines()
    assert len(user) == 1 + 5 + 1
    assert "attempt 7" in user[1]  # the representative leads
    assert user[-1] == "(and 25 more like these)"


# -- configuration ---------------------------------------------------------------------------


def test_llm_from_config_defaults_to_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OMOIDE_LLM_BASE_URL", raising=False)
    assert isinstance(llm_from_config(LLMConfig()), OfflineExtractor)


def test_llm_from_config_reads_config_then_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMOIDE_LLM_BASE_URL", "http://127.0.0.1:11434/v1")
    monkeypatch.setenv("OMOIDE_LLM_MODEL", "llama3.1")
    monkeypatch.delenv("OMOIDE_LLM_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    client = llm_from_config(LLMConfig())
    assert isinstance(client, ChatCompletionsLLM)
    assert client.url == "http://127.0.0.1:11434/v1/chat/completions"
    assert client.model == "llama3.1" and client._api_key == "sk-env"
    configured = llm_from_config(
        LLMConfig(
            base_url="https://api.example.com/v1",
            model="gpt-x",
            api_key="sk-cfg",
            timeout_seconds=5,
        )
    )
    assert isinstance(configured, ChatCompletionsLLM)
    assert configured.url.startswith("https://api.example.com/v1")
    assert (configured.model, configured._api_key, configured.timeout_seconds) == (
        "gpt-x",
        "sk-cfg",
        5,
    )


def test_bad_llm_settings_are_config_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OMOIDE_LLM_MODEL", raising=False)
    with pytest.raises(ConfigError, match="base_url"):
        ChatCompletionsLLM("localhost:8080", "m")
    with pytest.raises(ConfigError, match="model"):
        llm_from_config(LLMConfig(base_url="http://127.0.0.1:8080/v1"))
