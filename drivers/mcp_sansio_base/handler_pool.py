"""A bounded pool of worker threads for plain ``def`` handlers, cheaper per call than an executor.

``loop.run_in_executor`` + an awaiting task costs, per call, a ``concurrent.futures.Future``,
an asyncio future chained to it, a task, and four turns of the loop (the task starts, the
executor's future is copied into the loop's, the task wakes, the task ends). A
:class:`HandlerPool` takes a job on one ``SimpleQueue`` and gives its outcome back with one
``call_soon_threadsafe``: the loop runs the completion callback on its next turn, and no task
exists for the call.

The bound and the fairness of an executor are kept: at most ``threads`` workers; a job that
finds no idle worker starts a new one while under the bound, so a handler blocking in its
thread stalls no other client's call (until every worker is busy, when calls wait their
turn in order). Workers are daemon threads that wait on the queue; :meth:`HandlerPool.close`
ends the idle ones (those still running a handler end once it returns).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import queue
import threading
from collections.abc import Callable

__all__ = ["HandlerPool", "Job"]

Done = Callable[[object, "BaseException | None"], None]


class Job:
    """One handler call given to the pool: what :meth:`HandlerPool.submit` returns.
    :meth:`cancel` before a worker takes it means it never runs; after, its outcome is
    dropped (the thread is not interrupted)."""

    __slots__ = ("_context", "_done", "_fn", "_on_cancel", "cancelled", "finished")

    def __init__(self, fn: Callable[[], object], done: Done, on_cancel: Callable[[], None] | None) -> None:
        self._fn = fn
        self._done = done
        self._on_cancel = on_cancel
        self._context = contextvars.copy_context()  # the caller's context (a span), as a task's
        self.cancelled = False
        self.finished = False

    def cancel(self) -> bool:
        """Drop the call (on the loop's thread); ``on_cancel`` runs once, at once."""
        if self.cancelled or self.finished:
            return False
        self.cancelled = True
        if self._on_cancel is not None:
            self._on_cancel()
        return True

    def _run(self) -> tuple[object, BaseException | None]:
        try:
            return self._context.run(self._fn), None
        except BaseException as exc:  # handed to the loop, which concludes the call with it
            return None, exc

    def _complete(self, value: object, error: BaseException | None) -> None:
        """On the loop's thread: hand the outcome on unless the call was cancelled."""
        if self.cancelled:
            return
        self.finished = True
        self._done(value, error)


class HandlerPool:
    """At most ``threads`` worker threads fed by one queue; each outcome is handed to the
    loop by ``call_soon_threadsafe`` (the loop's, or any callable that runs its argument on
    the loop's thread soon)."""

    def __init__(self, threads: int, call_soon_threadsafe: Callable[[Callable[[], None]], object],
                 name: str = "mcp-handler") -> None:
        if threads < 1:
            raise ValueError("a handler pool needs at least one thread")
        self._max = threads
        self._soon = call_soon_threadsafe
        self._name = name
        self._queue: queue.SimpleQueue[Job | None] = queue.SimpleQueue()
        self._idle = threading.Semaphore(0)  # released by a worker each time it waits for a job
        self._workers: list[threading.Thread] = []
        self._closed = False

    @property
    def threads(self) -> int:
        """Worker threads started so far (never more than the bound)."""
        return len(self._workers)

    def submit(self, fn: Callable[[], object], done: Done,
               on_cancel: Callable[[], None] | None = None) -> Job:
        """Run ``fn`` in a worker; ``done(value, error)`` runs on the loop with its outcome
        unless the job was cancelled first."""
        if self._closed:
            raise RuntimeError("the handler pool is closed")
        job = Job(fn, done, on_cancel)
        self._queue.put(job)
        if not self._idle.acquire(blocking=False) and len(self._workers) < self._max:
            name = f"{self._name}_{len(self._workers)}"
            worker = threading.Thread(target=self._work, name=name, daemon=True)
            self._workers.append(worker)
            worker.start()
        return job

    def close(self) -> None:
        """No more jobs; idle workers end, busy ones after their handler (its outcome is
        still handed to the loop if the loop still runs)."""
        if self._closed:
            return
        self._closed = True
        for _ in self._workers:
            self._queue.put(None)

    def _work(self) -> None:
        get, soon = self._queue.get, self._soon
        while True:
            job = get()
            if job is None:
                return
            if not job.cancelled:
                value, error = job._run()
                with contextlib.suppress(RuntimeError):  # the loop is closed: no one waits for it
                    soon(functools.partial(job._complete, value, error))
            del job
            self._idle.release()
