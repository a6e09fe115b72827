"""Who calls an operation, and the checks every operation shares.

:class:`Caller` is the identity a front end resolved (a key's agent, the local operator);
:class:`OperationsBase` holds an open :class:`Memory` with a caller and the rules the
operations of :mod:`omoide.service.local` apply with it: writes are recorded as the calling
agent, reads see what its scopes allow, changing an item is for its owner, whole-store jobs
are for admins. :func:`to_json` turns the library's records into the JSON the operations
return. The mixins of the operations import this module only, never each other.
"""

from __future__ import annotations

import dataclasses
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from omoide.core.ids import check_client_id, qualified_id
from omoide.core.scope import teams_of
from omoide.core.validation import check_datetime, check_name
from omoide.errors import AlreadyExistsError, NotFoundError, PermissionDeniedError, ValidationError
from omoide.memory import Memory
from omoide.service.keys import ApiKey

__all__ = [
    "FUTURE_SKEW",
    "MIN_PREFIX",
    "Caller",
    "OperationsBase",
    "json_dict",
    "plain_name",
    "store_lock",
    "to_json",
]

#: The shortest id prefix that stands for a whole id (as git takes a short commit id).
MIN_PREFIX = 3

#: How far after the clock an episode's timestamp may be (writers' clocks drift): a later
#: one is refused, since a date in year 9999 would keep an episode's freshness at 1.0 forever.
FUTURE_SKEW = timedelta(minutes=5)


@dataclass(frozen=True)
class Caller:
    """Who is calling, and what that allows.

    ``agent`` is who writes (None: the operator of a local directory, acting as no agent;
    writes then need an agent named explicitly). ``read_all`` callers read every scope,
    ``change_all`` callers may change or delete any item (others only their own), and
    ``admin`` callers may run whole-store operations (export, import, API keys). The ids and
    procedure names a caller without ``admin`` chooses are its own, stored as ``agent:id``
    (:meth:`OperationsBase._chosen_id`); admins write them as given.

    ========================  ========  ==========  =====
    caller                    read_all  change_all  admin
    ========================  ========  ==========  =====
    key of an agent           no        no          no
    admin key                 yes       no          yes
    local operator            yes       yes         yes
    local operator as agent   no        no          yes
    ========================  ========  ==========  =====
    """

    agent: str | None
    teams: frozenset[str] = frozenset()
    admin: bool = False
    read_all: bool = False
    change_all: bool = False
    #: A server's key (REST, MCP over HTTP): the caller is another process, perhaps on another
    #: machine, so what reads this machine's files (indexing) is limited to configured roots.
    remote: bool = False

    @classmethod
    def for_agent(cls, mem: Memory, agent: str, *, admin: bool = False) -> Caller:
        """An agent with the teams the configuration gives it (admins read every scope)."""
        return cls(agent, teams_of(agent, mem.config.teams), admin=admin, read_all=admin)

    @classmethod
    def for_key(cls, mem: Memory, key: ApiKey) -> Caller:
        return replace(cls.for_agent(mem, key.agent_name, admin=key.admin), remote=True)

    @classmethod
    def operator(cls, mem: Memory, agent: str | None = None) -> Caller:
        """The owner of a local directory; with ``agent``, acting and reading as that agent
        would (its scopes, its items), with whole-store operations still allowed."""
        if agent is None:
            return cls(None, admin=True, read_all=True, change_all=True)
        return cls(agent, teams_of(agent, mem.config.teams), admin=True)

    @property
    def reader(self) -> str | None:
        """The ``reader=`` of the layers: None reads every scope."""
        return None if self.read_all else self.agent


def to_json(value: Any) -> Any:
    """A record of the library as JSON-ready data (datetimes as ISO 8601 strings)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_json(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Mapping):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_json(v) for v in value]
    return value


def json_dict(value: Any) -> dict[str, Any]:
    """:func:`to_json` of a record that is an object (typed for the operations' results)."""
    out: dict[str, Any] = to_json(value)
    return out


_STORE_LOCKS: weakref.WeakKeyDictionary[Memory, threading.Lock] = weakref.WeakKeyDictionary()
_STORE_LOCKS_GUARD = threading.Lock()


def store_lock(mem: Memory) -> threading.Lock:
    """Serializes the writes of documents in this process, and a deletion's owner check with
    the deletion. (A store checks owners inside its write transaction, which holds across
    replicas; writes of one id in two replicas at once end as the registry says: see
    :mod:`omoide.layers.semantic.chunks`.)"""
    with _STORE_LOCKS_GUARD:
        return _STORE_LOCKS.setdefault(mem, threading.Lock())


def plain_name(value: Any, minimum: int = MIN_PREFIX) -> bool:
    """Whether ``value`` can be looked up as an id (or its prefix): a valid name of at least
    ``minimum`` characters."""
    if not isinstance(value, str) or len(value) < minimum:
        return False
    try:
        check_name("id", value)
        value.encode("utf-8")
    except (ValidationError, UnicodeEncodeError):
        return False
    return True


class OperationsBase:
    """An open :class:`Memory` and the ``caller`` the operations act as, with their checks."""

    def __init__(self, mem: Memory, caller: Caller) -> None:
        self.mem = mem
        self.caller = caller

    @property
    def _reader(self) -> dict[str, Any]:
        return {"reader": self.caller.reader, "reader_teams": self.caller.teams}

    def _writer(self) -> str:
        if self.caller.agent is None:
            raise ValidationError(
                "agent_name", "this needs an agent to act as (writes are recorded as it)"
            )
        return self.caller.agent

    def _check_owner(self, kind: str, key: str, owner: str) -> None:
        if self.caller.change_all or (owner and owner == self.caller.agent):
            return
        raise PermissionDeniedError(
            f"{kind} {key!r} belongs to {owner or 'no agent'}; only its owner may change it"
        )

    def _require_admin(self, what: str) -> None:
        if not self.caller.admin:
            raise PermissionDeniedError(f"{what} needs an admin key")

    def _check_protected_writer(self, categories: Sequence[str], field: str) -> None:
        """Only admins and ``[protection] writers`` may write never-forget items: nobody but
        an admin purge can remove one, so any agent could otherwise fill the store for good."""
        if not categories or self.caller.admin:
            return
        if self.caller.agent in self.mem.config.protection.writers:
            return
        raise PermissionDeniedError(
            f"{field}: the item would be never-forget ({', '.join(categories)}); agent "
            f"{self.caller.agent!r} may not write protected items ([protection] writers)"
        )

    def _check_backdate(self, timestamp: Any, field: str) -> None:
        """Agents that are not admins may date an episode at most
        ``protection.agent_backdate_days`` into the past (the future is refused for all)."""
        if timestamp is None:
            return
        moment = check_datetime(field, timestamp)
        if moment > self.mem.clock.now() + FUTURE_SKEW:
            raise ValidationError(
                field,
                f"{moment.isoformat()} is more than {FUTURE_SKEW.total_seconds() / 60:g} "
                "minutes after the server's clock",
            )
        if self.caller.admin:
            return
        days = self.mem.config.protection.agent_backdate_days
        if moment < self.mem.clock.now() - timedelta(days=days):
            raise ValidationError(
                field, f"agents may date episodes at most {days:g} days into the past"
            )

    def _check_episode_writer(self, fields: Mapping[str, Any], event_type: Any, where: str) -> None:
        tags = fields.get("tags") or ()
        context = fields.get("context") or {}
        if not isinstance(event_type, str) or not isinstance(context, Mapping):
            return  # the store names the bad field
        if isinstance(tags, str) or not isinstance(tags, Sequence):
            return
        categories = self.mem.never_forget.episode_categories(
            event_type, [t for t in tags if isinstance(t, str)], context
        )
        self._check_protected_writer(categories, where)

    def _check_document_writer(
        self, collection: str, metadatas: Sequence[Mapping[str, Any] | None] | None, count: int
    ) -> None:
        if not isinstance(collection, str):
            return
        listed = list(metadatas) if isinstance(metadatas, Sequence) else []
        for i in range(count):
            metadata = listed[i] if i < len(listed) else None
            if metadata is not None and not isinstance(metadata, Mapping):
                continue  # the store names the bad field
            categories = self.mem.never_forget.document_categories(collection, metadata or {})
            self._check_protected_writer(categories, f"metadatas[{i}]")

    def _check_document_owners(self, collection: str, ids: Sequence[Any]) -> None:
        """Refuse to overwrite documents the caller may not change. One it may read answers
        403 naming its owner (the caller can read that); one it may not read answers 409
        "taken" without an owner, the same whoever holds it. An agent's chosen ids are its
        own (``agent:id``), so only an admin, the operator or an import can have put an
        item there that the agent may not read: between agents, this never tells of one."""
        self.mem.semantic.count(collection)  # validates the collection name
        registry = self.mem.semantic.registry
        for doc_id in ids:
            if not isinstance(doc_id, str):
                continue  # the store names the bad id
            held = registry.holder(collection, doc_id, self.caller.reader, self.caller.teams)
            if held is None or self.caller.change_all or held[0] == self.caller.agent:
                continue
            if not held[1]:
                raise AlreadyExistsError(
                    f"document id {doc_id!r} is taken in {collection!r}; choose another id"
                )
            self._check_owner("document", f"{collection}/{doc_id}", held[0])

    # -- ids a client chooses -------------------------------------------------------------

    @property
    def _namespaced(self) -> bool:
        """Whether the ids and names this caller chooses are its own, stored qualified by
        its name (an agent without admin rights: a client of a shared front end)."""
        return self.caller.agent is not None and not self.caller.admin

    def _chosen_id(self, field: str, value: Any) -> Any:
        """The stored id of an id (or procedure name) the client chose: refused in a prefix
        omoide generates ids with; for a namespaced caller, ``agent:value``
        (:func:`~omoide.core.ids.qualified_id`); as given for admins and the operator."""
        check_client_id(field, value)
        if not self._namespaced or self.caller.agent is None:
            return value
        return qualified_id(field, self.caller.agent, value)

    def _own_form(self, given: str) -> str | None:
        """The caller's own stored id for a name it gives in a read, when that differs from
        the name (None: not namespaced, already qualified by the caller, or unqualifiable)."""
        if not self._namespaced or self.caller.agent is None:
            return None
        try:
            own = qualified_id("id", self.caller.agent, given)
        except ValidationError:
            return None
        return None if own == given else str(own)

    def _full_id(self, field: str, given: str, starting: Callable[[str], list[str]]) -> str:
        """The id that ``given`` stands for, the caller's own first: its own stored id
        (``agent:given``, for a namespaced caller), then ``given`` itself, when the caller
        may read an item with it; else the one id that starts with the own form, then with
        ``given`` (git-style), among the items the caller may read (``starting``, which
        lists them in order, so an id it may read comes first in its own list). An
        ambiguous prefix is refused with the candidates; anything else is returned
        unchanged, for the layer to answer (not found, bad name) — an item the caller may
        not read never changes the answer."""
        if not plain_name(given, 1):
            return given
        own = self._own_form(given)
        forms = [form for form in (own, given) if form is not None]
        for form in forms:
            if starting(form)[:1] == [form]:
                return form
        if len(given) < MIN_PREFIX:
            return given
        for form in forms:
            ids = starting(form)
            if len(ids) == 1:
                return ids[0]
            if ids:
                shown = ", ".join(ids[:10]) + (", …" if len(ids) > 10 else "")
                raise ValidationError(field, f"{given!r} is ambiguous; it starts: {shown}")
        return given

    def _episode_id(self, given: str) -> str:
        rows = self.mem.episodic.rows
        return self._full_id(
            "episode_id",
            given,
            lambda p: rows.ids_starting(p, self.caller.reader, self.caller.teams),
        )

    def _document_id(self, given: str, collection: str | None, field: str = "doc_id") -> str:
        registry = self.mem.semantic.registry
        if collection is not None and not plain_name(collection, 1):
            return given
        return self._full_id(
            field,
            given,
            lambda p: registry.ids_starting(p, collection, self.caller.reader, self.caller.teams),
        )

    def _procedure_name(self, given: str) -> str:
        """The procedure ``given`` names: the caller's own ``agent:given`` when it may read
        that, else ``given`` as it is (no prefixes: names are chosen, not generated)."""
        own = self._own_form(given) if isinstance(given, str) else None
        if own is not None:
            try:
                self.mem.procedural.get(own, **self._reader)
            except NotFoundError:
                return given
            return own
        return given

    @staticmethod
    def _refuse_agent_field(fields: Mapping[str, Any], name: str) -> None:
        if "agent_name" in fields:
            raise ValidationError(name, "writes are recorded as the calling agent; drop it")
