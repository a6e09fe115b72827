"""The operation table: each operation written once, and where each front end exposes it.

:data:`OPERATIONS` has one :class:`~omoide.service.operation.Operation` per method of
:class:`~omoide.service.protocol.Operations` (``tests/test_operation_table.py`` checks it):
its summary, its arguments' help, CLI form and bounds on the wire, its REST routes (response
model, status code, description), MCP tool (the parameters it shows a model, its reply line)
and CLI command. The entries are in :mod:`omoide.service._layer_table` (episodic, semantic,
procedural), :mod:`omoide.service._store_table` (working memory, the whole store) and
:mod:`omoide.service._pipeline_table`. Derived from the table and the protocol's signatures:

* the CLI's arguments, help and call of each command (:mod:`omoide.cli.spec`);
* the REST routes: method, path, summary, path, query and body parameters with their bounds,
  response model and status, and the generic handler (:mod:`omoide.server.routing`);
* the MCP tools: name, description, parameters and answer (:mod:`omoide.server.mcp_server`);
* :class:`~omoide.service.remote.RemoteOperations`' call of each operation
  (:func:`~omoide.service._http.remote_calls`).

Adding an operation is its signature in the protocol, its entry here and its implementation
in :mod:`omoide.service.local` (and the layer mixins); its REST route, MCP tool, remote call
and CLI command follow (``tests/test_generated_surfaces.py`` proves it on a toy surface). A
route that cannot be the generic one (the streamed export and import) names a ``custom``
handler, which the REST server and ``RemoteOperations`` write out.
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
