"""Servers over one data directory: REST (``omoide serve``) and MCP (``omoide mcp``).

Install them with ``pip install 'omoide[server]'`` (FastAPI and uvicorn) and
``pip install 'omoide[mcp]'`` (the MCP Python SDK). Import the submodules directly:
:mod:`omoide.server.rest` and :mod:`omoide.server.mcp_server`.
"""

__all__: list[str] = []
