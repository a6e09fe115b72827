"""The external information cache: one entry per key, expiry by the injected clock."""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from pathlib import Path

import pytest

from omoide import Config, ManualClock, Memory, QueryHit
from omoide.errors import ConfigError, UnknownCollectionError, ValidationError
from omoide.layers.semantic.cache import cache_id

pytestmark = pytest.mark.both_engines

RATES_URL = "https://api.example.com/rates?base=USD"


def keys(hits: list[QueryHit]) -> list[str]:
    return [str(h.metadata.get("cache_key", h.doc_id)) for h in hits]


def test_cache_stores_with_source_and_expiry(mem: Memory, clock: ManualClock) -> None:
    doc_id = mem.semantic.cache(RATES_URL, "1 USD は 150.2 円です。", 7, "api.example.com")
    assert doc_id == cache_id(RATES_URL)
    doc = mem.semantic.cache.get(RATES_URL)
    assert doc is not None
    assert doc.collection == "knowledge" == mem.semantic.cache.collection
    assert doc.document == "1 USD は 150.2 円です。"
    assert doc.metadata["source"] == "api.example.com"
    assert doc.metadata["cache_key"] == RATES_URL
    assert doc.metadata["cached_at"] == clock.now().isoformat()
    assert doc.expires_at == clock.now() + timedelta(days=7)
    assert doc.metadata["expires"] == doc.expires_at.isoformat()
    hits = mem.semantic.query("knowledge", "ドル円の為替レート")
    assert keys(hits) == [RATES_URL]


def test_recaching_a_key_replaces_the_entry(mem: Memory, clock: ManualClock) -> None:
    mem.semantic.cache(RATES_URL, "1 USD = 150.2 JPY", 1, "api.example.com")
    clock.advance(hours=12)
    mem.semantic.cache(RATES_URL, "1 USD = 151.0 JPY", 1, "api.example.com")
    assert mem.semantic.count("knowledge") == 1
    assert mem.semantic.count_chunks("knowledge") == 1
    doc = mem.semantic.cache.get(RATES_URL)
    assert doc is not None and doc.document == "1 USD = 151.0 JPY"
    # The time to live restarted: 12 hours after the first expiry it is still fresh.
    clock.advance(hours=18)
    assert mem.semantic.cache.get(RATES_URL) is not None
    hits = mem.semantic.query("knowledge", "USD JPY rate", n_results=5, dedupe=False)
    assert [h.document for h in hits] == ["1 USD = 151.0 JPY"]


def test_expired_entries_leave_results_and_are_purged(mem: Memory, clock: ManualClock) -> None:
    mem.semantic.store("knowledge", ["The office is in Kyoto."], ids=["office"])
    mem.semantic.cache("weather:kyoto", "Kyoto weather today: rain, 14°C.", 1, "weather-api")
    mem.semantic.cache("weather:osaka", "Osaka weather this week: sunny.", 30, "weather-api")
    assert len(mem.semantic.query("knowledge", "weather in Kyoto", n_results=10)) == 3

    clock.advance(days=1)  # exactly at expiry: expired
    assert mem.semantic.cache.get("weather:kyoto") is None
    assert mem.semantic.cache.get("weather:osaka") is not None
    hits = mem.semantic.query("knowledge", "weather in Kyoto", n_results=10)
    # Documents that never expire stay; only the expired entry left.
    assert sorted(keys(hits)) == ["office", "weather:osaka"]
    stats = {s.name: s for s in mem.collection_stats()}
    assert stats["knowledge"].expired == 1 and stats["knowledge"].documents == 3

    assert mem.semantic.purge_expired() == 1
    assert mem.semantic.count("knowledge") == 2
    assert mem.semantic.count_chunks("knowledge") == 2
    assert mem.semantic.purge_expired() == 0
    assert {s.name: s for s in mem.collection_stats()}["knowledge"].expired == 0


def test_recaching_an_expired_key_makes_it_fresh_again(mem: Memory, clock: ManualClock) -> None:
    mem.semantic.cache("k", "old answer", 1, "src")
    clock.advance(days=2)
    assert mem.semantic.query("knowledge", "answer") == []
    mem.semantic.cache("k", "new answer", 1, "src")
    assert [h.document for h in mem.semantic.query("knowledge", "answer")] == ["new answer"]


def test_storing_without_expiry_clears_a_previous_one(mem: Memory, clock: ManualClock) -> None:
    mem.semantic.cache("k", "cached text", 1, "src")
    mem.semantic.store("knowledge", ["now permanent text"], ids=[cache_id("k")])
    clock.advance(days=10)
    assert mem.semantic.get("knowledge", cache_id("k")).expires_at is None
    assert [h.document for h in mem.semantic.query("knowledge", "text")] == ["now permanent text"]
    assert mem.semantic.purge_expired() == 0


def test_expiry_survives_reopening(tmp_path: Path, clock: ManualClock) -> None:
    with Memory(tmp_path / "data", clock=clock) as mem:
        mem.semantic.cache("k", "short-lived fact", 2, "src")
    clock.advance(days=3)
    with Memory(tmp_path / "data", clock=clock) as mem:
        assert mem.semantic.cache.get("k") is None
        assert mem.semantic.query("knowledge", "fact") == []
        assert mem.semantic.purge_expired("knowledge") == 1


def test_cache_collection_is_configurable(tmp_path: Path, clock: ManualClock) -> None:
    base = Config()
    config = dataclasses.replace(
        base, semantic=dataclasses.replace(base.semantic, cache_collection="code")
    )
    with Memory(tmp_path / "data", clock=clock, config=config) as mem:
        mem.semantic.cache("k", "cached snippet", 1, "src")
        mem.semantic.cache("k", "elsewhere", 1, "src", collection="feedback")
        assert mem.semantic.count("code") == 1
        assert mem.semantic.count("knowledge") == 0
        assert mem.semantic.count("feedback") == 1
        doc = mem.semantic.cache.get("k", collection="feedback")
        assert doc is not None and doc.document == "elsewhere"
    with pytest.raises(ConfigError, match="cache_collection"):
        Config.from_dict({"semantic": {"cache_collection": "nowhere"}})


def test_cache_metadata_and_scope(mem: Memory) -> None:
    mem.semantic.cache(
        "k",
        "private fact",
        1,
        "src",
        metadata={"lang": "en"},
        agent_name="cto",
        scope="private",
    )
    assert mem.semantic.cache.get("k", reader="ceo") is None
    doc = mem.semantic.cache.get("k", reader="cto")
    assert doc is not None and doc.metadata["lang"] == "en"


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (("", "text", 1, "src"), "url_or_key"),
        (("k", "text", 0, "src"), "ttl_days"),
        (("k", "text", -1, "src"), "ttl_days"),
        (("k", "text", float("nan"), "src"), "ttl_days"),
        (("k", "text", "7", "src"), "ttl_days"),
        (("k", "text", 1, ""), "source"),
        (("k", "", 1, "src"), "documents[0]"),
    ],
)
def test_bad_cache_input_is_refused_and_changes_nothing(
    mem: Memory, args: tuple[object, ...], field: str
) -> None:
    with pytest.raises(ValidationError) as info:
        mem.semantic.cache(*args)
    assert info.value.field == field
    assert mem.semantic.count("knowledge") == 0


def test_cache_into_unknown_collection_is_refused(mem: Memory) -> None:
    with pytest.raises(UnknownCollectionError):
        mem.semantic.cache("k", "text", 1, "src", collection="nope")
    with pytest.raises(UnknownCollectionError):
        mem.semantic.purge_expired("nope")
