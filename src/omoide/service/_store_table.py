"""The operation table's entries of working memory and the whole store (see
:mod:`omoide.service.table`)."""

from __future__ import annotations

from omoide.service._layer_table import UNIT
from omoide.service.operation import LOCAL, Bounds, Operation, Param, Tool, a, r, tagged, w

__all__ = ["STORE_OPERATIONS"]

_SESSION = {"session_id": a("the working session", metavar="session")}
_CONTENT = Bounds.text(1_000_000)
_WORKING = tagged(
    "working",
    Operation(
        "working",
        "show an agent's working memory of a session, as rendered for a prompt",
        {
            **_SESSION,
            "max_tokens": w("the session's token budget", bounds=Bounds.number(6, 10_000_000)),
        },
        (
            *r(
                "GET",
                "/working/{session_id}",
                "SessionView",
                about="The key's agent's working memory of a session, rendered context included.",
                fixed={"create": False, "max_tokens": None},
            ),
            *r(
                "PUT",
                "/working/{session_id}",
                "SessionView",
                about="Create a session, or resize it (a smaller one evicts messages as overflow "
                "does).",
                fixed={"create": True},
            ),
        ),
        cli="working",
    ),
    Operation(
        "add_message",
        "append a message to a working session; returns what it evicted",
        {
            "content": w("the message", bounds=_CONTENT, embedded=True),
            "importance": w("0..1", bounds=UNIT),
        },
        rest=r(
            "POST",
            "/working/{session_id}/messages",
            "EvictionsResponse",
            about="Append a message; returns what it evicted (important ones became episodes).",
        ),
    ),
    Operation(
        "set_slot",
        "set a slot of a working session",
        {
            "slot": w(choices=("system", "active_task", "constraints", "scratchpad")),
            "value": w("the slot's text (null: empty it)", bounds=Bounds.text(1_000_000, 0)),
        },
        rest=r("PUT", "/working/{session_id}/slots/{slot}", "SessionView"),
    ),
    Operation(
        "pin",
        "pin an instruction into an agent's working memory",
        {
            **_SESSION,
            "key": a("a short name for the pin"),
            "content": a("the instruction or fact to keep in view", bounds=_CONTENT),
            "reason": a("why it is pinned", "--reason", bounds=Bounds.text(10_000, 0)),
        },
        r("PUT", "/working/{session_id}/pins/{key}", "Pin"),
        Tool(
            "pin",
            "Pin an instruction or fact into your working memory for the whole session.\n\n"
            "Pinned items are always part of your context until unpinned; pinning the same key "
            "again replaces it.",
            {
                "key": Param("A short name for the pinned item."),
                "content": Param("The instruction or fact to keep in view."),
                "reason": Param("Why it is pinned."),
                "session_id": Param("Your working session.", default="default"),
            },
        ),
        cli="pin",
    ),
    Operation(
        "unpin",
        "remove a pinned item",
        {**_SESSION, "key": a("the pin's name")},
        r("DELETE", "/working/{session_id}/pins/{key}", "Pin"),
        cli="unpin",
    ),
    Operation(
        "clear_messages",
        "drop a working session's messages (important ones become episodes)",
        rest=r("POST", "/working/{session_id}/clear", "EvictionsResponse"),
    ),
)

_STORE = tagged(
    "store",
    Operation(
        "whoami",
        "the agent this invocation acts as",
        {},
        r("GET", "/whoami", "WhoAmI"),
        cli="whoami",
    ),
    Operation(
        "stats",
        "counts and sizes per layer and per agent",
        {},
        r(
            "GET",
            "/stats",
            "Stats",
            about="Counts and sizes per layer and per agent, of what the key's agent may read.",
        ),
        cli="stats",
    ),
    Operation(
        "export_lines",
        "write every layer as JSON Lines",
        {
            "embeddings": a(
                "leave out episode vectors (they are computed again on import)",
                "--no-embeddings",
                negate=True,
            ),
            "progress": LOCAL,
        },
        r("GET", "/export", custom="export"),
        cli="export",
    ),
    Operation(
        "import_lines",
        "import an export; existing items are skipped, never replaced",
        {
            "lines": LOCAL,
            "reembed": a("compute every episode vector again", "--reembed"),
            "progress": LOCAL,
        },
        r(
            "POST",
            "/import",
            "ImportReport",
            about="Import an export (admin keys only); existing items are skipped, never replaced.",
            custom="import",
        ),
        cli="import",
    ),
    Operation(
        "add_key",
        "mint an API key for an agent (shown once)",
        {
            "agent_name": a("the agent the key acts as"),
            "admin": a("may export, import and manage keys", "--admin"),
            "label": a("what the key is for", "--label", bounds=Bounds.text(200, 0)),
        },
        r(
            "POST",
            "/keys",
            "NewApiKey",
            201,
            "Mint a key for an agent (admin keys only); the key is shown once.",
        ),
        cli="keys add",
    ),
    Operation(
        "list_keys",
        "list API keys",
        {"include_revoked": a("include revoked keys", "--all")},
        r("GET", "/keys", "ApiKeyInfo"),
        cli="keys list",
    ),
    Operation(
        "revoke_key",
        "revoke an API key",
        {"key_id": a("the key's id (from keys list), not the key itself")},
        r("DELETE", "/keys/{key_id}", "ApiKeyInfo"),
        cli="keys revoke",
    ),
)

STORE_OPERATIONS: tuple[Operation, ...] = (*_WORKING, *_STORE)
