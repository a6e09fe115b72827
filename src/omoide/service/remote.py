"""The operations of :mod:`omoide.service.local`, against a running ``omoide serve``.

A server owns its data directory, so the CLI (``--url``) and a stdio MCP server
(``omoide mcp --url``) reach it over HTTP. :class:`RemoteOperations` implements
:class:`~omoide.service.protocol.Operations` as :class:`~omoide.service.local.LocalOperations`
does; each call goes to the method and path the operation table gives it
(:mod:`omoide.service._http`). Every operation of the table is the generic call
(:func:`~omoide.service._http.remote_call`, attached by
:func:`~omoide.service._http.remote_calls`), except the two whose route the
table marks custom: the export streams JSON Lines and the import sends them. Local arguments
do not travel: ``index`` reads the path on the server's machine and does not call
``progress`` (the server reports figures at the end). The key decides the agent, and the
server's refusals come back as the same :mod:`omoide.errors` exceptions. It uses only the
standard library, so the base install can talk to a server.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from omoide.service._http import HttpOperations, remote_calls
from omoide.service.transfer import Progress

__all__ = ["RemoteOperations"]


@remote_calls
class RemoteOperations(HttpOperations):
    """The operations over HTTP, as the agent of ``key``."""

    if TYPE_CHECKING:
        # The table's operations, attached by @remote_calls as generic calls with the
        # protocol's signatures (tests/test_operations_parity.py checks them).
        def __getattr__(self, name: str) -> Any: ...

    def export_lines(
        self, *, embeddings: bool = True, progress: Progress | None = None
    ) -> Iterator[str]:
        route = self._route("export_lines")
        response = self._open(route.method, route.path, query={"embeddings": embeddings})

        def lines() -> Iterator[str]:
            total, done = 0, 0
            with response:
                for raw in response:
                    line = raw.decode("utf-8").rstrip("\r\n")
                    if not line:
                        continue
                    if total == 0 and progress is not None:
                        head = json.loads(line)
                        total = sum(head.get("counts", {}).values()) if head else 0
                    elif progress is not None:
                        done += 1
                        progress("export", min(done, total), total)
                    yield line

        return lines()

    def import_lines(
        self,
        lines: Iterable[str | bytes],
        *,
        reembed: bool = False,
        progress: Progress | None = None,
    ) -> dict[str, Any]:
        body = b"".join(
            (line if isinstance(line, bytes) else line.encode("utf-8")).rstrip(b"\r\n") + b"\n"
            for line in lines
        )
        if progress is not None:
            progress("upload", 0, 1)
        route = self._route("import_lines")
        with self._open(
            route.method,
            route.path,
            body=body,
            content_type="application/x-ndjson",
            query={"reembed": reembed},
        ) as response:
            result: dict[str, Any] = json.loads(response.read())
        if progress is not None:
            progress("upload", 1, 1)
        return result
