"""API keys: minted once, stored hashed, verified in constant time, revocable."""

from __future__ import annotations

import pytest

from omoide import ManualClock, Memory
from omoide.errors import AuthenticationError, NotFoundError, ValidationError
from omoide.service.keys import KeyStore, hash_key


@pytest.fixture
def keys(mem: Memory) -> KeyStore:
    assert mem.db is not None
    return KeyStore(mem.db, clock=mem.clock)


def test_the_migration_creates_the_keys_table(mem: Memory) -> None:
    assert mem.db is not None
    assert "0006_server_keys" in mem.db.applied_migrations()


def test_a_key_names_its_agent_and_only_its_hash_is_stored(mem: Memory, keys: KeyStore) -> None:
    info, secret = keys.add("ceo", label="laptop")
    assert secret.startswith(f"omk_{info.id}_") and len(secret) == 4 + 12 + 1 + 43
    assert keys.verify(secret) == info and info.agent_name == "ceo" and not info.admin
    assert mem.db is not None
    row = mem.db.query_one("SELECT * FROM api_keys WHERE id = ?", (info.id,))
    assert row is not None and row["key_hash"] == hash_key(secret)
    assert secret not in [str(v) for v in tuple(row)]
    _, other = keys.add("cto", admin=True)
    assert other != secret and keys.verify(other).admin


@pytest.mark.parametrize(
    "presented",
    [None, "", "Bearer", "omk_short", "omk_000000000000_" + "A" * 43],
)
def test_missing_malformed_and_unknown_keys_are_refused(
    keys: KeyStore, presented: str | None
) -> None:
    keys.add("ceo")
    with pytest.raises(AuthenticationError):
        keys.verify(presented)


def test_a_forged_secret_for_a_real_id_is_refused(keys: KeyStore) -> None:
    _, secret = keys.add("ceo")
    forged = secret[:-4] + ("AAAA" if not secret.endswith("AAAA") else "BBBB")
    with pytest.raises(AuthenticationError, match="unknown"):
        keys.verify(forged)


def test_revoked_keys_are_refused_and_listed_only_on_request(
    keys: KeyStore, clock: ManualClock
) -> None:
    info, secret = keys.add("ceo")
    kept, _ = keys.add("cto")
    clock.advance(hours=1)
    revoked = keys.revoke(info.id)
    assert revoked.revoked_at == clock.now() and not revoked.active
    assert keys.revoke(info.id).revoked_at == revoked.revoked_at  # idempotent
    with pytest.raises(AuthenticationError, match="revoked"):
        keys.verify(secret)
    assert [k.id for k in keys.list_keys()] == [kept.id]
    assert {k.id for k in keys.list_keys(include_revoked=True)} == {info.id, kept.id}
    with pytest.raises(NotFoundError):
        keys.revoke("000000000000")


@pytest.mark.parametrize("agent", ["", " ceo", "a,b", "team:x", "two words", "x" * 201])
def test_agent_names_must_fit_the_scope_grammar(keys: KeyStore, agent: str) -> None:
    with pytest.raises(ValidationError) as info:
        keys.add(agent)
    assert info.value.field == "agent_name"
    assert keys.list_keys() == []
