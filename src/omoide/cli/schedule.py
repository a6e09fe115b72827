"""Daily maintenance from the shell, for cron or as a small daemon.

::

    python -m omoide.cli.schedule ./omoide-data --once     # 0 3 * * *  (crontab)
    python -m omoide.cli.schedule ./omoide-data            # or stay up and run daily

Each run prints one JSON line. See :mod:`omoide.pipelines.scheduler` for the schedule itself;
``omoide serve`` runs the same job in its own process.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict

from omoide.memory import Memory
from omoide.pipelines.scheduler import MaintenanceReport, Scheduler

__all__ = ["main"]


def _summary(report: MaintenanceReport) -> dict[str, object]:
    distill = asdict(report.distill)
    distill["skipped"] = len(report.distill.skipped)
    return {
        "started_at": report.started_at.isoformat(),
        "seconds": round(report.seconds, 3),
        "distill": distill,
        "forget": {
            p.name: {"candidates": p.candidates, "acted": len(p.acted), "failed": len(p.failed)}
            for p in report.forget.policies
        },
        "retention": None
        if report.retention is None
        else {
            policy: report.retention.count(policy)
            for policy in ("retention", "capacity", "cache_expiry")
        },
    }


def main(argv: list[str] | None = None) -> int:
    """``python -m omoide.cli.schedule DIR [--once] [--at HH:MM]``: maintenance for cron or as
    a daemon. Prints one JSON line per run."""
    parser = argparse.ArgumentParser(prog="python -m omoide.cli.schedule", description=__doc__)
    parser.add_argument("path", nargs="?", help="data directory (default: $OMOIDE_HOME)")
    parser.add_argument("--once", action="store_true", help="run maintenance now and exit")
    parser.add_argument("--at", help="daily time, 'HH:MM' or 'HH:MM Area/City'")
    args = parser.parse_args(argv)
    with Memory(args.path) as memory:
        if args.once:
            print(json.dumps(_summary(memory.maintain()), ensure_ascii=False), flush=True)
            return 0
        scheduler = Scheduler(memory, schedule=args.at)
        while True:
            before = len(scheduler.reports)
            scheduler.run_forever(max_runs=1)
            for report in scheduler.reports[before:]:
                print(json.dumps(_summary(report), ensure_ascii=False), flush=True)


if __name__ == "__main__":  # pragma: no cover - exercised through a subprocess
    sys.exit(main())
