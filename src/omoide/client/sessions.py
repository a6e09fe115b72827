"""The working memory of one session on a server, blocking (:class:`RemoteWorkingMemory`,
from ``Client.working``) and async (:class:`AsyncWorkingMemory`, from ``AsyncClient.working``).

Every read asks the server, so it shows what other processes changed too; on the async side
the reads are awaited (``await wm.messages``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, TypeVar

import omoide.client.calls as calls
from omoide.client.decode import decode
from omoide.core.models import Message, Pin
from omoide.errors import ValidationError
from omoide.layers.working import Eviction

__all__ = ["AsyncRunner", "AsyncWorkingMemory", "RemoteWorkingMemory", "Runner"]

T = TypeVar("T")


class Runner(Protocol):
    """What sends a call and returns its decoded answer (``Client``)."""

    def _run(self, call: calls.Call[T]) -> T: ...


class AsyncRunner(Protocol):
    """What sends a call and awaits its decoded answer (``AsyncClient``)."""

    async def _run(self, call: calls.Call[T]) -> T: ...


class RemoteWorkingMemory:
    """One session's working memory on the server (see :class:`WorkingMemory`); every read
    asks the server, so it shows what other processes changed too."""

    def __init__(self, client: Runner, agent_name: str, session_id: str) -> None:
        self._client = client
        self.agent_name = agent_name
        self.session_id = session_id

    def _view(self) -> dict[str, Any]:
        return self._client._run(calls.session(self.session_id))

    @property
    def max_tokens(self) -> int:
        return int(self._view()["max_tokens"])

    @property
    def budgets(self) -> dict[str, int]:
        return dict(self._view()["budgets"])

    @property
    def messages(self) -> list[Message]:
        return [decode(Message, m) for m in self._view()["messages"]]

    @property
    def pins(self) -> list[Pin]:
        return [decode(Pin, p) for p in self._view()["pins"]]

    def get_slot(self, name: str) -> str | None:
        slots = self._view()["slots"]
        if name not in slots:
            raise ValidationError("slot", f"{name!r} is not a text slot ({', '.join(slots)})")
        value = slots[name]
        return None if value is None else str(value)

    def slot_tokens(self) -> dict[str, int]:
        return dict(self._view()["slot_tokens"])

    def total_tokens(self) -> int:
        return int(self._view()["total_tokens"])

    def build_context(self) -> str:
        """The slots rendered for a prompt."""
        return str(self._view()["context"])

    def add_message(
        self,
        message: str | Mapping[str, Any] | Message,
        *,
        role: str | None = None,
        importance: float | None = None,
        pinned: bool | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> list[Eviction]:
        """Append a message; return what it evicted (important ones became episodes)."""
        fields = calls.message_fields(message, role, importance, pinned, metadata)
        return self._client._run(calls.add_message(self.session_id, fields))

    def set_slot(self, name: str, value: str | None) -> None:
        self._client._run(calls.set_slot(self.session_id, name, value))

    def pin(self, key: str, content: str, reason: str = "") -> Pin:
        return self._client._run(calls.pin(self.session_id, key, content, reason))

    def unpin(self, key: str) -> Pin:
        return self._client._run(calls.unpin(self.session_id, key))

    def clear_messages(self) -> list[Eviction]:
        return self._client._run(calls.clear_messages(self.session_id))

    def __repr__(self) -> str:
        return f"RemoteWorkingMemory({self.agent_name!r}, {self.session_id!r})"


class AsyncWorkingMemory:
    """One session's working memory on the server (see :class:`WorkingMemory`); every read
    asks the server, so it shows what other processes changed too."""

    def __init__(self, client: AsyncRunner, agent_name: str, session_id: str) -> None:
        self._client = client
        self.agent_name = agent_name
        self.session_id = session_id

    async def _view(self) -> dict[str, Any]:
        return await self._client._run(calls.session(self.session_id))

    @property
    async def max_tokens(self) -> int:
        return int((await self._view())["max_tokens"])

    @property
    async def budgets(self) -> dict[str, int]:
        return dict((await self._view())["budgets"])

    @property
    async def messages(self) -> list[Message]:
        return [decode(Message, m) for m in (await self._view())["messages"]]

    @property
    async def pins(self) -> list[Pin]:
        return [decode(Pin, p) for p in (await self._view())["pins"]]

    async def get_slot(self, name: str) -> str | None:
        slots = (await self._view())["slots"]
        if name not in slots:
            raise ValidationError("slot", f"{name!r} is not a text slot ({', '.join(slots)})")
        value = slots[name]
        return None if value is None else str(value)

    async def slot_tokens(self) -> dict[str, int]:
        return dict((await self._view())["slot_tokens"])

    async def total_tokens(self) -> int:
        return int((await self._view())["total_tokens"])

    async def build_context(self) -> str:
        """The slots rendered for a prompt."""
        return str((await self._view())["context"])

    async def add_message(
        self,
        message: str | Mapping[str, Any] | Message,
        *,
        role: str | None = None,
        importance: float | None = None,
        pinned: bool | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> list[Eviction]:
        """Append a message; return what it evicted (important ones became episodes)."""
        fields = calls.message_fields(message, role, importance, pinned, metadata)
        return await self._client._run(calls.add_message(self.session_id, fields))

    async def set_slot(self, name: str, value: str | None) -> None:
        await self._client._run(calls.set_slot(self.session_id, name, value))

    async def pin(self, key: str, content: str, reason: str = "") -> Pin:
        return await self._client._run(calls.pin(self.session_id, key, content, reason))

    async def unpin(self, key: str) -> Pin:
        return await self._client._run(calls.unpin(self.session_id, key))

    async def clear_messages(self) -> list[Eviction]:
        return await self._client._run(calls.clear_messages(self.session_id))

    def __repr__(self) -> str:
        return f"AsyncWorkingMemory({self.agent_name!r}, {self.session_id!r})"
