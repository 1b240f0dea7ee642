"""The server runner's primitives on anyio (asyncio or trio), for the anyio driver and ASGI.

anyio has no futures and no ``call_at``: a future is an event with a value, a timer a
task sleeping until its time; every task lives in the task group the server runs in.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import anyio
import anyio.abc
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
import msgspec

from .handler_pool import HandlerPool
from .server import DEFAULT_HANDLER_THREADS, Cancellable, FutureLike

__all__ = ["AnyioFuture", "AnyioPrimitives"]

T = TypeVar("T")


class AnyioFuture:
    """A one-shot result on anyio."""

    def __init__(self) -> None:
        self._event = anyio.Event()
        self._value: msgspec.Struct | None = None
        self._error: BaseException | None = None

    def set_result(self, value: msgspec.Struct) -> None:
        self._value = value
        self._event.set()

    def set_exception(self, error: BaseException) -> None:
        self._error = error
        self._event.set()

    def done(self) -> bool:
        return self._event.is_set()

    async def _wait(self) -> msgspec.Struct:
        await self._event.wait()
        if self._error is not None:
            raise self._error
        assert self._value is not None  # set_result gave one
        return self._value

    def __await__(self) -> Any:
        return self._wait().__await__()


class AnyioPrimitives:
    """Tasks in ``group``; ``write`` is the transport's flush; plain handlers run in at
    most ``threads`` worker threads (``anyio.to_thread``)."""

    def __init__(self, group: anyio.abc.TaskGroup, write: Callable[[], None],
                 threads: int | None = None) -> None:
        self._group = group
        self.write = write
        self.running = 0
        self._idle = anyio.Event()
        self._idle.set()
        self.threads = DEFAULT_HANDLER_THREADS if threads is None else threads
        self._limiter = anyio.CapacityLimiter(max(self.threads, 1))
        self._token = anyio.lowlevel.current_token()

    @property
    def handler_pool(self) -> HandlerPool | None:
        """None: plain ``def`` handlers run through :meth:`to_thread`."""
        return None

    async def to_thread(self, fn: Callable[[], object]) -> object:
        return await anyio.to_thread.run_sync(fn, limiter=self._limiter, abandon_on_cancel=True)

    def call_soon_threadsafe(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` on the loop (from another thread: waits until it ran; raises
        ``RuntimeError`` once the loop is gone)."""
        anyio.from_thread.run_sync(callback, token=self._token)

    def spawn(self, coro: Coroutine[Any, Any, None]) -> Cancellable:
        scope = anyio.CancelScope()
        self.running += 1
        self._idle = anyio.Event() if self.running == 1 else self._idle

        async def run() -> None:
            try:
                with scope:
                    await coro
            finally:
                self.running -= 1
                if not self.running:
                    self._idle.set()

        self._group.start_soon(run)
        return scope

    def future(self) -> FutureLike[msgspec.Struct]:
        return AnyioFuture()

    def clock(self) -> float:
        return anyio.current_time()

    async def run_blocking(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` in a worker thread (abandoned, not waited for, if cancelled)."""
        return await anyio.to_thread.run_sync(fn, abandon_on_cancel=True)

    def call_at(self, when: float, callback: Callable[[], None]) -> Cancellable:
        scope = anyio.CancelScope()

        async def sleep() -> None:
            with scope:
                await anyio.sleep_until(when)
                callback()

        self._group.start_soon(sleep)
        return scope

    async def drain(self) -> None:
        """Wait until no handler spawned here runs (cancelled ones end at their next await)."""
        await self._idle.wait()
