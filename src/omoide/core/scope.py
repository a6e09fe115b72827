"""Who may read a memory: scopes.

Every episode, document and procedure has an owner (the agent that wrote it) and a scope:

* ``global`` — every agent;
* ``private`` — the owner only;
* a share list — the owner plus the named agents and teams, written
  ``agent:cto,team:leads`` (teams are declared in configuration, ``[teams] leads = [...]``).

A team named in a new scope must be declared: the layers refuse ``team:leads`` when no
``[teams]`` entry defines ``leads`` (a typo would otherwise share an item with nobody).

Scopes are stored in a canonical form (members sorted, deduplicated), so that the SQL check
in :func:`reader_predicate` can match ``,agent:NAME,`` inside ``,SCOPE,``. Agent and team names
may not contain commas, colons or whitespace.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from omoide.errors import ScopeSyntaxError, ValidationError

__all__ = [
    "GLOBAL",
    "PRIVATE",
    "can_read",
    "check_teams",
    "normalize_scope",
    "reader_predicate",
    "teams_of",
]

GLOBAL = "global"
PRIVATE = "private"
_MEMBER = re.compile(r"^(agent|team):([^\s,:]{1,200})$")


def normalize_scope(
    value: Any, field: str = "scope", *, teams: Mapping[str, Iterable[str]] | None = None
) -> str:
    """The canonical form of a scope given as a string or a list of members.

    With ``teams`` (the configured ``[teams]``), every ``team:NAME`` member must be one of
    them (see :func:`check_teams`); None skips that check."""
    if isinstance(value, str):
        text = value.strip()
        if text in (GLOBAL, PRIVATE):
            return text
        members = [m.strip() for m in text.split(",")]
    elif isinstance(value, Sequence) and all(isinstance(m, str) for m in value):
        members = [m.strip() for m in value]
    else:
        raise ScopeSyntaxError(field, f"expected a scope string, got {type(value).__name__}")
    if not members or any(not m for m in members):
        raise ScopeSyntaxError(
            field, f"{value!r}: use 'global', 'private' or members like 'agent:cto,team:leads'"
        )
    for member in members:
        if not _MEMBER.match(member):
            raise ScopeSyntaxError(
                field,
                f"{member!r} is not a scope member; write agent:NAME or team:NAME "
                "(names without commas, colons or spaces)",
            )
    canonical = ",".join(sorted(set(members)))
    if teams is not None:
        check_teams(canonical, teams, field)
    return canonical


def check_teams(scope: str, teams: Mapping[str, Iterable[str]], field: str = "scope") -> None:
    """Refuse a canonical scope that names a team ``teams`` does not define (ValidationError
    naming the configured teams)."""
    if scope in (GLOBAL, PRIVATE):
        return
    unknown = [m[5:] for m in scope.split(",") if m.startswith("team:") and m[5:] not in teams]
    if not unknown:
        return
    configured = ", ".join(sorted(teams)) if teams else "none"
    raise ValidationError(
        field,
        f"team {unknown[0]!r} is not defined (configured teams: {configured}); declare it "
        f'in omoide.toml, e.g. [teams] {unknown[0]} = ["agent1", "agent2"]',
    )


def teams_of(agent: str, teams: Mapping[str, Iterable[str]]) -> frozenset[str]:
    """The teams ``agent`` belongs to."""
    return frozenset(team for team, members in teams.items() if agent in members)


def can_read(scope: str, owner: str, reader: str | None, reader_teams: Iterable[str] = ()) -> bool:
    """True if ``reader`` (None: unrestricted library access) may read an item."""
    if reader is None or scope == GLOBAL or owner == reader:
        return True
    if scope == PRIVATE:
        return False
    members = set(scope.split(","))
    return f"agent:{reader}" in members or any(f"team:{t}" in members for t in reader_teams)


def reader_predicate(
    reader: str | None,
    reader_teams: Iterable[str] = (),
    *,
    owner_column: str = "agent_name",
    scope_column: str = "scope",
) -> tuple[str, list[Any]]:
    """A SQL condition (and its parameters) selecting the rows ``reader`` may read."""
    if reader is None:
        return "1 = 1", []
    wrapped = f"(',' || {scope_column} || ',')"
    parts = [f"{scope_column} = 'global'", f"{owner_column} = ?", f"instr({wrapped}, ?) > 0"]
    params: list[Any] = [reader, f",agent:{reader},"]
    for team in sorted(reader_teams):
        parts.append(f"instr({wrapped}, ?) > 0")
        params.append(f",team:{team},")
    return "(" + " OR ".join(parts) + ")", params
