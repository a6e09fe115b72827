"""The operation table's entries of the pipelines: recall, distillation, forgetting,
maintenance, the audit log, restore, indexing and the cache (see :mod:`omoide.service.table`).
"""

from __future__ import annotations

from omoide.service._layer_table import SCOPE, SCOPE_PARAM, WHEN_HELP
from omoide.service.operation import LOCAL, Bounds, Operation, Param, Tool, a, r, tagged

__all__ = ["PIPELINE_OPERATIONS"]

_LAYERS = ("working", "episodic", "semantic", "procedural")
_AUDITED = ("episodic", "semantic")
_DRY_RUN = {"dry_run": a("only show what would be done", "--dry-run")}
_SOURCE = Bounds.text(8192)

_RECALL = tagged(
    "recall",
    Operation(
        "recall",
        "recall what answers a question from every layer, within a token budget "
        "(as --agent; through a server as the key's agent)",
        {
            "query": a(
                "the question, in any language ('先週の決定', 'last week')",
                bounds=Bounds.text(10_000),
            ),
            "session_id": a("include this working session's pins and messages", "--session"),
            "budget_tokens": a(
                "token budget (default: 2,000)",
                "--budget",
                minimum=1,
                bounds=Bounds.number(1, 1_000_000),
            ),
            "layers": a(
                "consult only this layer (repeatable)",
                "--layer",
                choices=_LAYERS,
                bounds=Bounds.size(4, 1),
            ),
            "collections": a(
                "consult only this collection of knowledge (repeatable)",
                "--collection",
                bounds=Bounds.size(100, 1),
            ),
            "top_k": a(
                "return at most this many items (default: router.top_k, 10)",
                "--top-k",
                minimum=1,
                bounds=Bounds.number(1, 1_000),
            ),
            "min_score": a(
                "leave out items scoring below this, the only floor then "
                "(default: router.min_score, 0.15, and a quarter of the way from the "
                "candidates' median score to the best)",
                "--min-score",
                bounds=Bounds.number(0, 1),
            ),
            "diversity": a(
                "penalise near-duplicates by this share of their similarity (default: off)",
                "--diversity",
                bounds=Bounds.number(0, 1),
            ),
        },
        r(
            "POST",
            "/recall",
            "RecallResponse",
            about="The key's agent's memories that answer a query, from every layer, ranked "
            "and packed into a token budget; ``context`` is ready for a prompt.",
        ),
        Tool(
            "recall",
            "Recall everything relevant to a question from all of your memory at once.\n\n"
            "Searches episodes, knowledge, procedures and your working session, ranks what it "
            "finds and packs it into a token budget. Returns `context` (text ready to read, "
            "each item attributed to its author) and `items` (with layer, id and why each was "
            'chosen). Time expressions such as "last week" or "先週" narrow the search. Prefer '
            "this tool when you do not know where an answer is stored.",
            {
                "query": Param("What you need to remember, in any language; may say when."),
                "budget_tokens": Param(
                    "Token budget of the context (default 2,000).",
                    bounds=Bounds.number(50, 100_000),
                ),
                "session_id": Param("Your working session, to include its pins."),
            },
            reply="{context}",
            reply_empty="(nothing relevant remembered)",
        ),
        cli="recall",
        reads=True,
    ),
)

_MAINTENANCE = tagged(
    "maintenance",
    Operation(
        "distill",
        "turn old, similar episodes into knowledge documents now",
        rest=r(
            "POST",
            "/distill",
            "DistillReport",
            about="Turn old, similar episodes into knowledge documents (admin keys only).",
        ),
        cli="distill",
    ),
    Operation(
        "forget",
        "apply the forgetting policies (never-forget items are kept; all is audited)",
        _DRY_RUN,
        r(
            "POST",
            "/forget",
            "ForgetReport",
            about="Apply the forgetting policies (admin keys only); a dry run only reports, "
            "and is open to every key (it lists only what the key's agent may read).",
        ),
        # No MCP tool: forgetting is the operator's job (an agent may not run it), so a
        # preview gives an agent nothing to act on, and a tool named "forget" invites a model
        # to call it to forget something. Agents delete their own episodes (delete_episode);
        # the preview stays on REST and the CLI (open to every key, scoped to what it reads).
        cli="forget",
    ),
    Operation(
        "maintain",
        "run the daily job now: distill, forget, collection retention, caps, cache expiry",
        rest=r(
            "POST",
            "/maintain",
            "MaintenanceReport",
            about="Run the daily job now: distill, forget, collection retention/caps/cache "
            "expiry (admin keys only; 503 while another run holds the maintenance lock).",
        ),
        cli="maintain",
    ),
    Operation(
        "enforce_collections",
        "apply collection retention, caps and cache expiry alone",
        _DRY_RUN,
        rest=r(
            "POST",
            "/enforce-collections",
            "RetentionReport",
            about="Apply collection retention, caps and cache expiry alone (admin keys only); "
            "a dry run only reports.",
        ),
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
            "limit": a(
                "how many (default: 100)", "--limit", minimum=1, bounds=Bounds.number(1, 1000)
            ),
        },
        r(
            "GET",
            "/audit",
            "AuditEntry",
            about="What forgetting, retention, overflow and restores did, newest first "
            "(entries of items the key's agent may read).",
        ),
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
        r(
            "POST",
            "/restore",
            "RestoreResponse",
            about="Bring an archived or compressed item back (admin keys, or the item's owner).",
        ),
        cli="restore",
    ),
    Operation(
        "purge",
        "remove an item for good, never-forget ones too (admin; audited with its snapshot)",
        {
            "item_id": a("the item's id, or a unique prefix of it", wire="id"),
            "reason": a(
                "why (kept in the audit log; not empty)", "--reason", bounds=Bounds.text(2000)
            ),
            "layer": a("where the item is", "--layer", choices=_AUDITED),
            "collection": a("the document's collection", "--collection"),
        },
        r(
            "POST",
            "/admin/purge",
            "AuditEntry",
            about="Remove an item for good, never-forget ones included (admin keys only); "
            "audited with the item's snapshot, the admin and the reason.",
        ),
        cli="admin purge",
    ),
)

_KNOWLEDGE = tagged(
    "semantic",
    Operation(
        "index",
        "index a folder or git repository into a collection (incremental)",
        {
            "path": a(
                "folder or repository (with --url: on the server)",
                metavar="PATH",
                dest="root",
                bounds=Bounds.text(4096),
            ),
            "collection": a(
                "code (default), knowledge, ...", "--collection", "-c", cli_default="code"
            ),
            "source": a("name of the source (default: the folder's name)", "--source"),
            "include": a(
                "glob of files to index (repeatable)", "--include", bounds=Bounds.size(100)
            ),
            "exclude": a(
                "glob of files to skip (repeatable)", "--exclude", bounds=Bounds.size(100)
            ),
            "max_file_bytes": a(
                "skip larger files (default 1 MB)",
                "--max-file-bytes",
                minimum=1,
                bounds=Bounds.number(1, 1_000_000_000),
            ),
            "scope": SCOPE,
            "dry_run": a("only report what would change", "--dry-run"),
            "progress": LOCAL,
        },
        rest=r(
            "POST",
            "/collections/{collection}/index",
            "IndexReport",
            about="Index a folder or git repository on the server's machine (admin keys "
            "only); incremental: unchanged files are skipped, deleted files' documents removed.",
        ),
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
                bounds=_SOURCE,
            ),
            "content": a("the text fetched", bounds=Bounds.text(1_000_000), embedded=True),
            "source": a("where it came from", "--source", bounds=_SOURCE),
            "ttl_days": a(
                "days it stays valid (default 7)",
                "--ttl-days",
                cli_default=7.0,
                bounds=Bounds.number(le=36_500, gt=0),
            ),
            "collection": a("default: semantic.cache_collection (knowledge)", "--collection"),
            "scope": SCOPE,
        },
        r(
            "PUT",
            "/cache",
            "Document",
            about="Cache outside information (an API answer, a web page) with its source and "
            "a time to live; caching the same key again replaces the entry.",
        ),
        Tool(
            "cache_information",
            "Keep information fetched from outside (web page, API answer) for a limited time."
            "\n\nIt becomes searchable with search_knowledge until it expires; caching the same "
            "key again replaces it. Use get_cached_information to check whether a fresh copy "
            "exists before fetching again.",
            {
                "key": Param("The URL or a key naming the information."),
                "content": Param("The text fetched (an answer, a page)."),
                "source": Param("Where it came from (URL, API name)."),
                "ttl_days": Param("Days it stays valid.", default=7.0),
                "scope": SCOPE_PARAM,
            },
        ),
        cli="cache put",
    ),
    Operation(
        "cached",
        "the live entry cached under a key",
        {
            "key": a(
                "the key it was cached under", metavar="KEY", dest="cache_key", bounds=_SOURCE
            ),
            "collection": a("default: semantic.cache_collection (knowledge)", "--collection"),
        },
        r(
            "GET",
            "/cache",
            "Document",
            about="The live entry cached under a key (404 when absent or expired).",
        ),
        Tool(
            "get_cached_information",
            "Return the unexpired cached copy of outside information, or an error if there is "
            "none (then fetch it and call cache_information).",
            {"key": Param("The URL or key it was cached under.")},
        ),
        cli="cache get",
    ),
)

PIPELINE_OPERATIONS: tuple[Operation, ...] = (*_RECALL, *_MAINTENANCE, *_KNOWLEDGE)
