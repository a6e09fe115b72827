"""The public surface: what ``import omoide`` offers is small, sorted and deliberate."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from importlib.metadata import version
from pathlib import Path

import numpy as np

import omoide
import omoide.providers
from omoide.testing import HashEmbedder, ManualClock

PUBLIC = [
    "LLM",
    "AsyncClient",
    "AsyncMemory",
    "AuditEntry",
    "Client",
    "Clock",
    "CollectionStats",
    "Config",
    "Context",
    "ContextItem",
    "DistillReport",
    "Embedder",
    "Episode",
    "ForgetReport",
    "ForgettingPolicy",
    "IndexReport",
    "MaintenanceReport",
    "ManualClock",
    "Memory",
    "Message",
    "OmoideError",
    "Pin",
    "Procedure",
    "ProcedureVersion",
    "QueryHit",
    "SemanticDocument",
    "SystemClock",
    "TokenCounter",
    "__version__",
]


def _isort(name: str) -> tuple[int, str]:
    """Ruff's order for ``__all__``: CONSTANTS, then Classes, then the rest."""
    return (0 if name.isupper() else 1 if name[:1].isupper() else 2, name)


def test_the_public_names_are_pinned_and_sorted() -> None:
    assert omoide.__all__ == PUBLIC
    assert sorted(omoide.__all__, key=_isort) == omoide.__all__
    assert all(hasattr(omoide, name) for name in omoide.__all__)


def test_providers_export_their_base_classes_and_implementations() -> None:
    assert sorted(omoide.providers.__all__, key=_isort) == omoide.providers.__all__
    for name in omoide.providers.__all__:
        assert getattr(omoide.providers, name).__module__.startswith("omoide.providers.")
    assert omoide.providers.Embedder is omoide.Embedder


def test_version_comes_from_the_package_metadata() -> None:
    assert omoide.__version__ == version("omoide")


def test_hash_embedder_is_deterministic_and_shares_words() -> None:
    embedder = HashEmbedder()
    a, b, c = embedder.embed_passages(
        ["deploy failed with a timeout", "the deploy failed again", "lunch menu"]
    )
    again = HashEmbedder().embed_passages(["deploy failed with a timeout"])[0]
    assert np.allclose(a, again)
    assert float(a @ b) > float(a @ c)
    ja = embedder.embed_passages(["デプロイが失敗した", "デプロイ失敗"])
    assert float(ja[0] @ ja[1]) > 0.3


def test_a_memory_runs_on_the_testing_fakes(tmp_path: Path) -> None:
    clock = ManualClock(datetime(2026, 4, 1, tzinfo=UTC))
    with omoide.Memory(tmp_path / "m", embedder=HashEmbedder(), clock=clock) as mem:
        episode = mem.episodic.record("ops", "error", "デプロイ失敗: タイムアウト")
        clock.advance(timedelta(days=7))
        clock.advance(days=23)
        assert clock.now() == datetime(2026, 5, 1, tzinfo=UTC)
        hits = mem.episodic.recall("デプロイ失敗", reader="ops")
        assert [h.id for h in hits] == [episode.id]
