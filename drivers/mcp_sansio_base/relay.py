"""Relaying the SSE streams another worker produces, through a shared event store.

A client whose stream broke may resume it (``Last-Event-ID``) at any worker; when the
request runs on another one, the core lists the stream in ``HttpServer.follows()``. A
driver keeps one relay task that passes those to the store's blocking ``follow`` off its
loop (a worker thread) and hands what it returns to ``HttpServer.receive_relayed`` on
the loop: :func:`relay_anyio` for anyio (asyncio and trio, and the ASGI app),
:func:`relay_asyncio` for asyncio, :class:`RelayThread` for the blocking driver.

The same loop carries the answers and cancellations other workers pass (through a shared
task store) to the tasks running here: while ``HttpServer.runs_tasks()`` it also takes
``TaskStore.task_messages`` (waiting for them instead of idling when no stream is
followed) and hands them to ``HttpServer.receive_task_messages``.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Final

import anyio
import anyio.to_thread

from mcp_sansio.server.http import HttpServer
from mcp_sansio.server.stores import Follow, Relayed, TaskMessage

from .server import ServerRunner

__all__ = ["IDLE_POLL", "RelayThread", "relay_anyio", "relay_asyncio"]

IDLE_POLL: Final = 0.05
"""Seconds between looks at ``follows()`` while nothing is followed."""
FOLLOW_WAIT: Final = 0.25
"""The longest one ``follow`` waits (a stream resumed meanwhile joins the next one)."""


def _deliver(server: HttpServer, runner: ServerRunner, relayed: list[Relayed], now: float) -> None:
    if relayed:
        server.receive_relayed(relayed, now)
        runner.pump()


def _deliver_tasks(server: HttpServer, runner: ServerRunner, messages: list[TaskMessage], now: float) -> None:
    if messages:
        server.receive_task_messages(messages, now)
        runner.pump()


def _task_messages(server: HttpServer, wait: float) -> list[TaskMessage]:
    """The task messages for this worker (blocking, off the loop; none without a task store)."""
    store = server.modern.task_store
    return [] if store is None else store.task_messages(wait)


async def relay_anyio(server: HttpServer, runner: ServerRunner) -> None:
    """Relay followed streams and task messages until cancelled (anyio: asyncio or trio)."""
    store = server.event_store
    if not store.shared:
        return
    while True:
        wants = server.follows()  # none: the call only renews this worker's heartbeat
        relayed = await anyio.to_thread.run_sync(store.follow, wants, FOLLOW_WAIT, abandon_on_cancel=True)
        _deliver(server, runner, relayed, anyio.current_time())
        if server.runs_tasks():
            wait = 0.0 if wants else FOLLOW_WAIT
            messages = await anyio.to_thread.run_sync(_task_messages, server, wait, abandon_on_cancel=True)
            _deliver_tasks(server, runner, messages, anyio.current_time())
        elif not wants:
            await anyio.sleep(IDLE_POLL)


async def relay_asyncio(server: HttpServer, runner: ServerRunner) -> None:
    """Relay followed streams and task messages until cancelled (asyncio)."""
    store = server.event_store
    if not store.shared:
        return
    loop = asyncio.get_running_loop()
    while True:
        wants = server.follows()  # none: the call only renews this worker's heartbeat
        relayed = await loop.run_in_executor(None, store.follow, wants, FOLLOW_WAIT)
        _deliver(server, runner, relayed, loop.time())
        if server.runs_tasks():
            wait = 0.0 if wants else FOLLOW_WAIT
            messages = await loop.run_in_executor(None, _task_messages, server, wait)
            _deliver_tasks(server, runner, messages, loop.time())
        elif not wants:
            await asyncio.sleep(IDLE_POLL)


class RelayThread:
    """The blocking driver's relay: a daemon thread calls ``follow`` for the streams the
    loop last published (:meth:`publish`, on the loop's thread after each pump) and hands
    the results back through ``wake`` (which makes the loop call :meth:`deliver`)."""

    def __init__(self, server: HttpServer, runner: ServerRunner, wake: Callable[[], None]) -> None:
        self._server = server
        self._runner = runner
        self._wake = wake
        self._wants: list[Follow] = []
        self._tasks = False
        self._results: list[list[Relayed]] = []
        self._messages: list[TaskMessage] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if server.event_store.shared:
            self._thread = threading.Thread(target=self._run, name="mcp-sansio-relay", daemon=True)
            self._thread.start()

    def publish(self) -> None:
        """Take the server's current ``follows()`` (the loop's thread)."""
        if self._thread is not None:
            self._wants = self._server.follows()
            self._tasks = self._server.runs_tasks()

    def deliver(self, now: float) -> None:
        """Hand what the thread relayed to the server (the loop's thread)."""
        with self._lock:
            results, self._results = self._results, []
            messages, self._messages = self._messages, []
        for relayed in results:
            _deliver(self._server, self._runner, relayed, now)
        _deliver_tasks(self._server, self._runner, messages, now)

    def close(self) -> None:
        """Stop the thread (it ends within ``FOLLOW_WAIT``)."""
        self._stop.set()

    def _run(self) -> None:
        store = self._server.event_store
        while not self._stop.is_set():
            wants = self._wants  # none: the call only renews this worker's heartbeat
            relayed = store.follow(wants, FOLLOW_WAIT)
            if relayed:
                with self._lock:
                    self._results.append(relayed)
                self._wake()
            if self._tasks:
                messages = _task_messages(self._server, 0.0 if wants else FOLLOW_WAIT)
                if messages:
                    with self._lock:
                        self._messages += messages
                    self._wake()
            elif not wants:
                self._stop.wait(IDLE_POLL)
