"""What every asyncio driver shares: the clock, one timer, waiters, tasks, flushing.

``LoopDriver`` implements the façade's primitives on an asyncio loop; a subclass gives
:meth:`LoopDriver._pump` (moving the core's output to its I/O).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

import msgspec

from mcp_sansio.errors import McpSansioError
from mcp_sansio.events import InitializeCompleted, RequestId
from mcp_sansio.front import SessionFront
from mcp_sansio_base._async.client import AsyncClient
from mcp_sansio_base._async.connect import Connect
from mcp_sansio_base._async.handlers import Handlers, ProgressCallback
from mcp_sansio_base.flushing import Flusher

__all__ = ["Connect", "LoopDriver"]


class LoopDriver(AsyncClient):
    """The façade's primitives (clock, waiter, tasks, flushing, one timer) on asyncio."""

    def __init__(self, core: SessionFront, handlers: Handlers) -> None:
        super().__init__(core, handlers)
        self._loop = asyncio.get_running_loop()
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at: float | None = None
        self._flusher = Flusher(self._pump, self._loop.call_soon)
        self._tasks: set[asyncio.Task[None]] = set()

    def _now(self) -> float:
        return self._loop.time()

    async def _wait(
        self, request_id: RequestId, on_progress: ProgressCallback | None = None
    ) -> msgspec.Struct:
        fut: asyncio.Future[msgspec.Struct] = self._loop.create_future()
        self._waiters[request_id] = fut
        if on_progress is not None:
            self._progress[request_id] = on_progress
        self._flush()
        try:
            return await fut
        except asyncio.CancelledError:
            # Cancelling the task cancels the future it awaits, so "done" is no test here.
            if not fut.done() or fut.cancelled():
                self._waiters.pop(request_id, None)
                self._progress.pop(request_id, None)
                with contextlib.suppress(McpSansioError):  # answered meanwhile, or gone
                    self._core.cancel(request_id, now=self._loop.time(), reason="cancelled by the caller")
                self._pump()
            raise

    async def _handshake(self, begin: Callable[[float], None]) -> None:
        """Start the core's handshake with ``begin(now)`` and wait until it completes;
        close the connection if it fails (or the caller is cancelled)."""
        waiter: asyncio.Future[msgspec.Struct] = self._loop.create_future()
        self._init_waiter = waiter
        begin(self._loop.time())
        self._pump()
        try:
            event = await waiter
        except BaseException:
            await self.aclose()
            raise
        assert isinstance(event, InitializeCompleted)

    def _spawn(self, fn: Callable[[], Awaitable[None]]) -> None:
        task = self._loop.create_task(_run(fn))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _flush(self) -> None:
        self._flusher.flush(len(self._waiters))

    def _pump(self) -> None:
        raise NotImplementedError

    async def aclose(self) -> None:
        raise NotImplementedError

    def _arm(self, deadline: float | None) -> None:
        """Keep one timer at or before the core's next deadline (waking early is harmless)."""
        if deadline is not None and (self._timer_at is None or deadline < self._timer_at):
            if self._timer is not None:
                self._timer.cancel()
            self._timer_at = deadline
            self._timer = self._loop.call_at(deadline, self._on_timer)

    def _on_timer(self) -> None:
        at = self._timer_at
        self._timer = self._timer_at = None
        self._core.handle_timeout(max(at or 0.0, self._loop.time()))
        self._pump()

    def _stop_tasks(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


async def _run(fn: Callable[[], Awaitable[None]]) -> None:
    await fn()
