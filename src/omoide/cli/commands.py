"""The commands of ``omoide``: a table of thin calls into the library.

Every command that touches memory runs an operation of :mod:`omoide.service.local`, either on a
data directory this process opens (``--path``, ``$OMOIDE_HOME``, else ``./omoide-data``) or
on a running server (``--url`` / ``$OMOIDE_URL`` with ``--key`` / ``$OMOIDE_API_KEY``), since
a server owns its directory. Commands are declared in :data:`COMMANDS`; adding one is a
function and an entry there. ``--json`` prints machine output; otherwise tables.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from omoide.errors import OmoideError, StoreLockedError, ValidationError
from omoide.storage.permissions import open_private

if TYPE_CHECKING:
    from omoide.service.local import LocalOperations
    from omoide.service.remote import RemoteOperations

    Ops = LocalOperations | RemoteOperations

from omoide.cli.console import Output, ProgressReporter
from omoide.cli.views import (
    show_collections,
    show_documents,
    show_episodes,
    show_history,
    show_hits,
    show_keys,
    show_match,
    show_new_key,
    show_procedures,
    show_record,
    show_session,
    show_stats,
)

__all__ = ["COMMANDS", "Command", "build_parser", "main"]


@dataclass(frozen=True)
class Arg:
    flags: tuple[str, ...]
    options: dict[str, Any] = field(default_factory=dict)


def arg(*flags: str, **options: Any) -> Arg:
    return Arg(flags, options)


@dataclass(frozen=True)
class Command:
    """One CLI command: ``name`` may be ``"group sub"``; ``run(ops, args)`` returns a result
    that ``show(out, result)`` prints (``--json`` prints it as JSON); ``raw`` commands get
    ``(args, out)`` and return an exit code instead."""

    name: str
    help: str
    args: tuple[Arg, ...] = ()
    run: Callable[[Ops, argparse.Namespace], Any] | None = None
    show: Callable[[Output, Any], None] | None = None
    raw: Callable[[argparse.Namespace, Output], int] | None = None
    common: bool = True


# -- data sources ------------------------------------------------------------------------


def _env(args: argparse.Namespace, name: str, env: str) -> Any:
    value = getattr(args, name, None)
    return value if value is not None else os.environ.get(env) or None


@contextmanager
def open_operations(args: argparse.Namespace) -> Iterator[Ops]:
    """The operations of this invocation: on a server (``--url``) or a local directory."""
    url, key, agent = _env(args, "url", "OMOIDE_URL"), _env(args, "key", "OMOIDE_API_KEY"), None
    agent = _env(args, "agent", "OMOIDE_AGENT")
    if url:
        from omoide.service.remote import RemoteOperations

        if getattr(args, "agent", None):
            raise ValidationError("--agent", "with --url the API key decides the agent")
        yield RemoteOperations(url, key)
        return
    from omoide.memory import Memory
    from omoide.service.local import Caller, LocalOperations

    with Memory(_env(args, "path", "OMOIDE_HOME")) as mem:
        yield LocalOperations(mem, Caller.operator(mem, agent))


def _json_arg(name: str, text: str | None) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ValidationError(name, f"not valid JSON: {exc}") from None


def _meta(pairs: Sequence[str] | None) -> dict[str, Any] | None:
    if not pairs:
        return None
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise ValidationError("--meta", f"expected KEY=VALUE, got {pair!r}")
        lowered = value.lower()
        out[key] = (
            lowered == "true"
            if lowered in ("true", "false")
            else int(value)
            if value.lstrip("-").isdigit()
            else value
        )
    return out


# -- commands ----------------------------------------------------------------------------


def _demo(args: argparse.Namespace, out: Output) -> int:
    from omoide.cli.demo import run_demo

    run_demo(getattr(args, "demo_path", None) or getattr(args, "path", None), say=out.line)
    return 0


def _simulate(args: argparse.Namespace, out: Output) -> int:
    import tempfile

    from omoide.simulation.runner import SUMMARY_HEADERS, simulate, summary_rows

    def progress(run: Any, day: int) -> None:
        if (day + 1) % 10 == 0:
            out.line(f"day {day + 1} of {run.days}")

    with tempfile.TemporaryDirectory(prefix="omoide-simulate-") as tmp:
        run = simulate(args.sim_dir or tmp, days=args.days, seed=args.seed, progress=progress)
    rows = [dict(zip(SUMMARY_HEADERS, row, strict=True)) for row in summary_rows(run)]
    out.table(rows, [(h, h) for h in SUMMARY_HEADERS], title="fleet simulation")
    return 0


def _init(args: argparse.Namespace, out: Output) -> int:
    from omoide.memory import CONFIG_NAME, Memory, resolve_path

    path = resolve_path(_env(args, "path", "OMOIDE_HOME"))
    created = not (path / "omoide.db").exists()
    with Memory(path) as mem:
        config = mem.path / CONFIG_NAME
        if not config.exists():
            config.write_text(CONFIG_TEMPLATE, encoding="utf-8")
        result = {"path": str(mem.path), "created": created, "config": str(config)}
    if out.json_mode:
        out.json(result)
    else:
        out.line(f"{'created' if created else 'found'} a data directory at {result['path']}")
        out.line(f"configuration: {config} (every setting has a default)")
    return 0


CONFIG_TEMPLATE = """\
# omoide configuration: every setting has a working default; uncomment to change one.
# default_scope = "global"            # or "private", or "agent:cto,team:leads"
#
# [teams]
# leads = ["ceo", "cto"]
#
# [episodic]
# max_entries = 10000
"""


def _export(args: argparse.Namespace, out: Output) -> int:
    target = args.file
    with open_operations(args) as ops, ProgressReporter(enabled=not args.quiet) as progress:
        lines = ops.export_lines(embeddings=not args.no_embeddings, progress=progress)
        stream: IO[str]
        if target in (None, "-"):
            stream, close = sys.stdout, False
        else:
            # 0600: an export holds every agent's memories.
            stream, close = open_private(target, "w", encoding="utf-8", newline="\n"), True
        count = 0
        try:
            for line in lines:
                stream.write(line + "\n")
                count += 1
        finally:
            if close:
                stream.close()
    if target not in (None, "-"):
        summary = {"file": target, "lines": count}
        out.json(summary) if out.json_mode else out.line(f"exported {count:,} lines to {target}")
    return 0


def _import(args: argparse.Namespace, out: Output) -> int:
    source = sys.stdin if args.file == "-" else open(args.file, encoding="utf-8")  # noqa: SIM115
    try:
        with open_operations(args) as ops, ProgressReporter(enabled=not args.quiet) as progress:
            report = ops.import_lines(source, reembed=args.reembed, progress=progress)
    finally:
        if source is not sys.stdin:
            source.close()
    if out.json_mode:
        out.json(report)
        return 0
    rows = [
        {"kind": k, "imported": n, "skipped": report["skipped"].get(k, 0)}
        for k, n in report["imported"].items()
    ]
    columns = [("kind", "kind"), ("imported", "imported"), ("skipped", "skipped")]
    out.table(rows, columns, numeric=("imported", "skipped"))
    if report["reembedded"]:
        out.line(f"{report['reembedded']:,} episodes re-embedded")
    return 0


def _serve(args: argparse.Namespace, out: Output) -> int:
    from omoide.memory import Memory

    if _env(args, "url", "OMOIDE_URL"):
        raise ValidationError("--url", "serve owns a data directory; give --path instead")
    try:
        from omoide.server.rest import serve
    except ImportError as exc:
        raise OmoideError(
            f"serve needs the server extra: pip install 'omoide[server]' ({exc})"
        ) from None
    with Memory(_env(args, "path", "OMOIDE_HOME")) as mem:
        _warn_about_keys(mem, args.host)
        sys.stderr.write(
            f"omoide: serving {mem.path} on http://{args.host}:{args.port} "
            f"(REST /v1{'' if args.no_mcp else ', MCP /mcp'}); Ctrl+C stops\n"
        )
        serve(
            mem,
            host=args.host,
            port=args.port,
            mcp=not args.no_mcp,
            log_level=args.log_level,
            maintenance=not args.no_maintenance,
            dashboard=not args.no_dashboard,
        )
    return 0


def _warn_about_keys(mem: Any, host: str) -> None:
    from omoide.service.keys import KeyStore

    if not KeyStore(mem.db, clock=mem.clock).list_keys():
        sys.stderr.write(
            "omoide: no API keys yet, so every request will be refused: stop the server and "
            "run `omoide keys add AGENT --admin`\n"
        )
    if host not in ("127.0.0.1", "localhost", "::1"):
        sys.stderr.write(f"omoide: listening on {host}: reachable beyond this machine\n")


def _mcp(args: argparse.Namespace, out: Output) -> int:
    try:
        from omoide.server.mcp_server import create_mcp_app, create_mcp_server, local_operations
    except ImportError as exc:
        raise OmoideError(f"mcp needs the mcp extra: pip install 'omoide[mcp]' ({exc})") from None
    url = _env(args, "url", "OMOIDE_URL")
    if url:
        from omoide.service.remote import RemoteOperations

        if args.transport != "stdio":
            raise ValidationError("--transport", "with --url the MCP server runs over stdio")
        remote = RemoteOperations(url, _env(args, "key", "OMOIDE_API_KEY"))
        create_mcp_server(lambda caller: remote).run("stdio")
        return 0
    from omoide.memory import Memory
    from omoide.service.local import Caller

    with Memory(_env(args, "path", "OMOIDE_HOME")) as mem:
        if args.transport == "http":
            import uvicorn

            _warn_about_keys(mem, args.host)
            app = create_mcp_app(mem, host=args.host)
            uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level)
            return 0
        agent = _env(args, "agent", "OMOIDE_AGENT")
        if not agent:
            raise ValidationError(
                "--agent",
                "the stdio MCP server acts as one agent: pass --agent NAME or set OMOIDE_AGENT",
            )
        create_mcp_server(local_operations(mem, Caller.for_agent(mem, agent))).run("stdio")
    return 0


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be >= 1")
    return value


SERVE_ARGS = (
    arg("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1, this machine)"),
    arg("--port", type=int, default=8765, help="port (default: 8765)"),
    arg("--log-level", default="warning", choices=["debug", "info", "warning", "error"]),
)

COMMANDS: list[Command] = [
    Command(
        "demo",
        "play a scripted tour of the four layers (three agents, four simulated weeks)",
        (
            arg(
                "--path",
                dest="demo_path",
                help="keep the demo's data in this directory "
                "(default: a temporary directory, removed afterwards)",
            ),
        ),
        raw=_demo,
        common=False,
    ),
    Command(
        "simulate",
        "play the seeded 24-agent fleet with and without forgetting, and compare them",
        (
            arg("--days", type=_positive, default=60, help="simulated days (default: 60)"),
            arg("--seed", type=int, default=7, help="scenario seed (default: 7)"),
            arg("--dir", dest="sim_dir", help="keep both stores here (default: a temporary dir)"),
        ),
        raw=_simulate,
        common=False,
    ),
    Command("init", "create a data directory (and a commented omoide.toml)", raw=_init),
    Command(
        "record",
        "record an episode (locally as --agent; through a server as the key's agent)",
        (
            arg("event_type", help="decision, error, success, feedback, conflict, or another"),
            arg("description", help="what happened"),
            arg("--outcome", help="what came of it"),
            arg("--importance", type=float, help="0..1 (default: by event type)"),
            arg("--tag", action="append", dest="tags", help="a tag (repeatable)"),
            arg("--context", help="details as a JSON object"),
            arg("--scope", help="global (default), private, or agent:NAME,team:NAME"),
            arg("--id", help="an id of your own (default: generated)"),
            arg("--timestamp", help="when it happened, ISO 8601 (default: now)"),
        ),
        run=lambda ops, a: ops.record(
            a.event_type,
            a.description,
            outcome=a.outcome,
            importance=a.importance,
            tags=a.tags,
            context=_json_arg("--context", a.context),
            scope=a.scope,
            id=a.id,
            timestamp=a.timestamp,
        ),
        show=show_record,
    ),
    Command(
        "episodes search",
        "search episodes by relevance, importance and freshness",
        (
            arg("query", help="what to look for, in any language"),
            arg("--by", help="only episodes this agent recorded"),
            arg("--type", dest="event_type", help="only this event type"),
            arg("--since", help="ISO 8601 date-time"),
            arg("--until", help="ISO 8601 date-time"),
            arg("--tag", action="append", dest="tags", help="required tag (repeatable)"),
            arg("-k", "--top-k", type=_positive, default=10),
        ),
        run=lambda ops, a: ops.search_episodes(
            a.query,
            agent_name=a.by,
            event_type=a.event_type,
            since=a.since,
            until=a.until,
            tags=a.tags,
            top_k=a.top_k,
        ),
        show=show_episodes,
    ),
    Command(
        "episodes list",
        "list episodes, newest first",
        (
            arg("--by", help="only episodes this agent recorded"),
            arg("--type", dest="event_type"),
            arg("--since"),
            arg("--until"),
            arg("--limit", type=_positive, default=50),
            arg("--offset", type=int, default=0),
        ),
        run=lambda ops, a: ops.list_episodes(
            agent_name=a.by,
            event_type=a.event_type,
            since=a.since,
            until=a.until,
            limit=a.limit,
            offset=a.offset,
        ),
        show=show_episodes,
    ),
    Command(
        "episodes show",
        "show one episode",
        (arg("id"),),
        run=lambda ops, a: ops.get_episode(a.id),
        show=show_record,
    ),
    Command(
        "episodes update",
        "record an episode's outcome, or change its importance or tags (its recorder only)",
        (
            arg("id"),
            arg("--outcome"),
            arg("--importance", type=float),
            arg("--tag", action="append", dest="tags", help="replaces the tags (repeatable)"),
        ),
        run=lambda ops, a: ops.update_episode(
            a.id, outcome=a.outcome, importance=a.importance, tags=a.tags
        ),
        show=show_record,
    ),
    Command(
        "episodes delete",
        "delete an episode (never-forget episodes are refused)",
        (arg("id"),),
        run=lambda ops, a: ops.delete_episode(a.id),
        show=show_record,
    ),
    Command(
        "collections",
        "the semantic collections: purpose, retention, cap and usage",
        run=lambda ops, a: ops.collections(),
        show=show_collections,
    ),
    Command(
        "store",
        "store documents in a semantic collection",
        (
            arg("collection", help="knowledge, code, decisions, feedback, or a configured one"),
            arg("documents", nargs="*", help="document texts"),
            arg("--file", action="append", dest="files", help="a file to store (repeatable)"),
            arg("--id", action="append", dest="ids", help="ids, one per document"),
            arg("--meta", action="append", help="KEY=VALUE metadata for every document"),
            arg("--scope", help="global (default), private, or agent:NAME,team:NAME"),
        ),
        run=lambda ops, a: _store(ops, a),
        show=lambda out, r: out.line(f"stored in {r['collection']}: {', '.join(r['ids'])}"),
    ),
    Command(
        "query",
        "search a semantic collection by meaning",
        (
            arg("collection"),
            arg("text", help="the question, in any language"),
            arg("-n", "--n-results", type=_positive, default=5),
            arg("--where", help="a ChromaDB metadata filter, as JSON"),
        ),
        run=lambda ops, a: ops.query(
            a.collection, a.text, a.n_results, _json_arg("--where", a.where)
        ),
        show=show_hits,
    ),
    Command(
        "documents list",
        "list the documents of a collection, newest first",
        (
            arg("collection"),
            arg("--limit", type=_positive, default=50),
            arg("--offset", type=int, default=0),
        ),
        run=lambda ops, a: ops.list_documents(a.collection, limit=a.limit, offset=a.offset),
        show=show_documents,
    ),
    Command(
        "documents show",
        "show one document",
        (arg("collection"), arg("id")),
        run=lambda ops, a: ops.get_document(a.collection, a.id),
        show=show_record,
    ),
    Command(
        "documents delete",
        "delete a document (its owner only; never-forget documents are refused)",
        (arg("collection"), arg("id")),
        run=lambda ops, a: ops.delete_document(a.collection, a.id),
        show=show_record,
    ),
    Command(
        "pin",
        "pin an instruction into an agent's working memory",
        (arg("session"), arg("key"), arg("content"), arg("--reason", default="")),
        run=lambda ops, a: ops.pin(a.session, a.key, a.content, a.reason),
        show=show_record,
    ),
    Command(
        "unpin",
        "remove a pinned item",
        (arg("session"), arg("key")),
        run=lambda ops, a: ops.unpin(a.session, a.key),
        show=show_record,
    ),
    Command(
        "working",
        "show an agent's working memory of a session, as rendered for a prompt",
        (arg("session"),),
        run=lambda ops, a: ops.working(a.session),
        show=show_session,
    ),
    Command(
        "procedures list",
        "list procedures",
        run=lambda ops, a: ops.procedures(),
        show=show_procedures,
    ),
    Command(
        "procedures show",
        "show a procedure at its current version",
        (arg("name"),),
        run=lambda ops, a: ops.get_procedure(a.name),
        show=show_record,
    ),
    Command(
        "procedures history",
        "every version of a procedure with its figures",
        (arg("name"),),
        run=lambda ops, a: ops.procedure_history(a.name),
        show=show_history,
    ),
    Command(
        "procedures rollback",
        "make an earlier version current again",
        (arg("name"), arg("version", type=_positive)),
        run=lambda ops, a: ops.rollback_procedure(a.name, a.version),
        show=show_record,
    ),
    Command(
        "procedures register",
        "add a procedure",
        (
            arg("name"),
            arg(
                "trigger",
                help="exact 'write_article', glob 'deploy:*', keyword '~記事', joined by '|'",
            ),
            arg("template"),
            arg("--description", default=""),
            arg("--scope"),
        ),
        run=lambda ops, a: ops.register_procedure(
            a.name, a.trigger, a.template, description=a.description, scope=a.scope
        ),
        show=show_record,
    ),
    Command(
        "procedures evolve",
        "make a new version of a procedure's template current",
        (arg("name"), arg("template"), arg("--trigger")),
        run=lambda ops, a: ops.evolve_procedure(a.name, a.template, trigger=a.trigger),
        show=show_record,
    ),
    Command(
        "procedures outcome",
        "report how following a procedure went",
        (
            arg("name"),
            arg("quality", type=float, help="0..10"),
            arg("--failed", action="store_true", help="the task failed (default: it succeeded)"),
        ),
        run=lambda ops, a: ops.report_outcome(a.name, a.quality, not a.failed),
        show=show_record,
    ),
    Command(
        "procedures match",
        "the best procedure for a task",
        (arg("task"),),
        run=lambda ops, a: ops.match_procedure(a.task),
        show=show_match,
    ),
    Command(
        "stats",
        "counts and sizes per layer and per agent",
        run=lambda ops, a: ops.stats(),
        show=show_stats,
    ),
    Command(
        "whoami",
        "the agent this invocation acts as",
        run=lambda ops, a: ops.whoami(),
        show=show_record,
    ),
    Command(
        "export",
        "write every layer as JSON Lines",
        (
            arg("file", nargs="?", help="output file (default: standard output)"),
            arg(
                "--no-embeddings",
                action="store_true",
                help="leave out episode vectors (they are computed again on import)",
            ),
            arg("-q", "--quiet", action="store_true", help="no progress bar"),
        ),
        raw=_export,
    ),
    Command(
        "import",
        "import an export; existing items are skipped, never replaced",
        (
            arg("file", help="an export file, or - for standard input"),
            arg("--reembed", action="store_true", help="compute every episode vector again"),
            arg("-q", "--quiet", action="store_true", help="no progress bar"),
        ),
        raw=_import,
    ),
    Command(
        "keys add",
        "mint an API key for an agent (shown once)",
        (
            arg("agent_name"),
            arg("--admin", action="store_true", help="may export, import and manage keys"),
            arg("--label", default=""),
        ),
        run=lambda ops, a: ops.add_key(a.agent_name, admin=a.admin, label=a.label),
        show=show_new_key,
    ),
    Command(
        "keys list",
        "list API keys",
        (arg("--all", action="store_true", help="include revoked keys"),),
        run=lambda ops, a: ops.list_keys(include_revoked=a.all),
        show=show_keys,
    ),
    Command(
        "keys revoke",
        "revoke an API key",
        (arg("key_id"),),
        run=lambda ops, a: ops.revoke_key(a.key_id),
        show=show_record,
    ),
    Command(
        "serve",
        "run the REST server (and MCP over HTTP at /mcp) owning the data directory",
        (
            *SERVE_ARGS,
            arg("--no-mcp", action="store_true", help="REST only"),
            arg("--no-dashboard", action="store_true", help="no web dashboard at /ui"),
            arg(
                "--no-maintenance",
                action="store_true",
                help="do not run the daily maintenance (distill.schedule) in the server",
            ),
        ),
        raw=_serve,
    ),
    Command(
        "mcp",
        "run the MCP server (stdio by default; --url to go through a running server)",
        (
            arg("--transport", choices=["stdio", "http"], default="stdio"),
            *SERVE_ARGS,
        ),
        raw=_mcp,
    ),
]


from omoide.cli.pipeline_commands import PIPELINE_COMMANDS  # noqa: E402 - it builds on the above

COMMANDS.extend(PIPELINE_COMMANDS)


def _store(ops: Ops, args: argparse.Namespace) -> Any:
    documents = list(args.documents)
    for name in args.files or []:
        documents.append(Path(name).read_text(encoding="utf-8"))
    if not documents:
        raise ValidationError("documents", "give document texts or --file")
    meta = _meta(args.meta)
    metadatas = None if meta is None else [dict(meta) for _ in documents]
    return ops.store(args.collection, documents, metadatas, args.ids, scope=args.scope)


# -- parser ------------------------------------------------------------------------------


def _common_options() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    group = common.add_argument_group("where the memory is")
    group.add_argument(
        "--path",
        default=argparse.SUPPRESS,
        help="data directory (default: $OMOIDE_HOME, else ./omoide-data)",
    )
    group.add_argument(
        "--url",
        default=argparse.SUPPRESS,
        help="a running `omoide serve`, e.g. http://127.0.0.1:8765 (default: $OMOIDE_URL)",
    )
    group.add_argument(
        "--key", default=argparse.SUPPRESS, help="API key for --url (default: $OMOIDE_API_KEY)"
    )
    group.add_argument(
        "--agent",
        default=argparse.SUPPRESS,
        help="without --url: act, and read, as this agent (default: "
        "$OMOIDE_AGENT; none: see everything)",
    )
    common.add_argument(
        "--json", action="store_true", default=argparse.SUPPRESS, help="machine-readable output"
    )
    return common


def build_parser() -> argparse.ArgumentParser:
    common = _common_options()
    parser = argparse.ArgumentParser(
        prog="omoide",
        description="Long-term memory for AI agents (思い出).",
        parents=[common],
        epilog="Run `omoide COMMAND --help` for a command's options.",
    )
    top = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    groups: dict[str, argparse._SubParsersAction[argparse.ArgumentParser]] = {}
    for cmd in COMMANDS:
        *group, name = cmd.name.split(" ")
        where = top
        if group:
            if group[0] not in groups:
                holder = top.add_parser(
                    group[0],
                    help=f"{group[0]}: "
                    + ", ".join(
                        c.name.split(" ")[1] for c in COMMANDS if c.name.startswith(group[0] + " ")
                    ),
                )
                groups[group[0]] = holder.add_subparsers(
                    dest="action", required=True, metavar="ACTION"
                )
            where = groups[group[0]]
        sub = where.add_parser(
            name, help=cmd.help, description=cmd.help, parents=[common] if cmd.common else []
        )
        for a in cmd.args:
            sub.add_argument(*a.flags, **a.options)
        sub.set_defaults(command_spec=cmd)
    return parser


def _run(cmd: Command, args: argparse.Namespace, out: Output) -> int:
    if cmd.raw is not None:
        return cmd.raw(args, out)
    assert cmd.run is not None
    with open_operations(args) as ops:
        result = cmd.run(ops, args)
    if out.json_mode or cmd.show is None:
        out.json(result)
    else:
        cmd.show(out, result)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``omoide`` command."""
    if hasattr(os, "umask"):
        # Whatever this process creates (ChromaDB's segment files while a server runs,
        # exports) is its user's alone; the data directory is 0700 in any case.
        os.umask(0o077)
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(encoding="utf-8")
    args = build_parser().parse_args(argv)
    cmd: Command = args.command_spec
    out = Output(json_mode=bool(getattr(args, "json", False)))
    try:
        return _run(cmd, args, out)
    except StoreLockedError as exc:
        print(f"omoide: error: {exc}", file=sys.stderr)
        print("omoide: hint: a server owns it? pass --url http://127.0.0.1:8765", file=sys.stderr)
        return 1
    except OmoideError as exc:
        print(f"omoide: error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"omoide: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
