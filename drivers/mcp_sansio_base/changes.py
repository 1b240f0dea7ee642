"""How the event-loop managers hand a connection attempt's outcome back: run it, then wake
every task that waits for a change (``AsyncManager._post`` / ``_settled`` on asyncio and
anyio; the blocking driver queues it for the caller's thread instead)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

__all__ = ["Changes"]


class _Event(Protocol):
    def set(self) -> None: ...
    def wait(self) -> Awaitable[object]: ...


class Changes:
    """:meth:`post` runs a change and wakes every task in :meth:`wait`; ``new_event`` makes
    the loop's event (``asyncio.Event``, ``anyio.Event``)."""

    __slots__ = ("_event", "_new_event")

    def __init__(self, new_event: Callable[[], _Event]) -> None:
        self._new_event = new_event
        self._event = new_event()

    def post(self, fn: Callable[[], None]) -> None:
        fn()
        event, self._event = self._event, self._new_event()
        event.set()

    async def wait(self) -> None:
        """Until the next :meth:`post`."""
        await self._event.wait()
