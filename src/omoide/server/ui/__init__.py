"""The web dashboard of ``omoide serve``, under ``/ui``: see a fleet's memory in a browser.

Server-rendered pages (no build step, no script, no asset from outside the machine; charts
are inline SVG) over the same service operations as the REST API, signed in with the same
API keys: an agent's key sees what that agent may read, an admin key everything. On by
default; ``server.dashboard = false`` in the configuration or ``omoide serve
--no-dashboard`` turns it off.
"""

from __future__ import annotations

from fastapi import FastAPI

from omoide.memory import Memory

__all__ = ["mount_dashboard"]


def mount_dashboard(app: FastAPI, mem: Memory, *, enabled: bool = True) -> bool:
    """Add the dashboard's routes to ``app`` unless it is turned off (by ``enabled`` or
    ``server.dashboard``); return whether it was mounted."""
    if not (enabled and mem.config.server.dashboard):
        return False
    from omoide.server.ui.app import dashboard_router

    app.include_router(dashboard_router(mem))
    return True
