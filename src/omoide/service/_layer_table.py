"""The operation table's entries of the four layers and the whole store (see
:mod:`omoide.service.table`)."""

from __future__ import annotations

from omoide.service.operation import Operation, Tool, a, r

__all__ = ["LAYER_OPERATIONS", "SCOPE_HELP", "WHEN_HELP"]

SCOPE_HELP = "global (default), private, or agent:NAME,team:NAME"
WHEN_HELP = "ISO 8601 date-time"
_COLLECTION_HELP = "the collection (knowledge, code, decisions, feedback or one configured)"
_PROCEDURE_HELP = "the procedure's name"
_EPISODE = {"episode_id": a("the episode's id, or a unique prefix of it", metavar="id")}
_DOC = {
    "collection": a("the collection (knowledge, code, decisions, feedback or yours)"),
    "doc_id": a("the document's id, or a unique prefix of it", metavar="id"),
}
_PAGE = {
    "limit": a("how many at most (default: 50)", "--limit", minimum=1),
    "offset": a("skip this many first (default: 0)", "--offset"),
}
_SESSION = {"session_id": a("the working session", metavar="session")}

LAYER_OPERATIONS: tuple[Operation, ...] = (
    Operation("whoami", "the agent this invocation acts as", {}, r("GET", "/whoami"), cli="whoami"),
    Operation(
        "record",
        "record an episode (locally as --agent; through a server as the key's agent)",
        {
            "event_type": a("decision, error, success, feedback, conflict, or another"),
            "description": a("what happened"),
            "outcome": a("what came of it", "--outcome"),
            "importance": a("0..1 (default: by event type)", "--importance"),
            "tags": a("a tag (repeatable)", "--tag"),
            "context": a("details as a JSON object", "--context"),
            "scope": a(SCOPE_HELP, "--scope"),
            "id": a("an id of your own (default: generated)", "--id"),
            "timestamp": a("when it happened, ISO 8601 (default: now)", "--timestamp"),
        },
        r("POST", "/episodes"),
        Tool(
            "remember",
            "Record an episode in long-term memory: something that happened and matters "
            "later.\n\nUse it for decisions and their reasons, errors and their fixes, feedback "
            "from humans, successes and conflicts. Returns the stored episode with its id.",
        ),
        cli="record",
    ),
    Operation(
        "record_many",
        "record several episodes in one transaction (all or none)",
        rest=r("POST", "/episodes/batch"),
    ),
    Operation(
        "search_episodes",
        "search episodes by relevance, importance and freshness",
        {
            "query": a("what to look for, in any language"),
            "agent_name": a("only episodes this agent recorded", "--by"),
            "event_type": a("only this event type", "--type"),
            "since": a(WHEN_HELP, "--since"),
            "until": a(WHEN_HELP, "--until"),
            "tags": a("required tag (repeatable)", "--tag"),
            "top_k": a("how many (default: 10)", "-k", "--top-k", minimum=1),
        },
        r("POST", "/episodes/search"),
        Tool(
            "search_episodes",
            "Search past episodes (what happened, who decided what, how errors were fixed)."
            "\n\nRanked by relevance, importance and freshness; returns the best matches with "
            "scores. For reference knowledge use search_knowledge instead.",
        ),
        cli="episodes search",
        reads=True,
    ),
    Operation(
        "list_episodes",
        "list episodes, newest first",
        {
            "agent_name": a("only episodes this agent recorded", "--by"),
            "event_type": a("only this event type", "--type"),
            "since": a(WHEN_HELP, "--since"),
            "until": a(WHEN_HELP, "--until"),
            **_PAGE,
        },
        r("GET", "/episodes"),
        Tool(
            "recent_episodes",
            "List recent episodes, newest first, without a query.\n\nFilter by agent or event "
            "type; returns the episodes with their ids (to update or delete your own).",
        ),
        cli="episodes list",
    ),
    Operation(
        "get_episode",
        "show one episode",
        _EPISODE,
        r("GET", "/episodes/{episode_id}"),
        cli="episodes show",
    ),
    Operation(
        "update_episode",
        "record an episode's outcome, or change its importance or tags (its recorder only)",
        {
            **_EPISODE,
            "outcome": a("what came of it", "--outcome"),
            "importance": a("0..1", "--importance"),
            "tags": a("replaces the tags (repeatable)", "--tag"),
        },
        r("PATCH", "/episodes/{episode_id}"),
        Tool(
            "update_episode",
            "Update an episode you recorded: add its outcome later (how an error was fixed), "
            "or change its importance or tags.\n\nOnly the agent that recorded it may.",
        ),
        cli="episodes update",
    ),
    Operation(
        "delete_episode",
        "delete an episode (never-forget episodes are refused)",
        _EPISODE,
        r("DELETE", "/episodes/{episode_id}"),
        Tool(
            "delete_episode",
            "Delete an episode you recorded (a mistake, a duplicate).\n\nOnly the agent that "
            "recorded it may; never-forget episodes are refused.",
        ),
        cli="episodes delete",
    ),
    Operation(
        "add",
        "hand over what was said: chat messages become episodes of the session's thread and "
        "its working memory (idempotent; with an LLM, facts are extracted)",
        {
            "session_id": a("the conversation (its thread and working session)", "--session"),
            "messages": a("message text (repeatable; none: JSON lines from standard input)"),
            "timestamp": a("when it was said, ISO 8601 (default: now)", "--timestamp"),
            "scope": a(SCOPE_HELP, "--scope"),
        },
        r("POST", "/messages"),
        Tool(
            "add_messages",
            "Hand over the messages of a conversation; omoide keeps what matters.\n\nEach "
            "message (role user, assistant, system or tool, and its content) becomes an "
            "episode of the session's thread and enters your working memory; sending the same "
            "messages again records nothing twice. Returns the ids and a one-line summary.",
        ),
        cli="add",
    ),
    Operation(
        "collections",
        "the semantic collections: purpose, retention, cap and usage",
        rest=r("GET", "/collections"),
        cli="collections",
    ),
    Operation(
        "store",
        "store documents in a semantic collection",
        {
            "collection": a("knowledge, code, decisions, feedback, or a configured one"),
            "documents": a("document texts"),
            "ids": a("ids, one per document", "--id"),
            "scope": a(SCOPE_HELP, "--scope"),
        },
        rest=r("POST", "/collections/{collection}/documents"),
        mcp=Tool(
            "store_knowledge",
            "Store a piece of reference knowledge (documentation, facts, explanations, code)."
            "\n\nIt becomes searchable by meaning with search_knowledge. Storing the same id "
            "again replaces your earlier version.",
        ),
        cli="store",
    ),
    Operation(
        "query",
        "search a semantic collection by meaning",
        {
            "collection": a(_COLLECTION_HELP),
            "query_text": a("the question, in any language", metavar="text"),
            "n_results": a("how many (default: 5)", "-n", "--n-results", minimum=1),
            "where": a("a ChromaDB metadata filter, as JSON", "--where"),
        },
        r("POST", "/collections/{collection}/query"),
        Tool(
            "search_knowledge",
            "Search stored knowledge by meaning; returns the closest passages with their ids.",
        ),
        cli="query",
        reads=True,
    ),
    Operation(
        "list_documents",
        "list the documents of a collection, newest first",
        {"collection": a(_COLLECTION_HELP), **_PAGE},
        r("GET", "/collections/{collection}/documents"),
        cli="documents list",
    ),
    Operation(
        "get_document",
        "show one document",
        _DOC,
        r("GET", "/collections/{collection}/documents/{doc_id}"),
        cli="documents show",
    ),
    Operation(
        "delete_document",
        "delete a document (its owner only; never-forget documents are refused)",
        _DOC,
        r("DELETE", "/collections/{collection}/documents/{doc_id}"),
        cli="documents delete",
    ),
    Operation("procedures", "list procedures", {}, r("GET", "/procedures"), cli="procedures list"),
    Operation(
        "register_procedure",
        "add a procedure",
        {
            "name": a(_PROCEDURE_HELP),
            "trigger": a("exact 'write_article', glob 'deploy:*', keyword '~記事', joined by '|'"),
            "template": a("the procedure's text (steps, a prompt)"),
            "description": a("what it is for", "--description"),
            "scope": a(SCOPE_HELP, "--scope"),
        },
        r("POST", "/procedures"),
        cli="procedures register",
    ),
    Operation(
        "get_procedure",
        "show a procedure at its current version",
        {"name": a(_PROCEDURE_HELP)},
        r("GET", "/procedures/{name}"),
        cli="procedures show",
    ),
    Operation(
        "match_procedure",
        "the best procedure for a task",
        {"task": a("the task at hand, e.g. deploy:production or 記事を書く")},
        r("POST", "/procedures/match"),
        Tool(
            "get_procedure",
            "Find the best known procedure (step-by-step template) for a task.\n\nReturns the "
            "best match (by success rate and quality) and the other candidates, or no best "
            "match if none applies. Report how it went with report_outcome.",
        ),
        cli="procedures match",
        reads=True,
    ),
    Operation(
        "report_outcome",
        "report how following a procedure went",
        {
            "name": a(_PROCEDURE_HELP),
            "quality_score": a("0..10", metavar="quality"),
            "success": a("the task failed (default: it succeeded)", "--failed", negate=True),
        },
        r("POST", "/procedures/{name}/outcomes"),
        Tool(
            "report_outcome",
            "Report how following a procedure went; better procedures are chosen more often.",
        ),
        cli="procedures outcome",
    ),
    Operation(
        "evolve_procedure",
        "make a new version of a procedure's template current",
        {
            "name": a(_PROCEDURE_HELP),
            "template": a("the new version's text"),
            "trigger": a("a new trigger", "--trigger"),
        },
        r("POST", "/procedures/{name}/versions"),
        cli="procedures evolve",
    ),
    Operation(
        "procedure_history",
        "every version of a procedure with its figures",
        {"name": a(_PROCEDURE_HELP)},
        r("GET", "/procedures/{name}/history"),
        cli="procedures history",
    ),
    Operation(
        "rollback_procedure",
        "make an earlier version current again",
        {"name": a(_PROCEDURE_HELP), "version": a("the version to make current again", minimum=1)},
        r("POST", "/procedures/{name}/rollback"),
        cli="procedures rollback",
    ),
    Operation(
        "working",
        "show an agent's working memory of a session, as rendered for a prompt",
        _SESSION,
        (*r("GET", "/working/{session_id}"), *r("PUT", "/working/{session_id}")),
        cli="working",
    ),
    Operation(
        "add_message",
        "append a message to a working session; returns what it evicted",
        rest=r("POST", "/working/{session_id}/messages"),
    ),
    Operation(
        "set_slot",
        "set a slot of a working session",
        rest=r("PUT", "/working/{session_id}/slots/{slot}"),
    ),
    Operation(
        "pin",
        "pin an instruction into an agent's working memory",
        {
            **_SESSION,
            "key": a("a short name for the pin"),
            "content": a("the instruction or fact to keep in view"),
            "reason": a("why it is pinned", "--reason"),
        },
        r("PUT", "/working/{session_id}/pins/{key}"),
        Tool(
            "pin",
            "Pin an instruction or fact into your working memory for the whole session.\n\n"
            "Pinned items are always part of your context until unpinned; pinning the same key "
            "again replaces it.",
        ),
        cli="pin",
    ),
    Operation(
        "unpin",
        "remove a pinned item",
        {**_SESSION, "key": a("the pin's name")},
        r("DELETE", "/working/{session_id}/pins/{key}"),
        cli="unpin",
    ),
    Operation(
        "clear_messages",
        "drop a working session's messages (important ones become episodes)",
        rest=r("POST", "/working/{session_id}/clear"),
    ),
    Operation(
        "stats", "counts and sizes per layer and per agent", {}, r("GET", "/stats"), cli="stats"
    ),
    Operation(
        "export_lines",
        "write every layer as JSON Lines",
        {
            "embeddings": a(
                "leave out episode vectors (they are computed again on import)",
                "--no-embeddings",
                negate=True,
            )
        },
        r("GET", "/export"),
        cli="export",
    ),
    Operation(
        "import_lines",
        "import an export; existing items are skipped, never replaced",
        {"reembed": a("compute every episode vector again", "--reembed")},
        r("POST", "/import"),
        cli="import",
    ),
    Operation(
        "add_key",
        "mint an API key for an agent (shown once)",
        {
            "agent_name": a("the agent the key acts as"),
            "admin": a("may export, import and manage keys", "--admin"),
            "label": a("what the key is for", "--label"),
        },
        r("POST", "/keys"),
        cli="keys add",
    ),
    Operation(
        "list_keys",
        "list API keys",
        {"include_revoked": a("include revoked keys", "--all")},
        r("GET", "/keys"),
        cli="keys list",
    ),
    Operation(
        "revoke_key",
        "revoke an API key",
        {"key_id": a("the key's id (from keys list), not the key itself")},
        r("DELETE", "/keys/{key_id}"),
        cli="keys revoke",
    ),
)
