"""The server runner's primitives with no event loop at all: handlers stepped by hand.

The blocking driver (and the in-memory pair harness in ``tests/``) runs ``async def``
handlers on :class:`StepLoop`, a small cooperative scheduler: a task runs until it awaits
one of the loop's futures (the answer to a question its ``Context`` asked the client) and
goes on when that future is resolved. A handler that awaits anything else (``asyncio.sleep``,
an HTTP client) belongs on an event loop: it fails with a ``RuntimeError`` that says so,
and the runner answers its call with that error.

With ``threads`` > 0 plain ``def`` handlers run in a :class:`HandlerPool` of that many threads;
what they hand back to the loop (their value, a ``Context`` call) waits in a thread-safe
queue, and ``wake`` (set by the driver) interrupts its wait for I/O.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable, Coroutine, Generator
from typing import Any, TypeVar, cast

from .handler_pool import HandlerPool

__all__ = ["StepCancelled", "StepFuture", "StepLoop", "StepTask"]

T = TypeVar("T")


class StepCancelled(BaseException):
    """What a cancelled task sees at its next await."""


class StepFuture:
    """A one-shot result; awaiting it parks the task until it is resolved."""

    def __init__(self) -> None:
        self._done = False
        self._value: object = None
        self._error: BaseException | None = None
        self.waiters: list[StepTask] = []

    def set_result(self, value: object) -> None:
        self._done, self._value = True, value
        self._wake()

    def set_exception(self, error: BaseException) -> None:
        self._done, self._error = True, error
        self._wake()

    def done(self) -> bool:
        return self._done

    def _wake(self) -> None:
        for task in self.waiters:
            task.loop.ready.append(task)
        self.waiters.clear()

    def __await__(self) -> Generator[StepFuture, None, object]:
        while not self._done:
            yield self
        if self._error is not None:
            raise self._error
        return self._value


class StepTask:
    """A coroutine the loop steps."""

    def __init__(self, loop: StepLoop, coro: Coroutine[Any, Any, None]) -> None:
        self.loop = loop
        self.coro = coro
        self.finished = False
        self._cancel = False

    def cancel(self) -> None:
        if not self.finished:
            self._cancel = True
            self.loop.ready.append(self)

    def step(self) -> None:
        if self.finished:
            return
        try:
            if self._cancel:
                self._cancel = False
                awaited = self.coro.throw(StepCancelled())
            else:
                awaited = self.coro.send(None)
            while not isinstance(awaited, StepFuture):
                awaited = self.coro.throw(RuntimeError(
                    f"a handler awaited {awaited!r}: without an event loop (the blocking driver) a "
                    "handler may await only its Context's questions; serve it with the asyncio or "
                    "anyio driver"))
        except (StopIteration, StepCancelled):
            self.finished = True
            return
        awaited.waiters.append(self)


class StepTimer:
    """A callback due at ``when``."""

    def __init__(self, when: float, callback: Callable[[], None]) -> None:
        self.when = when
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class StepLoop:
    """The runner's five primitives, run by hand: :meth:`run_ready` steps the tasks that
    can go on, :meth:`fire_due` runs the timers that are due, :meth:`next_timer` says when
    the next one is."""

    def __init__(self, clock: Callable[[], float], write: Callable[[], None] = lambda: None, *,
                 threads: int = 0) -> None:
        self._clock = clock
        self.write = write
        self.ready: deque[StepTask] = deque()
        self.timers: list[StepTimer] = []
        self.tasks: list[StepTask] = []
        self.threads = threads
        self.wake: Callable[[], None] = lambda: None
        """Interrupts the driver's wait (called from worker threads)."""
        self._incoming: deque[Callable[[], None]] = deque()  # appends and pops are thread-safe
        self._pool: HandlerPool | None = None

    @property
    def handler_pool(self) -> HandlerPool:
        """Where plain ``def`` handlers run (made on first use): their outcomes come back
        through :meth:`call_soon_threadsafe`."""
        if self._pool is None:
            self._pool = HandlerPool(self.threads, self.call_soon_threadsafe)
        return self._pool

    def call_soon_threadsafe(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` on the loop's thread at its next :meth:`run_ready`."""
        self._incoming.append(callback)
        self.wake()

    def close(self) -> None:
        """Stop the pool (threads still running finish on their own)."""
        if self._pool is not None:
            self._pool.close()

    def spawn(self, coro: Coroutine[Any, Any, None]) -> StepTask:
        task = StepTask(self, coro)
        self.tasks = [t for t in self.tasks if not t.finished]
        self.tasks.append(task)
        self.ready.append(task)
        return task

    def future(self) -> StepFuture:
        return StepFuture()

    def clock(self) -> float:
        return self._clock()

    def run_blocking(self, fn: Callable[[], T]) -> Awaitable[T]:
        """Run ``fn`` now, inline (there is no loop to keep running); its result, resolved."""
        future = StepFuture()
        try:
            future.set_result(fn())
        except Exception as exc:  # the awaiting task sees it raised
            future.set_exception(exc)
        return cast("Awaitable[T]", future)  # awaiting it gives fn's result

    def call_at(self, when: float, callback: Callable[[], None]) -> StepTimer:
        timer = StepTimer(when, callback)
        self.timers.append(timer)
        return timer

    def run_ready(self) -> bool:
        """Step every runnable task; whether any ran."""
        ran = False
        while self._incoming or self.ready:
            while self._incoming:
                self._incoming.popleft()()
            while self.ready:
                self.ready.popleft().step()
                ran = True
        return ran

    def fire_due(self) -> bool:
        """Run the timers due at the current time; whether any ran."""
        now = self._clock()
        due = [t for t in self.timers if not t.cancelled and t.when <= now]
        self.timers = [t for t in self.timers if not t.cancelled and t.when > now]
        for timer in due:
            timer.callback()
        return bool(due)

    def next_timer(self) -> float | None:
        """When the earliest live timer is due."""
        return min((t.when for t in self.timers if not t.cancelled), default=None)

    @property
    def running(self) -> int:
        """Tasks not finished yet."""
        return sum(1 for t in self.tasks if not t.finished)
