"""What a server runner's primitives on an asyncio loop share, for the asyncio driver and the
ASGI app when its host runs asyncio: the loop's own clock, timers and tasks, and a
:class:`HandlerPool` for plain ``def`` handlers, made on first use (cheaper per call than
``run_in_executor`` or anyio's ``to_thread``)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, Final

from .handler_pool import HandlerPool

__all__ = ["LoopParts"]

_SWEEP: Final = 64  # ended tasks kept at most (or as many as run, when more run)


class LoopParts:
    """The loop's clock, timers and tasks, and the handler pool of ``threads`` workers."""

    def __init__(self, loop: asyncio.AbstractEventLoop, threads: int) -> None:
        self._loop = loop
        self.threads = threads
        # Strong references to the tasks spawned, until they end: the ended ones are swept
        # out when the set doubles, not by a done callback each (one more turn of a handle
        # per task).
        self._tasks: set[asyncio.Task[None]] = set()
        self._sweep_at = _SWEEP
        self._handlers: HandlerPool | None = None

    @property
    def handler_pool(self) -> HandlerPool:
        """Where the runner runs plain ``def`` handlers."""
        if self._handlers is None:
            self._handlers = HandlerPool(self.threads, self._loop.call_soon_threadsafe)
        return self._handlers

    def clock(self) -> float:
        return self._loop.time()

    def call_at(self, when: float, callback: Callable[[], None]) -> asyncio.TimerHandle:
        return self._loop.call_at(when, callback)

    def spawn(self, coro: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        task = self._loop.create_task(coro)
        tasks = self._tasks
        tasks.add(task)
        if len(tasks) > self._sweep_at:
            self._tasks = tasks = {t for t in tasks if not t.done()}
            self._sweep_at = max(_SWEEP, 2 * len(tasks))
        return task

    def _stop_handlers(self) -> None:
        """Stop the handler pool (threads still running a handler finish on their own)."""
        if self._handlers is not None:
            self._handlers.close()
