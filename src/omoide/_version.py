"""The installed version of omoide, read from the package metadata (``pyproject.toml``)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

__all__ = ["__version__"]

try:
    __version__ = version("omoide")
except PackageNotFoundError:  # pragma: no cover - running from a source tree never installed
    __version__ = "0+unknown"
