"""The commands of the pipelines: ``recall``, ``distill``, ``forget``, ``maintain``,
``audit``, ``restore``, ``admin purge``, ``index`` and ``cache put|get``.

Entries of :data:`omoide.cli.commands.COMMANDS` like the others, kept here for size (both
build on :mod:`omoide.cli.spec`; this module does not import ``commands``).
Whole-store jobs need an admin: the local operator is one, and through a server so is an
admin key.
"""

from __future__ import annotations

import argparse
from typing import Any

from omoide.cli.console import Output
from omoide.cli.spec import Command, Ops, arg, open_operations, positive
from omoide.cli.views import (
    show_audit,
    show_distill,
    show_forget,
    show_index,
    show_maintenance,
    show_recall,
    show_record,
    show_restore,
)
from omoide.service.protocol import AuditQuery

__all__ = ["PIPELINE_COMMANDS"]


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


def _audit(ops: Ops, a: argparse.Namespace) -> Any:
    query = AuditQuery(
        a.item_id,
        policy=a.policy,
        layer=a.layer,
        action=a.action,
        run_id=a.run,
        since=a.since,
        until=a.until,
        limit=a.limit,
    )
    return ops.audit(query)


PIPELINE_COMMANDS: list[Command] = [
    Command(
        "recall",
        "recall what answers a question from every layer, within a token budget "
        "(as --agent; through a server as the key's agent)",
        (
            arg("query", help="the question, in any language ('先週の決定', 'last week')"),
            arg("--session", help="include this working session's pins and messages"),
            arg("--budget", type=positive, help="token budget (default: 2,000)"),
            arg(
                "--layer",
                action="append",
                dest="layers",
                choices=["working", "episodic", "semantic", "procedural"],
                help="consult only this layer (repeatable)",
            ),
        ),
        run=lambda ops, a: ops.recall(
            a.query, session_id=a.session, budget_tokens=a.budget, layers=a.layers
        ),
        show=show_recall,
    ),
    Command(
        "distill",
        "turn old, similar episodes into knowledge documents now",
        run=lambda ops, a: ops.distill(),
        show=show_distill,
    ),
    Command(
        "forget",
        "apply the forgetting policies (never-forget items are kept; all is audited)",
        (arg("--dry-run", action="store_true", help="only show what would be done"),),
        run=lambda ops, a: ops.forget(dry_run=a.dry_run),
        show=show_forget,
    ),
    Command(
        "maintain",
        "run the daily job now: distill, forget, collection retention, caps, cache expiry",
        run=lambda ops, a: ops.maintain(),
        show=show_maintenance,
    ),
    Command(
        "audit",
        "what forgetting, retention, overflow and restores did, newest first",
        (
            arg("item_id", nargs="?", help="only this item"),
            arg("--policy", help="only this policy (e.g. retention, capacity, cache_expiry)"),
            arg("--layer", choices=["episodic", "semantic"]),
            arg("--action", help="delete, archive, compress, restore or overflow"),
            arg("--run", help="only this run id"),
            arg("--since", help="ISO 8601 date-time"),
            arg("--until", help="ISO 8601 date-time"),
            arg("--limit", type=positive, default=100),
        ),
        run=_audit,
        show=show_audit,
    ),
    Command(
        "restore",
        "bring an archived or compressed episode or document back",
        (
            arg("item_id"),
            arg("--layer", choices=["episodic", "semantic"], help="where the item is"),
            arg("--collection", help="the document's collection"),
        ),
        run=lambda ops, a: ops.restore(a.item_id, layer=a.layer, collection=a.collection),
        show=show_restore,
    ),
    Command(
        "admin purge",
        "remove an item for good, never-forget ones too (admin; audited with its snapshot)",
        (
            arg("item_id"),
            arg("--reason", required=True, help="why (kept in the audit log; not empty)"),
            arg("--layer", choices=["episodic", "semantic"], default="episodic"),
            arg("--collection", default="", help="the document's collection"),
        ),
        run=lambda ops, a: ops.purge(
            a.item_id, reason=a.reason, layer=a.layer, collection=a.collection
        ),
        show=lambda out, entry: out.line(
            f"purged {entry['layer']} item {entry['item_id']} (audit {entry['id']}, "
            f"run {entry['run_id']})"
        ),
    ),
    Command(
        "index",
        "index a folder or git repository into a collection (incremental)",
        (
            arg("root", metavar="PATH", help="folder or repository (with --url: on the server)"),
            arg("--collection", "-c", default="code", help="code (default), knowledge, ..."),
            arg("--source", help="name of the source (default: the folder's name)"),
            arg("--include", action="append", help="glob of files to index (repeatable)"),
            arg("--exclude", action="append", help="glob of files to skip (repeatable)"),
            arg("--max-file-bytes", type=positive, help="skip larger files (default 1 MB)"),
            arg("--scope", help="global (default), private, or agent:NAME,team:NAME"),
            arg("--no-git", action="store_true", help="walk the folder even in a repository"),
            arg("--dry-run", action="store_true", help="only report what would change"),
            arg("-q", "--quiet", action="store_true", help="no progress bar"),
        ),
        raw=_index,
    ),
    Command(
        "cache put",
        "cache outside information (a page, an API answer) under a key, with an expiry",
        (
            arg(
                "cache_key",
                metavar="KEY",
                help="a URL or any key; caching it again replaces the entry",
            ),
            arg("content"),
            arg("--source", required=True, help="where it came from"),
            arg("--ttl-days", type=float, default=7.0, help="days it stays valid (default 7)"),
            arg("--collection", help="default: semantic.cache_collection (knowledge)"),
            arg("--scope"),
        ),
        run=lambda ops, a: ops.cache(
            a.cache_key, a.content, a.ttl_days, a.source, collection=a.collection, scope=a.scope
        ),
        show=show_record,
    ),
    Command(
        "cache get",
        "the live entry cached under a key",
        (arg("cache_key", metavar="KEY"), arg("--collection")),
        run=lambda ops, a: ops.cached(a.cache_key, collection=a.collection),
        show=show_record,
    ),
]
