"""A simulated fleet of agents, with structured forgetting and without it, side by side.

    python -m bench.fleet                  # 60 simulated days (a few minutes per variant)
    python -m bench.fleet --days 365       # the full year
    python -m bench.fleet --days 30 --no-write   # print the table only
    python -m bench.fleet --scenario logistics   # another fleet (see bench/scenarios)

Plays :class:`omoide.simulation.FleetScenario` (24 agents; ``--scenario`` picks another fleet
of :mod:`bench.scenarios`, whose section is ``fleet-<name>`` and whose plots and series go
to bench/fleet/<name>/) through the public API on a manual clock (see
:mod:`omoide.simulation.runner`: what is written, how questions are asked and scored) twice in
the same invocation: with nightly ``Memory.maintain()`` and the default capacity, and a
baseline with no distillation, no forgetting and no capacity limit. Prints a table at days
30, 90, 180, 365 (those reached) and the last day, writes it to the ``fleet`` section of
bench/RESULTS.md and, when matplotlib is installed (``pip install 'omoide[plots]'``), plots
the series of both variants on the same axes to bench/fleet/*.png.

While a long run is going, the section and the plots are refreshed every ``--checkpoint``
days and marked partial, so a run stopped early still leaves its figures. The series are
saved beside the plots (bench/fleet/series.json); ``--replot`` redoes the section and the
plots from that file without replaying the run:

    python -m bench.fleet --replot bench/fleet/series.json
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from bench.results import machine, table, write_section
from bench.scenarios import SCENARIOS, make
from omoide.simulation.runner import (
    FLEET_POLICIES,
    SUMMARY_HEADERS,
    FleetRun,
    simulate,
    summary_rows,
)

PLOTS = Path(__file__).resolve().parent / "fleet"
SERIES = PLOTS / "series.json"
#: Missed questions listed per variant in the report.
MISSED_SHOWN = 40


def report(
    run: FleetRun, wall_seconds: float, *, partial: bool, machine_line: str | None = None
) -> str:
    """The Markdown section for bench/RESULTS.md (``machine_line``: where it ran, if not
    here and now)."""
    events = sum(run.events)
    state = (
        f"**Partial: stopped at day {run.days_done} of {run.days}.** "
        if partial
        else f"{run.days_done} simulated days. "
    )
    per_variant = ", ".join(f"{v} {r.wall_seconds / 60:.1f} min" for v, r in run.runs.items())
    per_variant += "; the first variant embeds every passage once for both"
    policy = FLEET_POLICIES[0]
    agents = len(getattr(make(run.scenario, run.seed), "agents", ())) or 24
    command = f"python -m bench.fleet --days {run.days} --seed {run.seed}"
    if run.scenario != "fleet":
        command += f" --scenario {run.scenario}"
    return "\n\n".join(
        [
            f"## Fleet simulation (`{command}`)",
            f"Machine: {machine_line or machine()} (shared with other jobs: times are noisy). "
            f"{state}"
            f"{agents} agents, {run.events_per_agent:g} events per agent per day on average, "
            f"{events:,} events written per variant. Wall time {wall_seconds / 60:.1f} min "
            f"({per_variant}).",
            "**forgetting**: default configuration (episodic capacity 10,000, the four "
            f"policies) plus `{policy['name']}` (`{policy['condition']}` → "
            f"{policy['action']}), `Memory.maintain()` every night. **baseline**: the same "
            "writes and questions, no maintenance, capacity never reached. Questions go "
            "through `Memory.recall` (episodic and semantic layers) as the asking agent. "
            "Sizes are at the day; accuracy, Recall@5, latency and maintenance are over the "
            "30 days ending there; never-forget is the last check in that window (every "
            "protected episode written so far: present, active, unchanged).",
            table(SUMMARY_HEADERS, summary_rows(run)),
            _by_kind(run),
            _missed(run),
            "Plots: [sizes](fleet/sizes.png), [answers](fleet/answers.png), "
            "[times](fleet/times.png).",
        ]
    )


def _by_kind(run: FleetRun) -> str:
    """Answers per kind of question over the whole run."""
    kinds = ("current_fact", "error_fix", "decision", "feedback")
    rows = []
    for variant, series in run.runs.items():
        cells = [variant]
        for kind in kinds:
            asked = sum(s.by_kind.get(kind, (0, 0))[0] for s in series.days)
            right = sum(s.by_kind.get(kind, (0, 0))[1] for s in series.days)
            cells.append(f"{100 * right / asked:.1f}% ({right}/{asked})" if asked else "—")
        rows.append(cells)
    head = "Whole run, per kind of question (current fact: top item; others: first five):"
    return head + "\n\n" + table(["variant", *kinds], rows)


def _missed(run: FleetRun) -> str:
    """The questions each variant answered wrongly, by day (a few per variant)."""
    parts = []
    for variant, series in run.runs.items():
        lines = [f"- day {s.day}: {m}" for s in series.days for m in s.missed]
        shown = lines[:MISSED_SHOWN]
        if len(lines) > len(shown):
            shown.append(f"- … and {len(lines) - len(shown)} more")
        parts.append(
            f"Missed by **{variant}** ({len(lines)}):\n\n" + "\n".join(shown or ["- none"])
        )
    return "\n\n".join(parts)


def plot(run: FleetRun, directory: Path = PLOTS) -> list[Path]:
    """Write the plots; return their paths (none, with a message, without matplotlib)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed (pip install 'omoide[plots]'): skipping the plots")
        return []
    directory.mkdir(parents=True, exist_ok=True)
    styles = {"forgetting": "tab:blue", "baseline": "tab:orange"}
    written = []

    def figure(name: str, panels: Sequence[tuple[str, str]], series_of: object) -> None:
        fig, axes = plt.subplots(len(panels), 1, figsize=(8, 2.6 * len(panels)), sharex=True)
        for ax, (key, label) in zip(np.atleast_1d(axes), panels, strict=True):
            for variant, vrun in run.runs.items():
                xs, ys = series_of(vrun, key)  # type: ignore[operator]
                if len(xs):
                    # The baseline dashed, so that equal series stay visible (never-forget).
                    dash = "--" if variant == "baseline" else "-"
                    ax.plot(xs, ys, dash, label=variant, color=styles.get(variant))
            ax.set_ylabel(label)
            ax.grid(alpha=0.3)
            ax.legend(loc="best", fontsize=8)
        np.atleast_1d(axes)[-1].set_xlabel("simulated day")
        fig.suptitle(f"omoide fleet simulation, seed {run.seed}, {run.days_done} days")
        fig.tight_layout()
        path = directory / f"{name}.png"
        fig.savefig(path, dpi=90)
        plt.close(fig)
        written.append(path)

    def sizes(vrun: object, key: str) -> tuple[list[int], list[float]]:
        days = vrun.days  # type: ignore[attr-defined]
        scale = 1e6 if key == "disk_bytes" else 1
        return [s.day for s in days], [getattr(s, key) / scale for s in days]

    def answers(vrun: object, key: str) -> tuple[list[int], list[float]]:
        xs, ys = [], []
        days = vrun.days  # type: ignore[attr-defined]
        for s in days:
            window = vrun.window(s.day)  # type: ignore[attr-defined]
            if key == "never_forget":
                if not s.protected_checked:
                    continue
                value = 100 * s.protected_intact / s.protected_checked
            else:
                right = sum(
                    getattr(w, f"{key}_{'correct' if key == 'fact' else 'hits'}") for w in window
                )
                asked = sum(getattr(w, f"{key}_questions") for w in window)
                if not asked or not (s.fact_questions or s.recall_questions):
                    continue
                value = 100 * right / asked
            xs.append(s.day)
            ys.append(value)
        return xs, ys

    def times(vrun: object, key: str) -> tuple[list[int], list[float]]:
        days = vrun.days  # type: ignore[attr-defined]
        if key == "maintenance":
            pts = [(s.day, s.maintenance_seconds) for s in days if s.maintenance_seconds]
        else:
            q = 50 if key == "p50" else 95
            pts = [(s.day, float(np.percentile(s.recall_ms, q))) for s in days if s.recall_ms]
        return [p[0] for p in pts], [p[1] for p in pts]

    figure(
        "sizes",
        [
            ("episodes", "active episodes"),
            ("documents", "semantic documents"),
            ("archived", "archived items"),
            ("disk_bytes", "data dir MB"),
        ],
        sizes,
    )
    figure(
        "answers",
        [
            ("fact", "current-fact acc. %\n(30-day window)"),
            ("recall", "Recall@5 %\n(30-day window)"),
            ("never_forget", "never-forget %"),
        ],
        answers,
    )
    figure(
        "times",
        [
            ("maintenance", "nightly maint. s"),
            ("p50", "recall p50 ms\n(that day)"),
            ("p95", "recall p95 ms\n(that day)"),
        ],
        times,
    )
    return written


def save(run: FleetRun, wall_seconds: float, path: Path = SERIES) -> Path:
    """Write the series, the wall time and the machine to ``path`` (JSON)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"wall_seconds": wall_seconds, "machine": machine(), "run": run.as_dict()}
    path.write_text(json.dumps(data, ensure_ascii=False, separators=(",", ":")), "utf-8")
    return path


def load(path: Path) -> tuple[FleetRun, float, str]:
    """The run, wall seconds and machine line :func:`save` wrote to ``path``."""
    data = json.loads(Path(path).read_text("utf-8"))
    return FleetRun.from_dict(data["run"]), float(data["wall_seconds"]), str(data["machine"])


def section(run: FleetRun) -> str:
    """The RESULTS.md section of a run's scenario."""
    return "fleet" if run.scenario == "fleet" else f"fleet-{run.scenario}"


def plots_of(run: FleetRun) -> Path:
    """Where a run's plots and series go."""
    return PLOTS if run.scenario == "fleet" else PLOTS / run.scenario


def publish(run: FleetRun, wall_seconds: float, *, machine_line: str | None = None) -> None:
    """Write the final section, the series and the plots, and say where."""
    body = report(run, wall_seconds, partial=run.days_done < run.days, machine_line=machine_line)
    print(body)
    print(f"\nwritten to {write_section(section(run), body)}")
    if machine_line is None:
        print(f"series: {save(run, wall_seconds, plots_of(run) / SERIES.name)}")
    for path in plot(run, plots_of(run)):
        print(f"plot: {path}")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--days", type=int, default=60, help="simulated days (default 60)")
    parser.add_argument("--seed", type=int, default=7, help="scenario seed (default 7)")
    parser.add_argument(
        "--scenario", choices=list(SCENARIOS), default="fleet", help="which fleet (fleet)"
    )
    parser.add_argument(
        "--events-per-agent", type=float, help="mean events per agent per day (per scenario)"
    )
    parser.add_argument("--dir", help="keep the two stores here (default: a temporary dir)")
    parser.add_argument(
        "--checkpoint", type=int, default=30, help="refresh RESULTS and plots every N days"
    )
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument(
        "--replot", type=Path, metavar="SERIES", help="redo the section and plots from a series"
    )
    args = parser.parse_args(argv)
    if args.replot is not None:
        run, wall_seconds, machine_line = load(args.replot)
        publish(run, wall_seconds, machine_line=machine_line)
        return
    started = time.perf_counter()

    def progress(run: FleetRun, day: int) -> None:
        done = day + 1
        f = run.runs.get("forgetting")
        b = run.runs.get("baseline")
        if done % 5 == 0 or done == run.days:
            print(
                f"day {done:4d}  episodes {f.days[-1].episodes if f else '-':>6} vs "
                f"{b.days[-1].episodes if b else '-':>6}  "
                f"elapsed {(time.perf_counter() - started) / 60:.1f} min",
                flush=True,
            )
        if not args.no_write and done % args.checkpoint == 0 and done < run.days:
            elapsed = time.perf_counter() - started
            write_section(section(run), report(run, elapsed, partial=True))
            save(run, elapsed, plots_of(run) / SERIES.name)
            plot(run, plots_of(run))

    with tempfile.TemporaryDirectory(prefix="omoide-fleet-") as tmp:
        scenario = make(args.scenario, args.seed, args.events_per_agent)
        run = simulate(
            args.dir or tmp,
            days=args.days,
            seed=args.seed,
            events_per_agent=float(getattr(scenario, "events_per_agent", 0.0)),
            progress=progress,
            scenario=lambda: make(args.scenario, args.seed, args.events_per_agent),
            scenario_name=args.scenario,
        )
    wall_seconds = time.perf_counter() - started
    if args.no_write:
        print(report(run, wall_seconds, partial=False))
    else:
        publish(run, wall_seconds)


if __name__ == "__main__":
    main()
