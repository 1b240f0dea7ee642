"""The server runner's primitives on anyio (asyncio or trio), for the anyio driver and ASGI.

anyio has no futures and no ``call_at``: a future is an event with a value, a timer a
task sleeping until its time; every task lives in the task group the server runs in.
Plain ``def`` handlers run in a :class:`HandlerPool` whose outcomes come back through the
running loop's own thread-safe callback (asyncio's ``call_soon_threadsafe``, trio's
token's ``run_sync_soon``): ``anyio.to_thread`` cost a task, a limiter round trip and a
blocking portal per call, three times the asyncio driver's cost over stdio.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
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
    most ``threads`` worker threads (a :class:`HandlerPool`, made on first use)."""

    def __init__(self, group: anyio.abc.TaskGroup, write: Callable[[], None],
                 threads: int | None = None) -> None:
        self._group = group
        self.write = write
        self.running = 0
        self._idle = anyio.Event()
        self._idle.set()
        self.threads = DEFAULT_HANDLER_THREADS if threads is None else threads
        self._token = anyio.lowlevel.current_token()
        self._soon = _soon_threadsafe()
        self._pool: HandlerPool | None = None

    @property
    def handler_pool(self) -> HandlerPool:
        """Where the runner runs plain ``def`` handlers."""
        if self._pool is None:
            self._pool = HandlerPool(self.threads, self._soon)
        return self._pool

    def stop_handlers(self) -> None:
        """Stop the handler pool (threads still running a handler finish on their own)."""
        if self._pool is not None:
            self._pool.close()

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


def _soon_threadsafe() -> Callable[[Callable[[], None]], object]:
    """The running loop's way to run a callback on its thread soon, from another thread,
    without waiting (it raises ``RuntimeError`` once the loop is gone, as the pool expects).
    On asyncio the callback runs in a context that names the library for anyio (``sniffio``),
    which otherwise finds it by the current task, and a callback has none."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # not asyncio: trio, anyio's other backend (its callbacks know it)
        import trio  # only under trio, which the asyncio backend never loads

        return trio.lowlevel.current_trio_token().run_sync_soon
    try:
        import sniffio
    except ImportError:  # without it, anyio finds asyncio by its running loop, in a callback too
        return loop.call_soon_threadsafe
    context = contextvars.copy_context()
    context.run(sniffio.current_async_library_cvar.set, "asyncio")
    return functools.partial(loop.call_soon_threadsafe, context=context)
