"""The operation table's entries of the pipelines: recall, distillation, forgetting,
maintenance, the audit log, restore, indexing and the cache (see :mod:`omoide.service.table`).
"""

from __future__ import annotations

from omoide.service._layer_table import SCOPE_HELP, WHEN_HELP
from omoide.service.operation import Operation, Tool, a, r

__all__ = ["PIPELINE_OPERATIONS"]

_LAYERS = ("working", "episodic", "semantic", "procedural")
_AUDITED = ("episodic", "semantic")

PIPELINE_OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "recall",
        "recall what answers a question from every layer, within a token budget "
        "(as --agent; through a server as the key's agent)",
        {
            "query": a("the question, in any language ('先週の決定', 'last week')"),
            "session_id": a("include this working session's pins and messages", "--session"),
            "budget_tokens": a("token budget (default: 2,000)", "--budget", minimum=1),
            "layers": a("consult only this layer (repeatable)", "--layer", choices=_LAYERS),
        },
        r("POST", "/recall"),
        Tool(
            "recall",
            "Recall everything relevant to a question from all of your memory at once.\n\n"
            "Searches episodes, knowledge, procedures and your working session, ranks what it "
            "finds and packs it into a token budget. Returns `context` (text ready to read, "
            "each item attributed to its author) and `items` (with layer, id and why each was "
            'chosen). Time expressions such as "last week" or "先週" narrow the search. Prefer '
            "this tool when you do not know where an answer is stored.",
        ),
        cli="recall",
        reads=True,
    ),
    Operation(
        "distill",
        "turn old, similar episodes into knowledge documents now",
        rest=r("POST", "/distill"),
        cli="distill",
    ),
    Operation(
        "forget",
        "apply the forgetting policies (never-forget items are kept; all is audited)",
        {"dry_run": a("only show what would be done", "--dry-run")},
        r("POST", "/forget"),
        # No MCP tool: forgetting is the operator's job (an agent may not run it), so a
        # preview gives an agent nothing to act on, and a tool named "forget" invites a model
        # to call it to forget something. Agents delete their own episodes (delete_episode);
        # the preview stays on REST and the CLI (open to every key, scoped to what it reads).
        cli="forget",
    ),
    Operation(
        "maintain",
        "run the daily job now: distill, forget, collection retention, caps, cache expiry",
        rest=r("POST", "/maintain"),
        cli="maintain",
    ),
    Operation(
        "enforce_collections",
        "apply collection retention, caps and cache expiry alone",
        rest=r("POST", "/enforce-collections"),
    ),
    Operation(
        "audit",
        "what forgetting, retention, overflow and restores did, newest first",
        {
            "item_id": a("only this item"),
            "policy": a("only this policy (e.g. retention, capacity, cache_expiry)", "--policy"),
            "layer": a("only this layer", "--layer", choices=_AUDITED),
            "action": a("delete, archive, compress, restore or overflow", "--action"),
            "run_id": a("only this run id", "--run"),
            "since": a(WHEN_HELP, "--since"),
            "until": a(WHEN_HELP, "--until"),
            "limit": a("how many (default: 100)", "--limit", minimum=1),
        },
        r("GET", "/audit"),
        cli="audit",
    ),
    Operation(
        "restore",
        "bring an archived or compressed episode or document back (forgetting then leaves it "
        "alone for forgetting.restore_exemption_days, 30; with --keep for good)",
        {
            "item_id": a("the item's id, or a unique prefix of it", wire="id"),
            "layer": a("where the item is", "--layer", choices=_AUDITED),
            "collection": a("the document's collection", "--collection"),
            "keep": a("also keep it against forgetting for good (audited)", "--keep"),
        },
        r("POST", "/restore"),
        cli="restore",
    ),
    Operation(
        "purge",
        "remove an item for good, never-forget ones too (admin; audited with its snapshot)",
        {
            "item_id": a("the item's id, or a unique prefix of it"),
            "reason": a("why (kept in the audit log; not empty)", "--reason"),
            "layer": a("where the item is", "--layer", choices=_AUDITED),
            "collection": a("the document's collection", "--collection"),
        },
        r("POST", "/admin/purge"),
        cli="admin purge",
    ),
    Operation(
        "index",
        "index a folder or git repository into a collection (incremental)",
        {
            "path": a(
                "folder or repository (with --url: on the server)", metavar="PATH", dest="root"
            ),
            "collection": a(
                "code (default), knowledge, ...", "--collection", "-c", cli_default="code"
            ),
            "source": a("name of the source (default: the folder's name)", "--source"),
            "include": a("glob of files to index (repeatable)", "--include"),
            "exclude": a("glob of files to skip (repeatable)", "--exclude"),
            "max_file_bytes": a("skip larger files (default 1 MB)", "--max-file-bytes", minimum=1),
            "scope": a(SCOPE_HELP, "--scope"),
            "dry_run": a("only report what would change", "--dry-run"),
        },
        rest=r("POST", "/collections/{collection}/index"),
        cli="index",
    ),
    Operation(
        "cache",
        "cache outside information (a page, an API answer) under a key, with an expiry",
        {
            "key": a(
                "a URL or any name; caching it again replaces the entry",
                metavar="URL_OR_NAME",
                dest="cache_key",
            ),
            "content": a("the text fetched"),
            "source": a("where it came from", "--source"),
            "ttl_days": a("days it stays valid (default 7)", "--ttl-days", cli_default=7.0),
            "collection": a("default: semantic.cache_collection (knowledge)", "--collection"),
            "scope": a(SCOPE_HELP, "--scope"),
        },
        r("PUT", "/cache"),
        Tool(
            "cache_information",
            "Keep information fetched from outside (web page, API answer) for a limited time."
            "\n\nIt becomes searchable with search_knowledge until it expires; caching the same "
            "key again replaces it. Use get_cached_information to check whether a fresh copy "
            "exists before fetching again.",
        ),
        cli="cache put",
    ),
    Operation(
        "cached",
        "the live entry cached under a key",
        {
            "key": a("the key it was cached under", metavar="KEY", dest="cache_key"),
            "collection": a("default: semantic.cache_collection (knowledge)", "--collection"),
        },
        r("GET", "/cache"),
        Tool(
            "get_cached_information",
            "Return the unexpired cached copy of outside information, or an error if there is "
            "none (then fetch it and call cache_information).",
        ),
        cli="cache get",
    ),
)
