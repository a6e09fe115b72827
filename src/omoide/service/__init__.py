"""The operation surface shared by the CLI, REST and MCP: local, remote, and export/import."""
