"""The recall playground: ask a question as an agent and see the context it would get —
items, layers, scores, the ``why`` of each, tokens used — and the recall log: which
memories went into which past context."""

from __future__ import annotations

from typing import Any

from omoide.core.models import LAYERS
from omoide.recall.log import RecallRecord
from omoide.server.ui.html import Safe, el, hidden, join, link, select_field, short, table, url
from omoide.server.ui.view import Page, View, when
from omoide.service.local import Caller, LocalOperations

__all__ = ["ask", "playground", "recall_record"]

MAX_QUESTION = 2_000


def _who(view: View, as_agent: str) -> Safe:
    """Admins choose the agent to ask as; an agent asks as itself."""
    if not view.admin:
        return el("p", "Asking as ", el("strong", view.agent), class_="muted")
    agents = view.reads.known_agents()
    return select_field("as_agent", "Ask as", agents, as_agent or view.agent, anything="")


def _layers(view: View) -> Safe:
    """A checkbox per layer (all checked until a form says otherwise)."""
    boxes = [
        el(
            "label",
            el(
                "input",
                type="checkbox",
                name=f"layer_{name}",
                value="1",
                checked=not view.form or view.form.get(f"layer_{name}") == "1",
            ),
            name,
        )
        for name in LAYERS
    ]
    return el("fieldset", el("legend", "Layers"), *boxes, class_="layers")


def _form(view: View, question: str = "", as_agent: str = "") -> Safe:
    who = _who(view, as_agent)
    layers = _layers(view)
    return el(
        "form",
        hidden("csrf", view.csrf),
        el(
            "label",
            "Question",
            el(
                "textarea", question, name="question", rows=2, required=True, maxlength=MAX_QUESTION
            ),
            class_="field wide",
        ),
        who,
        el(
            "label",
            "Budget (tokens)",
            el(
                "input",
                type="number",
                name="budget",
                min=50,
                max=32000,
                value=view.arg("budget", "2000"),
            ),
            class_="field",
        ),
        layers,
        el("button", "Recall", type="submit"),
        method="post",
        action="/ui/recall",
        class_="filters ask",
    )


def _log(view: View) -> Safe:
    agent = view.arg("agent") if view.admin else ""
    rows = [
        (
            link(when(r.created_at), url("/ui/recall", r.id)),
            r.agent_name,
            short(r.query, 100),
            f"{len(r.items)}",
            f"{r.tokens_used:,} / {r.budget_tokens:,}",
        )
        for r in view.reads.recalls(agent=agent, limit=30)
    ]
    note = "Every recall is logged; an agent sees its own, an admin everyone's."
    chooser = None
    if view.admin:
        chooser = el(
            "form",
            el(
                "label",
                "Agent",
                el(
                    "select",
                    el("option", "any", value=""),
                    *(
                        el("option", a, value=a, selected=a == agent)
                        for a in view.reads.known_agents()
                    ),
                    name="agent",
                ),
                class_="field",
            ),
            el("button", "Show", type="submit"),
            method="get",
            action="/ui/recall#log",
            class_="filters",
        )
    return join(
        [
            el("p", note, class_="hint"),
            chooser,
            table(
                ["When", "Agent", "Question", "Items", "Tokens"],
                rows,
                numeric=(3, 4),
                empty="No recall logged yet.",
            ),
        ]
    )


def _items(items: list[dict[str, Any]]) -> Safe:
    rows = []
    for i, item in enumerate(items, start=1):
        href = _href(item["layer"], item["id"])
        text = short(item["text"], 220)
        rows.append(
            (
                f"{i}",
                el("span", item["layer"], class_=f"badge layer-{item['layer']}"),
                link(text, href) if href else text,
                f"{item['score']:.3f}",
                el("span", item["why"], class_="why"),
                f"{item['tokens']:,}",
                item.get("author") or "—",
            )
        )
    return table(
        ["#", "Layer", "Memory", "Score", "Why", "Tokens", "Author"],
        rows,
        numeric=(0, 3, 5),
        empty="Nothing in memory answers this question.",
    )


def _href(layer: str, item_id: str) -> str | None:
    if layer == "episodic":
        return url("/ui/episodes", item_id)
    if layer == "semantic" and "/" in item_id:
        collection, _, doc_id = item_id.partition("/")
        return url("/ui/knowledge", collection, doc_id)
    if layer == "procedural":
        return url("/ui/procedures", item_id)
    return None


def playground(view: View) -> Page:
    body = join(
        [
            el("section", el("h2", "Ask"), _form(view), class_="card"),
            el("section", el("h2", "Recall log"), _log(view), class_="card", id="log"),
        ]
    )
    return Page("Recall", body, section="/ui/recall")


def ask(view: View) -> Page:
    question = view.arg("question")[:MAX_QUESTION]
    as_agent = view.arg("as_agent") if view.admin else view.agent
    ops = view.ops
    if view.admin and as_agent and as_agent != view.agent:
        ops = LocalOperations(view.mem, Caller.for_agent(view.mem, as_agent))
    chosen = [name for name in LAYERS if view.form.get(f"layer_{name}") == "1"]
    result = ops.recall(
        question,
        budget_tokens=view.int_arg("budget", 2000, low=50, high=32000),
        layers=chosen or None,
    )
    summary = el(
        "p",
        el("strong", f"{len(result['items'])} items"),
        f" for {result['agent_name']} from {', '.join(result['layers'])}; ",
        el("strong", f"{result['tokens']:,} of {result['budget_tokens']:,} tokens"),
        " used.",
        " " if result["recall_id"] else None,
        link("Logged as this recall.", url("/ui/recall", result["recall_id"]))
        if result["recall_id"]
        else None,
        class_="notice ok",
        role="status",
    )
    body = join(
        [
            el("section", el("h2", "Ask"), _form(view, question, as_agent), class_="card"),
            el(
                "section",
                el("h2", "The context this agent would get"),
                summary,
                _items(result["items"]),
                el(
                    "details",
                    el("summary", "Rendered context (as the prompt gets it)"),
                    el("pre", result["context"]),
                ),
                class_="card",
                id="result",
            ),
            el("section", el("h2", "Recall log"), _log(view), class_="card", id="log"),
        ]
    )
    return Page("Recall", body, section="/ui/recall")


def recall_record(view: View) -> Page:
    r: RecallRecord = view.reads.recall(view.path["recall_id"])
    rows = []
    for item in r.items:
        found = view.reads.item_text(item.layer, item.id)
        memory: Any = (
            link(short(found[0], 200), found[1])
            if found
            else el("span", "(not readable now: forgotten, or not yours to read)", class_="muted")
        )
        rows.append(
            (f"{item.position + 1}", item.layer, memory, f"{item.score:.3f}", f"{item.tokens:,}")
        )
    fields = el(
        "dl",
        *(
            (el("dt", k), el("dd", v))
            for k, v in (
                ("Question", r.query),
                ("Agent", r.agent_name),
                ("When", when(r.created_at)),
                ("Session", r.session_id or "—"),
                ("Layers", ", ".join(r.layers)),
                ("Tokens", f"{r.tokens_used:,} of {r.budget_tokens:,}"),
            )
        ),
        class_="fields",
    )
    body = join(
        [
            el("p", link("← Recall", "/ui/recall")),
            el("section", fields, class_="card"),
            el(
                "section",
                el("h2", "Memories that went into this context"),
                table(["#", "Layer", "Memory", "Score", "Tokens"], rows, numeric=(0, 3, 4)),
                class_="card",
            ),
        ]
    )
    return Page("A past recall", body, section="/ui/recall")
