"""The commands of ``omoide``: a table of thin calls into the library.

Every command that touches memory runs an operation of :mod:`omoide.service.local`, either on a
data directory this process opens (``--path``, ``$OMOIDE_HOME``, else ``./omoide-data``) or
on a running server (``--url`` / ``$OMOIDE_URL`` with ``--key`` / ``$OMOIDE_API_KEY``), since
a server owns its directory. Commands are declared in :data:`COMMANDS`; adding one is a
function and an entry there. ``--json`` prints machine output; otherwise tables.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from omoide.cli.console import Output, ProgressReporter
from omoide.cli.options import common_options as _common_options
from omoide.cli.options import fail as _fail
from omoide.cli.pipeline_commands import PIPELINE_COMMANDS
from omoide.cli.spec import (
    Command,
    Ops,
    arg,
    env,
    json_arg,
    meta,
    open_operations,
    operation_command,
    positive,
)
from omoide.cli.views import (
    show_added,
    show_collections,
    show_documents,
    show_episodes,
    show_history,
    show_hits,
    show_keys,
    show_match,
    show_new_key,
    show_outcome,
    show_procedures,
    show_record,
    show_recorded,
    show_session,
    show_stats,
)
from omoide.errors import OmoideError, StoreLockedError, ValidationError
from omoide.storage.permissions import open_private

__all__ = ["COMMANDS", "Command", "build_parser", "main"]


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

    path = resolve_path(env(args, "path", "OMOIDE_HOME"))
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
        lines = ops.export_lines(embeddings=args.embeddings, progress=progress)
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

    if env(args, "url", "OMOIDE_URL"):
        raise ValidationError("--url", "serve owns a data directory; give --path instead")
    try:
        from omoide.server.rest import serve
    except ImportError as exc:
        raise OmoideError(
            f"serve needs the server extra: pip install 'omoide[server]' ({exc})"
        ) from None
    with Memory(env(args, "path", "OMOIDE_HOME")) as mem:
        _warn_about_keys(mem, args.host)
        _say(
            mem,
            "INFO",
            f"serving {mem.path} on http://{args.host}:{args.port} "
            f"(REST /v1{'' if args.no_mcp else ', MCP /mcp'}); Ctrl+C stops",
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


def _say(mem: Any, level: str, text: str) -> None:
    """A line of the server's start, in the format of its log (ISO 8601 time, level, logger)."""
    stamp = mem.clock.now().astimezone().strftime("%Y-%m-%dT%H:%M:%S%z")
    sys.stderr.write(f"{stamp} {level} omoide.server: {text}\n")


def _warn_about_keys(mem: Any, host: str) -> None:
    from omoide.service.keys import KeyStore

    if not KeyStore(mem.db, clock=mem.clock).list_keys():
        _say(
            mem,
            "WARNING",
            "no API keys yet, so every request will be refused: stop the server and "
            "run `omoide keys add AGENT --admin`",
        )
    if host not in ("127.0.0.1", "localhost", "::1"):
        _say(mem, "WARNING", f"listening on {host}: reachable beyond this machine")


def _mcp(args: argparse.Namespace, out: Output) -> int:
    try:
        from omoide.server.mcp_server import create_mcp_app, create_mcp_server, local_operations
    except ImportError as exc:
        raise OmoideError(f"mcp needs the mcp extra: pip install 'omoide[mcp]' ({exc})") from None
    url = env(args, "url", "OMOIDE_URL")
    if url:
        from omoide.service.remote import RemoteOperations

        if args.transport != "stdio":
            raise ValidationError("--transport", "with --url the MCP server runs over stdio")
        key = env(args, "key", "OMOIDE_API_KEY")
        if not key:
            raise ValidationError(
                "--key", "with --url the server needs an API key: pass --key or set OMOIDE_API_KEY"
            )
        remote = RemoteOperations(url, key)
        remote.whoami()  # an unknown or revoked key fails now, not at the first tool call
        create_mcp_server(lambda caller: remote).run("stdio")
        return 0
    from omoide.core.blas import process_wide
    from omoide.memory import Memory
    from omoide.service.local import Caller

    agent = env(args, "agent", "OMOIDE_AGENT")
    if args.transport == "stdio" and not agent:
        raise ValidationError(
            "--agent",
            "the stdio MCP server acts as one agent: pass --agent NAME or set OMOIDE_AGENT",
        )
    with Memory(env(args, "path", "OMOIDE_HOME")) as mem:
        if args.transport == "http":
            import uvicorn

            _warn_about_keys(mem, args.host)
            app = create_mcp_app(mem, host=args.host)
            with process_wide():  # its recalls run in worker threads (omoide.core.blas)
                uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level)
            return 0
        assert agent is not None
        with process_wide():
            create_mcp_server(local_operations(mem, Caller.for_agent(mem, agent))).run("stdio")
    return 0


def _add(ops: Ops, args: argparse.Namespace) -> Any:
    """``omoide add``: the texts given, as messages of ``--role``; none: JSON lines (one
    message object, or a text, a line) from standard input."""
    messages: list[Any] = [{"role": args.role, "content": t} for t in args.messages]
    if not messages:
        for number, line in enumerate(sys.stdin, start=1):
            if line.strip():
                messages.append(json_arg(f"stdin line {number}", line))
    if not messages:
        raise ValidationError("messages", "give message texts, or JSON lines on standard input")
    return ops.add(args.session_id, messages, timestamp=args.timestamp, scope=args.scope)


SERVE_ARGS = (
    arg("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1, this machine)"),
    arg("--port", type=int, default=8765, help="port (default: 8765)"),
    arg(
        "--log-level",
        default="info",
        choices=["debug", "info", "warning", "error"],
        help="server log detail (default: info, a line per request)",
    ),
)

_QUIET = arg("-q", "--quiet", action="store_true", help="no progress bar")
OPERATION = operation_command

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
        options=(),
    ),
    Command(
        "simulate",
        "play the seeded 24-agent fleet with and without forgetting, and compare them",
        (
            arg("--days", type=positive, default=60, help="simulated days (default: 60)"),
            arg("--seed", type=int, default=7, help="scenario seed (default: 7)"),
            arg("--dir", dest="sim_dir", help="keep both stores here (default: a temporary dir)"),
        ),
        raw=_simulate,
        options=(),
    ),
    Command(
        "init",
        "create a data directory (and a commented omoide.toml)",
        raw=_init,
        options=("path", "json"),
    ),
    OPERATION("record", show_recorded),
    OPERATION(
        "add",
        show_added,
        run=lambda ops, a: _add(ops, a),
        extra=(
            arg(
                "--role",
                default="user",
                choices=["user", "assistant", "system", "tool"],
                help="who said the texts given (default: user)",
            ),
        ),
    ),
    OPERATION("search_episodes", show_episodes),
    OPERATION("list_episodes", show_episodes),
    OPERATION("get_episode", show_record),
    OPERATION("update_episode", show_record),
    OPERATION("delete_episode", show_record),
    OPERATION("collections", show_collections),
    OPERATION(
        "store",
        lambda out, r: out.line(f"stored in {r['collection']}: {', '.join(r['ids'])}"),
        run=lambda ops, a: _store(ops, a),
        extra=(
            arg("--file", action="append", dest="files", help="a file to store (repeatable)"),
            arg("--meta", action="append", help="KEY=VALUE metadata for every document"),
        ),
    ),
    OPERATION("query", show_hits),
    OPERATION("list_documents", show_documents),
    OPERATION("get_document", show_record),
    OPERATION("delete_document", show_record),
    OPERATION("pin", show_record),
    OPERATION("unpin", show_record),
    OPERATION("working", show_session),
    OPERATION("procedures", show_procedures),
    OPERATION("get_procedure", show_record),
    OPERATION("procedure_history", show_history),
    OPERATION("rollback_procedure", show_record),
    OPERATION("register_procedure", show_record),
    OPERATION("evolve_procedure", show_record),
    OPERATION("report_outcome", show_outcome),
    OPERATION("match_procedure", show_match),
    OPERATION("stats", show_stats),
    OPERATION("whoami", show_record),
    OPERATION(
        "export_lines",
        raw=_export,
        extra=(arg("file", nargs="?", help="output file (default: standard output)"), _QUIET),
    ),
    OPERATION(
        "import_lines",
        raw=_import,
        extra=(arg("file", help="an export file, or - for standard input"), _QUIET),
    ),
    OPERATION("add_key", show_new_key),
    OPERATION("list_keys", show_keys),
    OPERATION("revoke_key", show_record),
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
        options=("path",),
    ),
    Command(
        "mcp",
        "run the MCP server (stdio by default; --url to go through a running server)",
        (
            arg(
                "--transport",
                choices=["stdio", "http"],
                default="stdio",
                help="stdio (default: one agent, for a desktop client) or http (keys decide)",
            ),
            *SERVE_ARGS,
        ),
        raw=_mcp,
        options=("path", "url", "key", "agent"),
    ),
]


COMMANDS.extend(PIPELINE_COMMANDS)


def _store(ops: Ops, args: argparse.Namespace) -> Any:
    documents = list(args.documents)
    for name in args.files or []:
        documents.append(Path(name).read_text(encoding="utf-8"))
    if not documents:
        raise ValidationError("documents", "give document texts or --file")
    given = meta(args.meta)
    metadatas = None if given is None else [dict(given) for _ in documents]
    return ops.store(args.collection, documents, metadatas, args.ids, scope=args.scope)


# -- parser ------------------------------------------------------------------------------


def _group_help(group: str) -> str:
    subs = [c.name.split(" ")[1] for c in COMMANDS if c.name.startswith(group + " ")]
    return f"{GROUPS.get(group, group)}: {', '.join(subs)}"


#: What each command group is about (``omoide GROUP --help``).
GROUPS = {
    "episodes": "episodic memory: what happened, who decided what",
    "documents": "semantic memory: the documents of a collection",
    "procedures": "procedural memory: versioned ways to do recurring tasks",
    "working": "working memory: a session's pins, slots and messages",
    "keys": "API keys of a server (admin)",
    "cache": "information fetched from outside, kept until it expires",
    "admin": "whole-store operations for an operator",
}


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
                about = _group_help(group[0])
                holder = top.add_parser(group[0], help=about, description=about)
                groups[group[0]] = holder.add_subparsers(
                    dest="action", required=True, metavar="ACTION"
                )
            where = groups[group[0]]
        parents = [_common_options(cmd.options)] if cmd.options else []
        sub = where.add_parser(name, help=cmd.help, description=cmd.help, parents=parents)
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
    out = Output(
        json_mode=bool(getattr(args, "json", False)),
        verbose=bool(getattr(args, "verbose", False)),
    )
    try:
        code = _run(cmd, args, out)
        sys.stdout.flush()  # a closed pipe shows here, not as a traceback at exit
        return code
    except BrokenPipeError:
        # The reader went away (`| head`): stop quietly, as other commands do.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    except StoreLockedError as exc:
        return _fail(out, exc, "a server owns it? pass --url http://127.0.0.1:8765")
    except (OmoideError, OSError) as exc:
        return _fail(out, exc)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
