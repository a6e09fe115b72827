"""The commands of the pipelines: ``recall``, ``distill``, ``forget``, ``maintain``,
``audit``, ``restore``, ``admin purge``, ``index``, ``cache put|get`` and ``migrate`` (the
store onto PostgreSQL and a Chroma server).

Entries of :data:`omoide.cli.commands.COMMANDS` like the others, kept here for size (both
build on :mod:`omoide.cli.spec`; this module does not import ``commands``).
Whole-store jobs need an admin: the local operator is one, and through a server so is an
admin key.
"""

from __future__ import annotations

import argparse

from omoide.cli.console import Output
from omoide.cli.spec import (
    Command,
    arg,
    existing_store,
    open_operations,
    operation_command,
    positive,
)
from omoide.cli.views import (
    show_audit,
    show_cached,
    show_distill,
    show_forget,
    show_index,
    show_maintenance,
    show_recall,
    show_record,
    show_restore,
)

__all__ = ["PIPELINE_COMMANDS"]

OPERATION = operation_command


def _migrate(args: argparse.Namespace, out: Output) -> int:
    from omoide.memory import Memory
    from omoide.service.transfer.move import move_store, shared_config

    with Memory(existing_store(args)) as source:
        config = shared_config(source.config, args.to, args.chroma)
        with Memory(source.path, config=config) as target:
            report = move_store(source, target, samples=args.samples).as_dict()
    if out.json_mode:
        out.json(report)
        return 0
    rows = [
        {"table": t, "source": n, "target": report["target"][t]}
        for t, n in report["source"].items()
    ]
    out.table(
        rows,
        [("table", "table"), ("source", "source"), ("target", "target")],
        numeric=("source", "target"),
    )
    out.line(f"recall sample: {report['found']}/{report['sampled']} episodes found as before")
    out.line(
        f'now point omoide.toml at them: [storage] url = "..."; [semantic] chroma_url = '
        f'"{args.chroma}"; [episodic] vector_store = "chroma"'
    )
    return 0


def _index(args: argparse.Namespace, out: Output) -> int:
    from omoide.ingest.indexing import ProgressBar

    with open_operations(args) as ops:
        progress = None if args.quiet or out.json_mode else ProgressBar()
        report = ops.index(
            args.root,
            args.collection,
            source=args.source,
            include=args.include or (),
            exclude=args.exclude or (),
            max_file_bytes=args.max_file_bytes,
            scope=args.scope,
            use_git=False if args.no_git else None,
            dry_run=args.dry_run,
            progress=progress,
        )
    out.json(report) if out.json_mode else show_index(out, report)
    return 0


PIPELINE_COMMANDS: list[Command] = [
    OPERATION("recall", show_recall),
    OPERATION("distill", show_distill),
    OPERATION("forget", show_forget),
    OPERATION("maintain", show_maintenance),
    OPERATION("audit", show_audit),
    OPERATION("restore", show_restore),
    OPERATION(
        "purge",
        lambda out, entry: out.line(
            f"purged {entry['layer']} item {entry['item_id']} (audit {entry['id']}, "
            f"run {entry['run_id']})"
        ),
    ),
    OPERATION(
        "index",
        raw=_index,
        extra=(
            arg("--no-git", action="store_true", help="walk the folder even in a repository"),
            arg("-q", "--quiet", action="store_true", help="no progress bar"),
        ),
    ),
    OPERATION("cache", show_cached),
    OPERATION("cached", show_record),
    Command(
        "migrate",
        "copy this embedded store onto PostgreSQL and a Chroma server, and verify the copy",
        (
            arg("--to", required=True, help="the new PostgreSQL database: postgresql://..."),
            arg("--chroma", required=True, help="the Chroma server: http://host:port"),
            arg("--samples", type=positive, default=20, help="episodes whose recall is checked"),
        ),
        raw=_migrate,
        reads=True,
    ),
]
