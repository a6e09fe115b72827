"""The dashboard's pages, one module per section; :data:`ROUTES` lists them for the router."""

from __future__ import annotations

from collections.abc import Callable

from omoide.server.ui.pages.episodes import episode_detail, episodes
from omoide.server.ui.pages.forgetting import dry_run, forgetting, restore
from omoide.server.ui.pages.knowledge import collection_page, document_page, knowledge
from omoide.server.ui.pages.overview import overview
from omoide.server.ui.pages.procedures import procedure_page, procedures, rollback
from omoide.server.ui.pages.recall import ask, playground, recall_record
from omoide.server.ui.view import Page, View

__all__ = ["ROUTES"]

#: (method, path under /ui, handler). POST handlers change state: they need the CSRF token.
ROUTES: tuple[tuple[str, str, Callable[[View], Page]], ...] = (
    ("GET", "", overview),
    ("GET", "/", overview),
    ("GET", "/episodes", episodes),
    ("GET", "/episodes/{episode_id}", episode_detail),
    ("GET", "/knowledge", knowledge),
    ("GET", "/knowledge/{collection}", collection_page),
    ("GET", "/knowledge/{collection}/{doc_id:path}", document_page),
    ("GET", "/procedures", procedures),
    ("GET", "/procedures/{name}", procedure_page),
    ("POST", "/procedures/{name}/rollback", rollback),
    ("GET", "/forgetting", forgetting),
    ("POST", "/forgetting/dry-run", dry_run),
    ("POST", "/forgetting/restore", restore),
    ("GET", "/recall", playground),
    ("POST", "/recall", ask),
    ("GET", "/recall/{recall_id}", recall_record),
)
