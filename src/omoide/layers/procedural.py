"""Layer 4: procedural memory — how to do things, learned from outcomes.

A :class:`~omoide.core.models.Procedure` is a named template with a trigger that says when it
applies. :meth:`ProceduralMemory.get_procedure` picks, among the procedures whose trigger
matches a task, the one with the best ``success_rate × 0.6 + avg_quality/10 × 0.4``;
:meth:`~ProceduralMemory.update_from_outcome` moves both figures by an exponential moving
average (α = 0.1); :meth:`~ProceduralMemory.evolve` adds a new version of the template and
keeps every earlier one, each with its own figures, so a worse template can be rolled back.

Trigger syntax — alternatives separated by ``|``, each one of:

* ``write_article`` — **exact**: the task type equals it (case and width folded);
* ``deploy:*`` — **glob**: ``*``, ``?`` and ``[...]`` as in shell patterns;
* ``~記事`` — **keyword**: the task text contains the word (case and width folded).

For example ``write_article|article:*|~記事`` matches ``write_article``, ``article:blog`` and
``技術記事を書く``.

Procedures are shared between agents that do not trust each other, so:

* **Triggers must say something.** A glob alternative without a literal character (``*``,
  ``**``, ``?*``, ``[a-z]*``) matches every task and is refused (:class:`ValidationError`),
  as is a trigger with no non-empty alternative. Among matching procedures the more specific
  match always wins (exact, then glob, then keyword); the score only orders procedures that
  match equally specifically, so a broad trigger with a high score never beats a specific one.
* **No self-declared track record.** A procedure registered by an agent starts from the
  configured neutral priors (success rate 0.5, quality 5.0); declaring ``success_rate`` or
  ``avg_quality_score`` is refused unless its scope is ``private`` (its owner is its only
  reader). Library calls without an agent (the operator) may declare them.
* **One agent, one voice.** Outcomes are folded per reporting agent: each agent that
  reports on a version has its own figures (``procedure_agent_figures``), an EMA (α 0.1)
  that starts from the version's figures when that agent first reports; the owner's chain
  starts from the version's prior and counts as one agent too. The procedure's figures are
  the plain mean of these per-agent figures, so however many outcomes one agent reports it
  moves the rate by at most its share (one agent among n + the owner): 30 failures by an
  outsider take a 0.5 procedure nobody else reported on to 0.26, not 0.02, while the owner's
  own outcomes move its chain fully.

Owner of ``procedures``, ``procedure_versions``, ``procedure_outcomes`` and
``procedure_agent_figures``: no module outside this one runs SQL on them.
"""

from __future__ import annotations

import fnmatch
import re
import unicodedata
from collections.abc import Iterable, Mapping
from typing import Any

from omoide.clock import Clock, from_timestamp, to_timestamp
from omoide.core.config import ProceduralConfig
from omoide.core.models import Procedure, ProcedureVersion
from omoide.core.scope import PRIVATE, normalize_scope, reader_predicate
from omoide.core.validation import check_name, check_number, check_text, check_unit_interval
from omoide.errors import AlreadyExistsError, NotFoundError, ValidationError
from omoide.storage import Database
from omoide.storage.database import insert_row, insert_row_keeping_id, timeline

__all__ = ["ProceduralMemory", "trigger_match"]

MAX_TEMPLATE_CHARS = 200_000


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold().strip()


def trigger_match(trigger: str, task_type: str) -> int:
    """How specifically ``trigger`` matches ``task_type``: 3 exact, 2 glob, 1 keyword, 0 no."""
    task = _fold(task_type)
    best = 0
    for alternative in (a.strip() for a in trigger.split("|")):
        if not alternative:
            continue
        if alternative.startswith("~"):
            if _fold(alternative[1:]) and _fold(alternative[1:]) in task:
                best = max(best, 1)
        elif any(ch in alternative for ch in "*?["):
            if fnmatch.fnmatchcase(task, _fold(alternative)):
                best = max(best, 2)
        elif _fold(alternative) == task:
            best = 3
    return best


def _literal(glob: str) -> str:
    """The characters of a glob pattern that must appear as they are (no ``*?[...]``)."""
    return re.sub(r"\[[^\]]*\]?|[*?]", "", glob)


def _check_trigger(value: Any) -> str:
    """A trigger that names its tasks: no alternative may match every task."""
    trigger = check_text("trigger", value, max_chars=10_000)
    alternatives = [a.strip() for a in trigger.split("|")]
    if not any(a.lstrip("~").strip() for a in alternatives):
        raise ValidationError("trigger", "needs at least one non-empty alternative")
    for alternative in alternatives:
        if alternative.startswith("~"):
            continue
        if any(ch in alternative for ch in "*?[") and not _fold(_literal(alternative)):
            raise ValidationError(
                "trigger",
                f"{alternative!r} matches every task; name the tasks (e.g. 'deploy:*')",
            )
    return trigger


class ProceduralMemory:
    """Layer 4 on SQLite; obtain it as ``Memory.procedural``."""

    def __init__(
        self,
        db: Database,
        *,
        clock: Clock,
        config: ProceduralConfig | None = None,
        default_scope: str = "global",
        teams: Mapping[str, Iterable[str]] | None = None,
    ) -> None:
        self._db = db
        self._clock = clock
        self.config = config or ProceduralConfig()
        self._default_scope = default_scope
        #: The configured teams a new scope may name (None: not checked).
        self._teams = teams

    # -- writing -----------------------------------------------------------------------

    def register(
        self,
        name: str,
        trigger: str,
        template: str,
        *,
        description: str = "",
        success_rate: float | None = None,
        avg_quality_score: float | None = None,
        agent_name: str = "",
        scope: str | None = None,
        exist_ok: bool = False,
    ) -> Procedure:
        """Add a procedure at version 1.

        ``success_rate`` and ``avg_quality_score`` start at the configured priors (0.5 and 5.0)
        unless given; an agent (``agent_name``) may give them only for a ``private``
        procedure (see the module's docstring). A taken name raises
        :class:`AlreadyExistsError`, or with ``exist_ok`` returns the stored procedure
        unchanged (use :meth:`evolve` to change it).
        Long because validation, the trigger checks and the first version's insert belong to one
        transaction.
        """
        name = check_name("name", name)
        trigger = _check_trigger(trigger)
        template = check_text("template", template, max_chars=MAX_TEMPLATE_CHARS)
        description = check_text("description", description, max_chars=10_000, allow_empty=True)
        rate = check_unit_interval(
            "success_rate",
            self.config.initial_success_rate if success_rate is None else success_rate,
        )
        quality = check_number(
            "avg_quality_score",
            self.config.initial_quality_score if avg_quality_score is None else avg_quality_score,
            low=0.0,
            high=10.0,
        )
        owner = "" if agent_name == "" else check_name("agent_name", agent_name)
        scope_value = normalize_scope(
            self._default_scope if scope is None else scope, teams=self._teams
        )
        if owner and scope_value != PRIVATE:
            for field, given in (
                ("success_rate", success_rate),
                ("avg_quality_score", avg_quality_score),
            ):
                if given is not None:
                    raise ValidationError(
                        field,
                        "a shared procedure starts from the neutral prior; only a private "
                        "one may declare its figures",
                    )
        now = to_timestamp(self._clock.now())
        with self._db.transaction() as conn:
            if conn.execute("SELECT 1 FROM procedures WHERE name=?", (name,)).fetchone():
                if exist_ok:
                    return self.get(name)
                raise AlreadyExistsError(
                    f"procedure {name!r} already exists; use evolve() to change its template"
                )
            conn.execute(
                "INSERT INTO procedures(name, trigger, template, description, version, "
                "success_rate, avg_quality_score, execution_count, agent_name, scope, "
                "created_at, last_updated) VALUES (?, ?, ?, ?, 1, ?, ?, 0, ?, ?, ?, ?)",
                (name, trigger, template, description, rate, quality, owner, scope_value, now, now),
            )
            conn.execute(
                "INSERT INTO procedure_versions(name, version, trigger, template, success_rate, "
                "avg_quality_score, execution_count, created_at) VALUES (?, 1, ?, ?, ?, ?, 0, ?)",
                (name, trigger, template, rate, quality, now),
            )
        return self.get(name)

    def update_from_outcome(
        self, name: str, quality_score: float, success: bool, *, agent_name: str = ""
    ) -> Procedure:
        """Fold one execution's outcome, reported by ``agent_name``, into that agent's figures
        for the current version (EMA, α 0.1); the version's figures become the mean of its
        agents' figures (the owner's chain included), so no agent outweighs another.

        Long because the per-agent moving averages and the procedure's figures are updated in one
        transaction, so they never disagree.
        """
        name = check_name("name", name)
        quality = check_number("quality_score", quality_score, low=0.0, high=10.0)
        if not isinstance(success, bool):
            raise ValidationError("success", f"expected true or false, got {success!r}")
        reporter = "" if agent_name == "" else check_name("agent_name", agent_name)
        alpha = self.config.ema_alpha
        now = to_timestamp(self._clock.now())
        with self._db.transaction() as conn:
            row = conn.execute("SELECT * FROM procedures WHERE name=?", (name,)).fetchone()
            if row is None:
                raise NotFoundError("procedure", name)
            version = row["version"]
            # Each agent's chain starts from the version's figures when it first reports;
            # the owner's chain exists before any other (it holds the version's prior).
            for agent in dict.fromkeys((row["agent_name"], reporter)):
                conn.execute(
                    "INSERT INTO procedure_agent_figures(name, version, agent_name, "
                    "success_rate, avg_quality_score, execution_count) VALUES (?, ?, ?, ?, ?, 0) "
                    "ON CONFLICT DO NOTHING",
                    (name, version, agent, row["success_rate"], row["avg_quality_score"]),
                )
            conn.execute(
                "UPDATE procedure_agent_figures SET "
                "success_rate = (1 - ?) * success_rate + ? * ?, "
                "avg_quality_score = (1 - ?) * avg_quality_score + ? * ?, "
                "execution_count = execution_count + 1 "
                "WHERE name=? AND version=? AND agent_name=?",
                (
                    alpha,
                    alpha,
                    1.0 if success else 0.0,
                    alpha,
                    alpha,
                    quality,
                    name,
                    version,
                    reporter,
                ),
            )
            rate, avg = conn.execute(
                "SELECT AVG(success_rate), AVG(avg_quality_score) FROM procedure_agent_figures "
                "WHERE name=? AND version=?",
                (name, version),
            ).fetchone()
            conn.execute(
                "UPDATE procedures SET success_rate=?, avg_quality_score=?, "
                "execution_count=execution_count+1, last_updated=? WHERE name=?",
                (rate, avg, now, name),
            )
            conn.execute(
                "UPDATE procedure_versions SET success_rate=?, avg_quality_score=?, "
                "execution_count=execution_count+1 WHERE name=? AND version=?",
                (rate, avg, name, row["version"]),
            )
            conn.execute(
                "INSERT INTO procedure_outcomes(name, version, quality_score, success, "
                "agent_name, recorded_at) VALUES (?, ?, ?, ?, ?, ?)",
                (name, row["version"], quality, int(success), agent_name, now),
            )
        return self.get(name)

    def evolve(self, name: str, new_template: str, *, trigger: str | None = None) -> Procedure:
        """Make a new version of the template current; earlier versions stay in history.

        The new version starts from the figures of the version it replaces (its prior) and
        its own execution count at zero.
        """
        name = check_name("name", name)
        template = check_text("new_template", new_template, max_chars=MAX_TEMPLATE_CHARS)
        now = to_timestamp(self._clock.now())
        with self._db.transaction() as conn:
            row = conn.execute("SELECT * FROM procedures WHERE name=?", (name,)).fetchone()
            if row is None:
                raise NotFoundError("procedure", name)
            new_trigger = row["trigger"] if trigger is None else _check_trigger(trigger)
            version = (
                int(
                    conn.execute(
                        "SELECT MAX(version) FROM procedure_versions WHERE name=?", (name,)
                    ).fetchone()[0]
                )
                + 1
            )
            conn.execute(
                "INSERT INTO procedure_versions(name, version, trigger, template, success_rate, "
                "avg_quality_score, execution_count, created_at) VALUES (?, ?, ?, ?, ?, ?, 0, ?)",
                (
                    name,
                    version,
                    new_trigger,
                    template,
                    row["success_rate"],
                    row["avg_quality_score"],
                    now,
                ),
            )
            conn.execute(
                "UPDATE procedures SET template=?, trigger=?, version=?, last_updated=? "
                "WHERE name=?",
                (template, new_trigger, version, now, name),
            )
        return self.get(name)

    def rollback(self, name: str, version: int) -> Procedure:
        """Make an earlier version current again, with the figures it had."""
        name = check_name("name", name)
        if isinstance(version, bool) or not isinstance(version, int):
            raise ValidationError("version", f"expected an integer, got {version!r}")
        if not -(2**63) <= version < 2**63:  # beyond SQLite's integers: no such version
            raise NotFoundError("procedure version", f"{name} v{version}")
        now = to_timestamp(self._clock.now())
        with self._db.transaction() as conn:
            if not conn.execute("SELECT 1 FROM procedures WHERE name=?", (name,)).fetchone():
                raise NotFoundError("procedure", name)
            ver = conn.execute(
                "SELECT * FROM procedure_versions WHERE name=? AND version=?", (name, version)
            ).fetchone()
            if ver is None:
                raise NotFoundError("procedure version", f"{name} v{version}")
            conn.execute(
                "UPDATE procedures SET template=?, trigger=?, version=?, success_rate=?, "
                "avg_quality_score=?, last_updated=? WHERE name=?",
                (
                    ver["template"],
                    ver["trigger"],
                    version,
                    ver["success_rate"],
                    ver["avg_quality_score"],
                    now,
                    name,
                ),
            )
        return self.get(name)

    # -- reading -----------------------------------------------------------------------

    def get(
        self, name: str, *, reader: str | None = None, reader_teams: Iterable[str] = ()
    ) -> Procedure:
        """The procedure at its current version."""
        name = check_name("name", name)
        scope_sql, params = reader_predicate(reader, reader_teams)
        row = self._db.query_one(
            f"SELECT * FROM procedures WHERE name=? AND {scope_sql}", (name, *params)
        )
        if row is None:
            raise NotFoundError("procedure", name)
        return _procedure(row)

    def procedures(
        self, *, reader: str | None = None, reader_teams: Iterable[str] = ()
    ) -> list[Procedure]:
        """Every procedure (visible to ``reader``), by name."""
        scope_sql, params = reader_predicate(reader, reader_teams)
        return [
            _procedure(r)
            for r in self._db.query(
                f"SELECT * FROM procedures WHERE {scope_sql} ORDER BY name", params
            )
        ]

    def outcomes(self, name: str, limit: int = 200) -> list[dict[str, Any]]:
        """The latest ``limit`` reported outcomes of a procedure, oldest first."""
        rows = self._db.query(
            "SELECT * FROM (SELECT version, quality_score, success, agent_name, recorded_at, id "
            "FROM procedure_outcomes WHERE name = ? ORDER BY id DESC LIMIT ?) ORDER BY id",
            (name, limit),
        )
        return [
            {
                "version": int(r["version"]),
                "quality_score": float(r["quality_score"]),
                "success": bool(r["success"]),
                "agent_name": r["agent_name"],
                "recorded_at": from_timestamp(r["recorded_at"]),
            }
            for r in rows
        ]

    def timeline(
        self, reader: str | None, teams: Iterable[str], since: float
    ) -> tuple[int, list[float]]:
        """Procedures ``reader`` may read: how many were registered before ``since``, and when
        the others were (for growth charts)."""
        return timeline(self._db, "procedures", "created_at", reader, teams, since)

    def count(self) -> int:
        return int(self._db.scalar("SELECT COUNT(*) FROM procedures"))

    def present(self, names: Iterable[str]) -> set[str]:
        """Which of ``names`` are stored procedures."""
        return {
            n for n in names if self._db.query_one("SELECT 1 FROM procedures WHERE name=?", (n,))
        }

    def import_rows(
        self,
        conn: Any,
        procedures: Iterable[Mapping[str, Any]],
        versions: Iterable[Mapping[str, Any]],
        outcomes: Iterable[Mapping[str, Any]],
    ) -> None:
        """Insert whole rows of an import (outcomes keep their ids when those are free)."""
        for p in procedures:
            insert_row(conn, "procedures", p)
        for v in versions:
            insert_row(conn, "procedure_versions", v)
        for o in outcomes:
            insert_row_keeping_id(conn, "procedure_outcomes", o)

    def usage(
        self, reader: str | None = None, reader_teams: Iterable[str] = ()
    ) -> dict[str, tuple[int, int]]:
        """Per agent: the procedures ``reader`` may see and the bytes of their templates."""
        pred, params = reader_predicate(reader, reader_teams)
        size = self._db.dialect.byte_length("template")
        rows = self._db.query(
            f"SELECT agent_name, COUNT(*), SUM({size}) FROM procedures "
            f"WHERE {pred} GROUP BY agent_name",
            params,
        )
        return {str(r[0] or ""): (int(r[1] or 0), int(r[2] or 0)) for r in rows}

    def matches(
        self, task_type: str, *, reader: str | None = None, reader_teams: Iterable[str] = ()
    ) -> list[Procedure]:
        """Every procedure whose trigger matches ``task_type``, best first: the most specific
        match first (exact, glob, keyword), then by score."""
        task = check_text("task_type", task_type, max_chars=10_000)
        c = self.config
        ranked = []
        for proc in self.procedures(reader=reader, reader_teams=reader_teams):
            specificity = trigger_match(proc.trigger, task)
            if specificity:
                score = c.success_weight * proc.success_rate + c.quality_weight * (
                    proc.avg_quality_score / 10
                )
                ranked.append((-specificity, -score, -proc.execution_count, proc.name, proc))
        ranked.sort(key=lambda item: item[:4])
        return [item[4] for item in ranked]

    def get_procedure(
        self, task_type: str, *, reader: str | None = None, reader_teams: Iterable[str] = ()
    ) -> Procedure | None:
        """The best procedure for ``task_type``, or None if no trigger matches."""
        found = self.matches(task_type, reader=reader, reader_teams=reader_teams)
        return found[0] if found else None

    def history(
        self, name: str, *, reader: str | None = None, reader_teams: Iterable[str] = ()
    ) -> list[ProcedureVersion]:
        """Every version of a procedure, oldest first, with its figures."""
        current = self.get(name, reader=reader, reader_teams=reader_teams)
        return [
            ProcedureVersion(
                name=r["name"],
                version=int(r["version"]),
                trigger=r["trigger"],
                template=r["template"],
                success_rate=float(r["success_rate"]),
                avg_quality_score=float(r["avg_quality_score"]),
                execution_count=int(r["execution_count"]),
                created_at=from_timestamp(r["created_at"]),
                current=int(r["version"]) == current.version,
            )
            for r in self._db.query(
                "SELECT * FROM procedure_versions WHERE name=? ORDER BY version", (current.name,)
            )
        ]


def _procedure(row: Any) -> Procedure:
    return Procedure(
        name=row["name"],
        trigger=row["trigger"],
        template=row["template"],
        success_rate=float(row["success_rate"]),
        avg_quality_score=float(row["avg_quality_score"]),
        execution_count=int(row["execution_count"]),
        last_updated=from_timestamp(row["last_updated"]),
        version=int(row["version"]),
        agent_name=row["agent_name"],
        scope=row["scope"],
        description=row["description"],
    )
