"""The operation table: each operation written once, and where each front end exposes it.

:data:`OPERATIONS` has one :class:`~omoide.service.operation.Operation` per method of
:class:`~omoide.service.protocol.Operations` (``tests/test_operation_table.py`` checks it):
its summary, its arguments' help and CLI form, its REST routes, MCP tool and CLI command.
Derived from it:

* the CLI's arguments, help and call of each command of an operation (:mod:`omoide.cli.spec`);
* the REST routes' method, path and summary (:func:`omoide.server.schemas.route`), and the
  method and path :class:`~omoide.service.remote.RemoteOperations` calls;
* the MCP tools' names and descriptions (:mod:`omoide.server.mcp_server`).

Adding an operation is its signature in the protocol, its entry here, its implementation in
:mod:`omoide.service.local` and its call in :mod:`omoide.service.remote`.
"""

from __future__ import annotations

from omoide.errors import NotFoundError
from omoide.service._layer_table import LAYER_OPERATIONS
from omoide.service._pipeline_table import PIPELINE_OPERATIONS
from omoide.service._store_table import STORE_OPERATIONS
from omoide.service.operation import Operation

__all__ = ["OPERATIONS", "operation"]

OPERATIONS: dict[str, Operation] = {
    op.name: op for op in (*LAYER_OPERATIONS, *STORE_OPERATIONS, *PIPELINE_OPERATIONS)
}


def operation(name: str) -> Operation:
    """The table's entry of the operation ``name``."""
    try:
        return OPERATIONS[name]
    except KeyError:
        raise NotFoundError("operation", name) from None
