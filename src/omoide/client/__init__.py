"""Memory from an application: :class:`Client` and :class:`AsyncClient` for a running
``omoide serve``, :class:`AsyncMemory` for the embedded library on an event loop.

All three have the surface of :class:`~omoide.memory.Memory` and return its records.
"""

from omoide.client.aio import AsyncClient
from omoide.client.embedded import AsyncMemory
from omoide.client.sync import Client

__all__ = ["AsyncClient", "AsyncMemory", "Client"]
