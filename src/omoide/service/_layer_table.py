"""The operation table's entries of the episodic, semantic and procedural layers (see
:mod:`omoide.service.table`), and the pieces the other parts of the table share."""

from __future__ import annotations

from omoide.core.models import RANKINGS
from omoide.service.operation import LOCAL, Bounds, Operation, Param, Tool, a, r, tagged, w

__all__ = ["LAYER_OPERATIONS", "SCOPE", "SCOPE_HELP", "SCOPE_PARAM", "UNIT", "WHEN_HELP"]

SCOPE_HELP = "global (default), private, or agent:NAME,team:NAME"
WHEN_HELP = "ISO 8601 date-time"


UNIT = Bounds.number(0, 1)
_TEXT = Bounds.text(100_000, 0)
#: A scope on the wire: a string (a share list joined by commas).
SCOPE = a(SCOPE_HELP, "--scope", bounds=Bounds.text(10_000, 0))
SCOPE_PARAM = Param("'global' (default), 'private' or 'agent:NAME,...'.")
_COLLECTION_HELP = "the collection (knowledge, code, decisions, feedback or one configured)"
_PROCEDURE_HELP = "the procedure's name"
_EPISODE = {"episode_id": a("the episode's id, or a unique prefix of it", metavar="id")}
_DOC = {
    "collection": a("the collection (knowledge, code, decisions, feedback or yours)"),
    "doc_id": a("the document's id, or a unique prefix of it", metavar="id"),
}
_PAGE = {
    "limit": a(
        "how many at most (default: 50)", "--limit", minimum=1, bounds=Bounds.number(1, 1000)
    ),
    "offset": a(
        "skip this many first (default: 0)", "--offset", bounds=Bounds.number(0, 1_000_000_000)
    ),
}
_TAGS = a("a tag (repeatable)", "--tag", bounds=Bounds.size(1000))
_RECORD = {
    "event_type": a("decision, error, success, feedback, conflict, or another"),
    "description": a("what happened", bounds=Bounds.text(100_000), embedded=True),
    "outcome": a("what came of it", "--outcome", bounds=_TEXT, embedded=True),
    "importance": a("0..1 (default: by event type)", "--importance", bounds=UNIT),
    "tags": _TAGS,
    "references": w("ids of related episodes or documents", bounds=Bounds.size(1000)),
    "context": a("details as a JSON object", "--context"),
    "scope": SCOPE,
    "id": a("an id of your own (default: generated)", "--id"),
    "timestamp": a("when it happened, ISO 8601 (default: now)", "--timestamp"),
    "decay_rate": w("how fast it fades, 0..1", bounds=UNIT),
    "agent_name": LOCAL,
}

_EPISODIC = tagged(
    "episodic",
    Operation(
        "record",
        "record an episode (locally as --agent; through a server as the key's agent)",
        _RECORD,
        r("POST", "/episodes", "Episode", 201, "Record an episode as the key's agent."),
        Tool(
            "remember",
            "Record an episode in long-term memory: something that happened and matters "
            "later.\n\nUse it for decisions and their reasons, errors and their fixes, feedback "
            "from humans, successes and conflicts. Returns the stored episode with its id.",
            {
                "description": Param("What happened, in one or two sentences (any language)."),
                "event_type": Param(
                    "decision, error, success, feedback (from a human), conflict, or another "
                    "short word; it sets the default importance",
                    default="observation",
                ),
                "outcome": Param("What came of it, e.g. how an error was fixed."),
                "importance": Param("0..1; leave empty for the default."),
                "tags": Param("Short labels to filter by."),
                "context": Param("Any structured details (JSON object)."),
                "scope": Param(
                    "Who may read it: 'global' (default), 'private', or 'agent:NAME,team:NAME'."
                ),
            },
            reply="remembered {id} ({event_type}, importance {importance:.2f}, scope {scope})",
        ),
        cli="record",
    ),
    Operation(
        "record_many",
        "record several episodes in one transaction (all or none)",
        {
            "items": w(
                "the episodes, as record takes them",
                wire="episodes",
                bounds=Bounds.size(1000, 1),
                schema="RecordRequest",
                embedded=("description", "outcome"),
            )
        },
        r(
            "POST",
            "/episodes/batch",
            "Episode",
            201,
            "Record several episodes in one transaction (all or none).",
        ),
    ),
    Operation(
        "search_episodes",
        "search episodes by relevance, importance and freshness",
        {
            "query": a(
                "what to look for, in any language (empty: rank by importance and freshness)",
                bounds=_TEXT,
                embedded=True,
            ),
            "agent_name": a("only episodes this agent recorded", "--by"),
            "event_type": a("only this event type", "--type"),
            "since": a(WHEN_HELP, "--since"),
            "until": a(WHEN_HELP, "--until"),
            "tags": a(
                "required tag (repeatable; at most 100: a filter)", "--tag", bounds=Bounds.size(100)
            ),
            "top_k": a(
                "how many (default: 10)", "-k", "--top-k", minimum=1, bounds=Bounds.number(1, 1000)
            ),
        },
        r(
            "POST",
            "/episodes/search",
            "Episode",
            about="Episodes that best answer a query: relevance × 0.4 + importance × 0.35 + "
            "freshness × 0.25.",
        ),
        Tool(
            "search_episodes",
            "Search past episodes (what happened, who decided what, how errors were fixed)."
            "\n\nRanked by relevance, importance and freshness; returns the best matches with "
            "scores. For reference knowledge use search_knowledge instead.",
            {
                "query": Param("What you want to remember, in any language."),
                "event_type": Param("Only this event type."),
                "agent_name": Param("Only episodes recorded by this agent."),
                "top_k": Param("How many to return.", default=5, bounds=Bounds.number(1, 50)),
            },
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
        r("GET", "/episodes", "Episode", about="Episodes newest first, filtered, without scoring."),
        Tool(
            "recent_episodes",
            "List recent episodes, newest first, without a query.\n\nFilter by agent or event "
            "type; returns the episodes with their ids (to update or delete your own).",
            {
                "agent_name": Param("Only episodes recorded by this agent."),
                "event_type": Param("Only this event type."),
                "limit": Param("How many, newest first.", default=10, bounds=Bounds.number(1, 100)),
            },
        ),
        cli="episodes list",
    ),
    Operation(
        "get_episode",
        "show one episode",
        _EPISODE,
        r("GET", "/episodes/{episode_id}", "Episode"),
        cli="episodes show",
    ),
    Operation(
        "update_episode",
        "record an episode's outcome, or change its importance or tags (its recorder only)",
        {
            **_EPISODE,
            "outcome": a("what came of it", "--outcome", bounds=_TEXT, embedded=True),
            "importance": a("0..1", "--importance", bounds=UNIT),
            "tags": a("replaces the tags (repeatable)", "--tag", bounds=Bounds.size(1000)),
        },
        r(
            "PATCH",
            "/episodes/{episode_id}",
            "Episode",
            about="Record an outcome, or change importance or tags (the recording agent only).",
        ),
        Tool(
            "update_episode",
            "Update an episode you recorded: add its outcome later (how an error was fixed), "
            "or change its importance or tags.\n\nOnly the agent that recorded it may.",
            {
                "episode_id": Param("The episode's id (from remember)."),
                "outcome": Param("What came of it, e.g. the fix of an error."),
                "importance": Param("0..1."),
                "tags": Param("Replaces the tags."),
            },
            reply="updated {id}",
        ),
        cli="episodes update",
    ),
    Operation(
        "delete_episode",
        "delete an episode (never-forget episodes are refused)",
        _EPISODE,
        r(
            "DELETE",
            "/episodes/{episode_id}",
            "Episode",
            about="Delete an episode (the recording agent only; never-forget episodes are "
            "refused).",
        ),
        Tool(
            "delete_episode",
            "Delete an episode you recorded (a mistake, a duplicate).\n\nOnly the agent that "
            "recorded it may; never-forget episodes are refused.",
            {"episode_id": Param("The id of an episode you recorded.")},
            reply="deleted {id}",
        ),
        cli="episodes delete",
    ),
    Operation(
        "add",
        "hand over what was said: chat messages become episodes of the session's thread and "
        "its working memory (idempotent; with an LLM, facts are extracted)",
        {
            "session_id": a("the conversation (its thread and working session)", "--session"),
            "messages": a(
                "message text (repeatable; none: JSON lines from standard input)",
                bounds=Bounds.size(1000, 1),
                schema="ChatMessage",
                embedded=("content",),
            ),
            "timestamp": a("when it was said, ISO 8601 (default: now)", "--timestamp"),
            "scope": SCOPE,
        },
        r(
            "POST",
            "/messages",
            "AddReport",
            201,
            "A conversation's messages as the key's agent's episodes and working memory "
            "(idempotent: a retry records nothing twice).",
        ),
        Tool(
            "add_messages",
            "Hand over the messages of a conversation; omoide keeps what matters.\n\nEach "
            "message (role user, assistant, system or tool, and its content) becomes an "
            "episode of the session's thread and enters your working memory; sending the same "
            "messages again records nothing twice. Returns the ids and a one-line summary.",
            {
                "session_id": Param("The conversation (its thread)."),
                "messages": Param(
                    "Messages such as {'role': 'user', 'content': '...'} (role: user, "
                    "assistant, system or tool; optional name, timestamp, id)."
                ),
            },
            reply="{summary}",
        ),
        cli="add",
    ),
)

_SEMANTIC = tagged(
    "semantic",
    Operation(
        "collections",
        "the semantic collections: purpose, retention, cap and usage",
        rest=r("GET", "/collections", "Collection"),
        cli="collections",
    ),
    Operation(
        "store",
        "store documents in a semantic collection",
        {
            "collection": a("knowledge, code, decisions, feedback, or a configured one"),
            "documents": a(
                "document texts",
                bounds=Bounds.size(1000, 1),
                items=Bounds(min_length=1),
                embedded=True,
            ),
            "metadatas": w(
                "flat labels, one object (or null) per document", bounds=Bounds.size(1000)
            ),
            "ids": a("ids, one per document", "--id", bounds=Bounds.size(1000)),
            "scope": SCOPE,
        },
        rest=r(
            "POST",
            "/collections/{collection}/documents",
            "StoreResponse",
            201,
            "Upsert documents (chunked when long). Replacing a document is for its owner.",
        ),
        mcp=Tool(
            "store_knowledge",
            "Store a piece of reference knowledge (documentation, facts, explanations, code)."
            "\n\nIt becomes searchable by meaning with search_knowledge. Storing the same id "
            "again replaces your earlier version.",
            {
                "content": Param(
                    "The text to keep; long texts are chunked.", to="documents", one=True
                ),
                "collection": Param(
                    "knowledge (default), code, decisions or feedback", default="knowledge"
                ),
                "metadata": Param(
                    "Flat key/value labels, e.g. {'topic': 'fastapi'}.", to="metadatas", one=True
                ),
                "id": Param(
                    "Give an id to replace this document later; default: by content.",
                    to="ids",
                    one=True,
                ),
                "scope": SCOPE_PARAM,
            },
        ),
        cli="store",
    ),
    Operation(
        "query",
        "search a semantic collection by meaning",
        {
            "collection": a(_COLLECTION_HELP),
            "query_text": a(
                "the question, in any language",
                metavar="text",
                wire="query",
                alias="query_text",
                bounds=Bounds.text(100_000),
                embedded=True,
            ),
            "n_results": a(
                "how many (default: 5)",
                "-n",
                "--n-results",
                minimum=1,
                bounds=Bounds.number(1, 100),
            ),
            "where": a("a ChromaDB metadata filter, as JSON", "--where"),
            "where_document": w("a ChromaDB text filter"),
            "rank": a(
                "relevance (words and meaning, the default) or meaning (distance alone)",
                "--rank",
                choices=RANKINGS,
            ),
        },
        r(
            "POST",
            "/collections/{collection}/query",
            "QueryHit",
            about="The passages that best answer ``query`` (or ``query_text``), best first: "
            "by words and meaning, or by meaning alone with ``rank: meaning``.",
        ),
        Tool(
            "search_knowledge",
            "Search stored knowledge by words and meaning; returns the best passages with "
            "their ids.",
            {
                "query": Param("A question or topic, in any language.", to="query_text"),
                "collection": Param(
                    "knowledge (default), code, decisions or feedback", default="knowledge"
                ),
                "n_results": Param("How many to return.", bounds=Bounds.number(1, 20)),
                "where": Param("Optional metadata filter, e.g. {'topic': 'fastapi'}."),
            },
        ),
        cli="query",
        reads=True,
    ),
    Operation(
        "list_documents",
        "list the documents of a collection, newest first",
        {"collection": a(_COLLECTION_HELP), **_PAGE},
        r("GET", "/collections/{collection}/documents", "Document"),
        cli="documents list",
    ),
    Operation(
        "get_document",
        "show one document",
        _DOC,
        r("GET", "/collections/{collection}/documents/{doc_id}", "Document"),
        cli="documents show",
    ),
    Operation(
        "delete_document",
        "delete a document (its owner only; never-forget documents are refused)",
        _DOC,
        r("DELETE", "/collections/{collection}/documents/{doc_id}", "Document"),
        cli="documents delete",
    ),
)

_PROCEDURAL = tagged(
    "procedural",
    Operation(
        "procedures",
        "list procedures",
        {},
        r("GET", "/procedures", "Procedure"),
        cli="procedures list",
    ),
    Operation(
        "register_procedure",
        "add a procedure",
        {
            "name": a(_PROCEDURE_HELP),
            "trigger": a(
                "exact 'write_article', glob 'deploy:*', keyword '~記事', joined by '|'",
                bounds=Bounds.text(10_000),
            ),
            "template": a("the procedure's text (steps, a prompt)", bounds=Bounds.text(200_000)),
            "description": a("what it is for", "--description", bounds=Bounds.text(10_000, 0)),
            "success_rate": w("its success rate so far, 0..1", bounds=UNIT),
            "avg_quality_score": w(
                "its average quality so far, 0..10", bounds=Bounds.number(0, 10)
            ),
            "scope": SCOPE,
        },
        r("POST", "/procedures", "Procedure", 201),
        cli="procedures register",
    ),
    Operation(
        "get_procedure",
        "show a procedure at its current version",
        {"name": a(_PROCEDURE_HELP)},
        r("GET", "/procedures/{name}", "Procedure"),
        cli="procedures show",
    ),
    Operation(
        "match_procedure",
        "the best procedure for a task",
        {
            "task": a(
                "the task at hand, e.g. deploy:production or 記事を書く", bounds=Bounds.text(10_000)
            )
        },
        r(
            "POST",
            "/procedures/match",
            "ProcedureMatch",
            about="The best procedure for a task (success rate × 0.6 + quality/10 × 0.4).",
        ),
        Tool(
            "get_procedure",
            "Find the best known procedure (step-by-step template) for a task.\n\nReturns the "
            "best match (by success rate and quality) and the other candidates, or no best "
            "match if none applies. Report how it went with report_outcome.",
            {"task": Param("The task at hand, e.g. 'deploy:production' or '記事を書く'.")},
        ),
        cli="procedures match",
        reads=True,
    ),
    Operation(
        "report_outcome",
        "report how following a procedure went",
        {
            "name": a(_PROCEDURE_HELP),
            "quality_score": a("0..10", metavar="quality", bounds=Bounds.number(0, 10)),
            "success": a("the task failed (default: it succeeded)", "--failed", negate=True),
        },
        r(
            "POST",
            "/procedures/{name}/outcomes",
            "Procedure",
            about="Fold one execution's outcome into the figures (moving average, α 0.1).",
        ),
        Tool(
            "report_outcome",
            "Report how following a procedure went; better procedures are chosen more often.",
            {
                "name": Param("The procedure's name, from get_procedure."),
                "quality_score": Param("0 (bad) to 10."),
                "success": Param("Did the task succeed?"),
            },
        ),
        cli="procedures outcome",
    ),
    Operation(
        "evolve_procedure",
        "make a new version of a procedure's template current",
        {
            "name": a(_PROCEDURE_HELP),
            "template": a("the new version's text", bounds=Bounds.text(200_000)),
            "trigger": a("a new trigger", "--trigger", bounds=Bounds.text(10_000)),
        },
        r(
            "POST",
            "/procedures/{name}/versions",
            "Procedure",
            201,
            "Make a new template version current (the owner only).",
        ),
        cli="procedures evolve",
    ),
    Operation(
        "procedure_history",
        "every version of a procedure with its figures",
        {"name": a(_PROCEDURE_HELP)},
        r("GET", "/procedures/{name}/history", "ProcedureVersion"),
        cli="procedures history",
    ),
    Operation(
        "rollback_procedure",
        "make an earlier version current again",
        {
            "name": a(_PROCEDURE_HELP),
            "version": a(
                "the version to make current again", minimum=1, bounds=Bounds.number(1, 1_000_000)
            ),
        },
        r("POST", "/procedures/{name}/rollback", "Procedure"),
        cli="procedures rollback",
    ),
)

LAYER_OPERATIONS: tuple[Operation, ...] = (*_EPISODIC, *_SEMANTIC, *_PROCEDURAL)
