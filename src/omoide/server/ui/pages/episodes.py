"""Episodes: a filterable list (text, agent, event type, tag, state, time range) and each
episode's detail — context, outcome, references, what happened to it, and the recalls
that used it."""

from __future__ import annotations

from typing import Any

from omoide.errors import NotFoundError, ValidationError
from omoide.server.ui.html import (
    Safe,
    badge,
    definition_list,
    el,
    join,
    link,
    pager,
    pretty_json,
    select_field,
    short,
    table,
    url,
)
from omoide.server.ui.reads import EPISODE_STATES, EpisodeFilter
from omoide.server.ui.view import Page, View, when
from omoide.service.protocol import AuditQuery

__all__ = ["episode_badges", "episode_detail", "episodes", "recalls_table"]

PAGE_SIZE = 50


def episode_badges(e: dict[str, Any]) -> Safe:
    """The state and flags of an episode as badges."""
    return join(
        [
            badge(e["state"], e["state"]),
            badge("distilled", "distilled") if e.get("distilled_at") else None,
            badge("never-forget", "protected") if e.get("protected") else None,
        ],
        " ",
    )


def _filters(view: View, f: EpisodeFilter) -> Safe:
    agents, types, tags = view.reads.episode_facets()
    return el(
        "form",
        el(
            "label",
            "Text",
            el(
                "input",
                type="search",
                name="text",
                value=f.text,
                placeholder="words in the description or outcome",
            ),
            class_="field wide",
        ),
        el(
            "label",
            el(
                "input",
                type="checkbox",
                name="meaning",
                value="1",
                checked=bool(view.arg("meaning")),
            ),
            " by meaning (ranked)",
            class_="check",
        ),
        select_field("agent", "Agent", agents, f.agent),
        select_field("event_type", "Event type", types, f.event_type),
        select_field("tag", "Tag", tags, f.tag),
        select_field("state", "State", list(EPISODE_STATES), f.state),
        el("label", "From", el("input", type="date", name="since", value=f.since), class_="field"),
        el("label", "To", el("input", type="date", name="until", value=f.until), class_="field"),
        el("button", "Filter", type="submit"),
        link("Clear", "/ui/episodes", class_="button secondary"),
        method="get",
        action="/ui/episodes",
        class_="filters",
        role="search",
    )


def episodes(view: View) -> Page:
    f = EpisodeFilter(
        text=view.arg("text")[:200],
        agent=view.arg("agent"),
        event_type=view.arg("event_type"),
        tag=view.arg("tag"),
        state=view.arg("state"),
        since=view.arg("since"),
        until=view.arg("until"),
    )
    offset = view.int_arg("offset", 0)
    try:
        if f.text and view.arg("meaning"):
            found, offset = view.reads.search_episodes(f, limit=PAGE_SIZE), 0
        else:
            found = view.reads.episodes(f, limit=PAGE_SIZE + 1, offset=offset)
        problem = None
    except ValidationError as exc:
        found, problem = [], el("p", str(exc), class_="notice error", role="alert")
    rows = [
        (
            el("time", when(e["timestamp"]), datetime=e["timestamp"]),
            e["agent_name"],
            e["event_type"],
            link(short(e["description"], 120), url("/ui/episodes", e["id"])),
            join([el("span", t, class_="chip") for t in e["tags"]], " "),
            episode_badges(e),
        )
        for e in found[:PAGE_SIZE]
    ]
    params = {k: v for k, v in vars(f).items() if v}
    more = pager(
        lambda at: url("/ui/episodes", **params, offset=at),
        offset,
        PAGE_SIZE,
        len(found) > PAGE_SIZE,
    )
    body = join(
        [
            _filters(view, f),
            problem,
            table(
                ["When", "Agent", "Type", "Description", "Tags", "State"],
                rows,
                empty="No episode matches.",
            ),
            more,
        ]
    )
    return Page("Episodes", body, section="/ui/episodes")


def recalls_table(view: View, item_id: str, layer: str) -> Safe:
    """The logged recalls whose context included this item (provenance)."""
    rows = [
        (
            link(when(r.created_at), url("/ui/recall", r.id)),
            r.agent_name,
            short(r.query, 100),
            f"{next(i.position for i in r.items if i.id == item_id) + 1}",
        )
        for r in view.reads.recalls_containing(item_id, layer)
    ]
    return table(
        ["When", "Agent", "Question", "Position"],
        rows,
        numeric=(3,),
        empty="No logged recall used it (that you may see).",
    )


def history_table(entries: list[dict[str, Any]]) -> Safe:
    rows = [
        (when(e["at"]), badge(e["action"], e["action"]), e["policy"], e["reason"]) for e in entries
    ]
    return table(
        ["When", "Action", "Policy", "Why"],
        rows,
        empty="Nothing has happened to it since it was stored.",
    )


def _references(view: View, refs: list[str]) -> Safe:
    items = []
    for ref in refs:
        try:
            target = view.ops.get_episode(ref)
            items.append(
                el("li", link(short(target["description"], 100), url("/ui/episodes", ref)))
            )
        except (NotFoundError, ValidationError):
            items.append(el("li", el("code", ref)))
    return el("ul", *items) if items else el("p", "None.", class_="empty")


def episode_detail(view: View) -> Page:
    e = view.ops.get_episode(view.path["episode_id"])
    into = view.reads.distilled_into(e["id"])
    collection = view.mem.config.distill.collection
    fields = definition_list(
        [
            ("State", episode_badges(e)),
            ("When", when(e["timestamp"])),
            ("Agent", link(e["agent_name"], url("/ui/episodes", agent=e["agent_name"]))),
            ("Event type", e["event_type"]),
            ("Importance", f"{e['importance']:.2f}"),
            ("Scope", e["scope"]),
            ("Tags", join([el("span", t, class_="chip") for t in e["tags"]], " ") or "none"),
            ("Accessed", f"{e['access_count']} times"),
            (
                "Distilled into",
                link(into, url("/ui/knowledge", collection, into)) if into else None,
            ),
            ("Id", el("code", e["id"])),
        ]
    )
    body = join(
        [
            el("section", el("p", e["description"], class_="text"), fields, class_="card"),
            el(
                "div",
                el(
                    "section",
                    el("h2", "Outcome"),
                    el("p", e["outcome"], class_="text")
                    if e["outcome"]
                    else el("p", "None recorded.", class_="empty"),
                    class_="card",
                ),
                el("section", el("h2", "Context"), pretty_json(e["context"]), class_="card"),
                class_="grid",
            ),
            el(
                "section",
                el("h2", "References"),
                _references(view, list(e["references"])),
                class_="card",
            ),
            el(
                "section",
                el("h2", "History"),
                history_table(view.ops.audit(AuditQuery(item_id=e["id"], layer="episodic"))),
                class_="card",
            ),
            el(
                "section",
                el("h2", "Used in recalls"),
                recalls_table(view, e["id"], "episodic"),
                class_="card",
            ),
        ]
    )
    return Page(short(e["description"], 60), body, section="/ui/episodes")
