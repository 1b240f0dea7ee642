"""What every anyio driver shares: the clock, one timer, waiters, the task group, flushing.

``AnyioDriver`` implements the façade's primitives on anyio (asyncio or trio); a
subclass gives :meth:`AnyioDriver._pump` (moving the core's output to its I/O). Every
task runs shielded in one task group that the driver enters when it starts and exits
when it closes: a cancelled body must not stop the readers and the timer its shutdown
needs, and a body's exception must not come out wrapped in an ExceptionGroup.
"""

from __future__ import annotations

import contextlib
import logging
import math
from collections.abc import Awaitable, Callable
from functools import partial

import anyio
import msgspec
from anyio.abc import TaskGroup

from mcp_sansio.errors import McpSansioError
from mcp_sansio.events import RequestId
from mcp_sansio.front import SessionFront
from mcp_sansio_base._async.client import AsyncClient
from mcp_sansio_base._async.handlers import Handlers, ProgressCallback
from mcp_sansio_base.flushing import Flusher

__all__ = ["AnyioDriver", "Waiter"]

log = logging.getLogger("mcp_sansio.anyio")


class Waiter:
    """A one-shot slot for the answer one caller awaits (anyio has no Future)."""

    __slots__ = ("_error", "_event", "_result")

    def __init__(self) -> None:
        self._event = anyio.Event()
        self._result: msgspec.Struct | None = None
        self._error: BaseException | None = None

    def done(self) -> bool:
        return self._event.is_set()

    def set_result(self, result: msgspec.Struct, /) -> None:
        self._result = result
        self._event.set()

    def set_exception(self, exc: BaseException, /) -> None:
        self._error = exc
        self._event.set()

    async def wait(self) -> msgspec.Struct:
        await self._event.wait()
        if self._error is not None:
            raise self._error
        assert self._result is not None  # set before the event
        return self._result


class AnyioDriver(AsyncClient):
    """The façade's primitives (clock, waiters, tasks, flushing, one timer) on anyio.

    A subclass calls :meth:`_enter` before its first task and :meth:`_exit` once its
    shutdown is complete, from the task that opened it.
    """

    def __init__(self, core: SessionFront, handlers: Handlers) -> None:
        super().__init__(core, handlers)
        self._tg: TaskGroup | None = None
        self._task_scopes: set[anyio.CancelScope] = set()
        self._stopping = False
        self._flusher = Flusher(self._pump, lambda fn: self._start_task(partial(_call, fn)))
        self._timer_scope: anyio.CancelScope | None = None
        self._timer_at: float | None = None

    # ----------------------------------------------------------- lifecycle

    async def _enter(self) -> None:
        """Enter the task group and start the timer."""
        tg = anyio.create_task_group()
        await tg.__aenter__()
        self._tg = tg
        self._start_task(self._run_timer)

    async def _exit(self) -> None:
        """Cancel every task and leave the task group."""
        tg = self._tg
        if tg is None:
            return
        self._stopping = True
        for scope in self._task_scopes:
            scope.cancel()
        try:
            await tg.__aexit__(None, None, None)
        finally:
            self._tg = None

    # ------------------------------------------------------- AsyncClient API

    def _now(self) -> float:
        return anyio.current_time()

    async def _wait(
        self, request_id: RequestId, on_progress: ProgressCallback | None = None
    ) -> msgspec.Struct:
        waiter = Waiter()
        self._waiters[request_id] = waiter
        if on_progress is not None:
            self._progress[request_id] = on_progress
        self._flush()
        try:
            return await waiter.wait()
        finally:
            if not waiter.done():  # the caller was cancelled: so is the request
                self._waiters.pop(request_id, None)
                self._progress.pop(request_id, None)
                # Already finished or the connection is gone: then there is nothing to cancel.
                with contextlib.suppress(McpSansioError):
                    self._core.cancel(request_id, now=anyio.current_time(), reason="cancelled by the caller")
                self._pump()

    def _spawn(self, fn: Callable[[], Awaitable[None]]) -> None:
        self._start_task(partial(_logged, fn))

    def _flush(self) -> None:
        self._flusher.flush(len(self._waiters))

    def _pump(self) -> None:
        raise NotImplementedError

    # ---------------------------------------------------------------- tasks

    def _arm(self, deadline: float | None) -> None:
        """Keep the timer at or before the core's next deadline (waking early is harmless)."""
        if deadline is not None and (self._timer_at is None or deadline < self._timer_at):
            self._timer_at = deadline
            if self._timer_scope is not None:
                self._timer_scope.deadline = deadline

    def _start_task(self, fn: Callable[[], Awaitable[None]]) -> None:
        """Run ``fn`` in the task group, shielded: only :meth:`_exit` stops it."""
        if self._tg is not None and not self._stopping:
            self._tg.start_soon(self._shielded, fn)

    async def _shielded(self, fn: Callable[[], Awaitable[None]]) -> None:
        if self._stopping:  # started too late: _exit() already stopped the others
            return
        with anyio.CancelScope(shield=True) as scope:
            self._task_scopes.add(scope)
            try:
                await fn()
            finally:
                self._task_scopes.discard(scope)

    async def _run_timer(self) -> None:
        """The one timer: sleep until the armed deadline, then let the core fire it."""
        while True:
            at = self._timer_at
            with anyio.CancelScope(deadline=math.inf if at is None else at) as scope:
                self._timer_scope = scope
                await anyio.sleep_forever()
            self._timer_scope = None
            at, self._timer_at = self._timer_at, None
            now = anyio.current_time()
            self._core.handle_timeout(now if at is None else max(at, now))
            self._pump()


async def _call(fn: Callable[[], None]) -> None:
    """``fn`` as a task (the flusher's next turn: a task runs after those queued)."""
    fn()


async def _logged(fn: Callable[[], Awaitable[None]]) -> None:
    """Run a handler task; an application bug is logged, never fatal to the connection."""
    try:
        await fn()
    except Exception:
        log.exception("a handler of the MCP client raised")
