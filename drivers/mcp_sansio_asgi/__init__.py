"""An ``MCPServer`` as an ASGI 3 application: Streamable HTTP under uvicorn, hypercorn, granian.

``AsgiApp(app)`` gives the host server's HTTP messages to the core's
:class:`~mcp_sansio.server.http.HttpServer` through
:class:`~mcp_sansio.server.exchanges.HttpExchanges`, and runs the handlers with the
shared :class:`~mcp_sansio_base.server.ServerRunner` on anyio (so under asyncio or trio).
The handlers run in a task group the ASGI lifespan opens: the host server must run the
lifespan protocol (uvicorn, hypercorn and granian do by default).

Several workers: a stateless (2026-07-28) request needs nothing shared but ``secret``
(it seals ``requestState``; default: ``$MCP_SANSIO_SECRET``). Handshake-era sessions live
in the worker that opened them unless ``store`` (e.g. ``"redis://host:6379/0"``) or
``sessions`` and ``events`` are stores every worker reaches; with the in-memory defaults,
route a session's requests to one worker (sticky by ``Mcp-Session-Id``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, MutableMapping
from types import TracebackType
from typing import Any

import anyio
import anyio.lowlevel

from mcp_sansio.events import Event
from mcp_sansio.server import MCPServer
from mcp_sansio.server.exchanges import HttpExchanges, ResponseAborted, ResponseBody, ResponseStart
from mcp_sansio.server.http import HttpConfig, HttpServer
from mcp_sansio.server.stores import EventStore, SessionStore
from mcp_sansio_base.anyio_runtime import AnyioPrimitives
from mcp_sansio_base.asyncio_loop import LoopParts
from mcp_sansio_base.relay import relay_anyio
from mcp_sansio_base.server import ServerRunner
from mcp_sansio_base.serving import (
    SharedStore,
    open_shared,
    peer_host,
    server_entropy,
    server_secret,
    shared_tasks,
)

__all__ = ["AsgiApp"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


class _LoopPrimitives(LoopParts, AnyioPrimitives):
    """On asyncio: the loop's own clock, timers and tasks (``loop.time()`` is anyio's clock
    there). anyio arms a timer as a task in a cancel scope, and cancelling one formats the
    current task's repr; the runner re-arms its one timer on most requests (a body's
    deadline comes and goes), so this is a cost every request would pay. A handler's task
    is the loop's own too (a task group's ``start_soon`` costs a cancel scope, a weak
    reference and a name per call): :meth:`close` cancels those still running at shutdown,
    as the lifespan's task group cancelled them. Plain ``def`` handlers run in a
    :class:`HandlerPool`, as under the asyncio driver (no task and no thread-limiter
    round trip per call)."""

    def __init__(self, group: anyio.abc.TaskGroup, write: Callable[[], None], threads: int | None,
                 loop: asyncio.AbstractEventLoop) -> None:
        AnyioPrimitives.__init__(self, group, write, threads)
        LoopParts.__init__(self, loop, self.threads)

    async def close(self) -> None:
        """Cancel the tasks still running and wait for them to end; stop the handler pool
        (threads still running a handler finish on their own)."""
        self._stop_handlers()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks)


def _primitives(group: anyio.abc.TaskGroup, write: Callable[[], None],
                threads: int | None) -> AnyioPrimitives:
    """The runner's primitives: the loop's own timers on asyncio, anyio's elsewhere (trio)."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # not asyncio
        return AnyioPrimitives(group, write, threads)
    return _LoopPrimitives(group, write, threads, loop)


class _Block:
    """A stretch of a request's handling the core may end early (:meth:`cancel`: the body
    will not be read, the response not written): anyio's cancel scope, or on asyncio the
    task's own cancellation, as ``asyncio.timeout`` does it (a cancel that lands is taken
    back when the block ends) without its timer and state per block (a request crosses
    two)."""

    __slots__ = ("_cancelling", "_handle", "_loop", "_open", "_scope", "_task")

    def __init__(self, loop: asyncio.AbstractEventLoop | None) -> None:
        """On ``loop`` (asyncio), or anyio's scope when ``None``."""
        self._loop = loop
        self._scope = None if loop is not None else anyio.CancelScope()
        self._task: asyncio.Task[Any] | None = None
        self._handle: asyncio.Handle | None = None
        self._cancelling = False  # the task was cancelled for the block
        self._open = False

    def __enter__(self) -> _Block:
        if self._scope is not None:
            self._scope.__enter__()
        else:
            self._task = asyncio.current_task(self._loop)  # (with no loop, a getpid() to find it)
        self._open = True
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> bool:
        self._open = False
        if self._scope is not None:
            return bool(self._scope.__exit__(kind, error, trace))
        if self._handle is not None:  # a cancel() that had not landed yet
            self._handle.cancel()
            self._handle = None
        task, self._task = self._task, None
        if not self._cancelling or task is None:
            return False
        # Ended by cancel(): the block just ends, unless someone else cancelled the task too.
        return task.uncancel() == 0 and kind is asyncio.CancelledError

    def cancel(self) -> None:
        """End the block at its next await (nothing once it ended)."""
        if not self._open:
            return
        if self._scope is not None:
            self._scope.cancel()
        elif self._handle is None and not self._cancelling and self._loop is not None:
            if asyncio.current_task(self._loop) is not self._task:
                self._land()  # it waits at an await inside the block: the cancel lands there
            else:  # it runs, and may leave the block before it awaits again: at the next turn
                self._handle = self._loop.call_soon(self._land)

    def _land(self) -> None:
        self._handle = None
        if self._task is not None:
            self._cancelling = True
            self._task.cancel()


class AsgiApp:
    """Serve ``app`` over Streamable HTTP as an ASGI 3 application.

    Args:
        app: the server.
        config: the HTTP settings. The default, ``HttpConfig.loopback()``, accepts only
            loopback names in ``Host`` and ``Origin`` (DNS-rebinding protection, as for a
            loopback bind); behind a public name give ``HttpConfig(allowed_hosts=(...),
            allowed_origins=(...))``, or ``None`` for either to accept any.
        secret: the key sealing ``requestState``; give every worker the same one
            (default: ``$MCP_SANSIO_SECRET``, else random, this process only).
        sessions: where handshake-era sessions are kept (default: this process).
        events: where resumable stream events are kept (default: this process).
        store: both at once, shared by every worker: a URL (``redis://``, ``rediss://``,
            ``valkey://``; see ``mcp_sansio_base.redis_store``) or a store object.
        on_event: receives the events the runner does not act on itself.
        handler_threads: how many plain ``def`` handlers run at once, each in a worker
            thread (default 40, ``DEFAULT_HANDLER_THREADS``); ``async def`` ones run on
            the loop.

    Raises:
        ValueError: no ``secret`` given and ``$MCP_SANSIO_SECRET`` is set but empty or
            shorter than 16 bytes; ``store`` is a URL of no known store.
    """

    def __init__(self, app: MCPServer, *, config: HttpConfig | None = None, secret: bytes | None = None,
                 sessions: SessionStore | None = None, events: EventStore | None = None,
                 store: str | SharedStore | None = None,
                 on_event: Callable[[Event], None] | None = None, handler_threads: int | None = None) -> None:
        self.app = app
        self.config = config or HttpConfig.loopback()
        self._exchanges = HttpExchanges(self.config.limits)
        self._secret = server_secret(secret)
        shared = open_shared(store)
        self._stores = (sessions or shared, events or shared)
        self._tasks = shared_tasks(shared)
        self._on_event = on_event
        self._threads = handler_threads
        self._server: HttpServer | None = None
        self._runner: ServerRunner | None = None
        self._waiters: dict[int, anyio.Event | asyncio.Future[None]] = {}  # responses waiting for parts
        self._scopes: dict[int, _Block] = {}
        self._reading: dict[int, _Block] = {}  # exchanges whose body is being read
        self._waking: dict[int, _Block] = {}  # responses awaited in receive() (asyncio)
        # On asyncio, its loop: its own cancellation and sleep(0), cheaper than anyio's.
        self._loop: asyncio.AbstractEventLoop | None = None
        self._clock: Callable[[], float] = anyio.current_time  # the runner's, once it runs

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # An HTTP request is served in this coroutine itself (not one more per request).
        if scope["type"] != "http":
            await self._other(scope, receive, send)
            return
        server, runner = self._server, self._runner
        if server is None or runner is None:
            body = b"mcp-sansio: run the ASGI server with its lifespan protocol on\n"
            await send({"type": "http.response.start", "status": 500,
                        "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                                    (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})
            return
        exchanges = self._exchanges
        query = scope.get("query_string", b"")
        target = scope["path"] + ("?" + query.decode("latin-1") if query else "")
        exchange = exchanges.begin(scope["method"], target, scope["headers"], peer_host(scope.get("client")),
                                   now=self._clock())
        try:
            runner.arm_by(exchanges.next_deadline())  # the body's deadline
            with _Block(self._loop) as self._reading[exchange]:
                while (message := await receive())["type"] == "http.request":
                    more = bool(message.get("more_body", False))
                    if not exchanges.receive_body(exchange, message.get("body", b""), more=more):
                        break
                else:  # http.disconnect before the body was in
                    return
            del self._reading[exchange]
            started = runner.tasks_started
            server.exchanges_changed(self._clock())
            runner.pump()
            with _Block(self._loop) as block:
                self._scopes[exchange] = block
                # An answer already there, or given by a handler (an async def) that runs at
                # the next turn of the loop, is sent with no watcher: the client leaving
                # matters only while the response waits (no task and task group per request).
                # No handler task started: no answer comes at the next turn (a plain def
                # answers from its thread), so that turn is not waited.
                if exchanges.has_output(exchange) and await self._send_ready(exchange, send):
                    return
                if runner.tasks_started != started:
                    await (asyncio.sleep(0) if self._loop is not None else anyio.lowlevel.checkpoint())
                    if await self._send_ready(exchange, send):
                        return
                if self._loop is not None:
                    # The answer takes longer (a plain def handler runs in its worker thread):
                    # wait for it in receive() itself, which sees the client leave as the
                    # watcher below would, until its first part cancels the wait (no task).
                    with _Block(self._loop) as self._waking[exchange]:
                        while (await receive())["type"] != "http.disconnect":
                            pass
                        return  # the client left (the core hears of it below)
                    del self._waking[exchange]
                    if await self._send_ready(exchange, send):
                        return
                    # More parts to come (a stream): the loop's own task watches (a task
                    # group costs twice as much).
                    watcher = self._loop.create_task(self._watch(exchange, receive, block))
                    try:
                        await self._respond(exchange, send)
                    finally:
                        watcher.cancel()
                    return
                async with anyio.create_task_group() as group:
                    group.start_soon(self._watch, exchange, receive, group.cancel_scope)
                    await self._respond(exchange, send)
                    group.cancel_scope.cancel()
        finally:
            self._reading.pop(exchange, None)
            self._waking.pop(exchange, None)
            self._waiters.pop(exchange, None)
            self._scopes.pop(exchange, None)
            exchanges.disconnect(exchange)  # a no-op once the response ended
            if exchanges.has_events():  # (else nothing changed since the runner last pumped)
                server.exchanges_changed(self._clock())
                runner.pump()

    async def _other(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
        else:  # no MCP over an ASGI WebSocket: refuse the handshake
            await send({"type": "websocket.close", "code": 1003})

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        await receive()  # lifespan.startup
        async with anyio.create_task_group() as group:
            sessions, events = self._stores
            primitives = _primitives(group, self._wake, self._threads)
            self._clock = primitives.clock
            self._loop = asyncio.get_running_loop() if isinstance(primitives, _LoopPrimitives) else None
            offset = time.time() - self._clock()
            server = HttpServer(self.app, secret=self._secret, entropy=server_entropy(), wall_offset=offset,
                                config=self.config,
                                sessions=sessions, events=events, exchanges=self._exchanges,
                                tasks=self._tasks)
            self._server = server
            self._runner = ServerRunner(server, primitives, self._on_event)
            group.start_soon(relay_anyio, server, self._runner)
            await send({"type": "lifespan.startup.complete"})
            await receive()  # lifespan.shutdown
            server.close(self._clock())
            self._runner.pump()
            self._runner.cancel_all()
            primitives.stop_handlers()  # (the loop's own pool, under asyncio, stops in close)
            if isinstance(primitives, _LoopPrimitives):
                await primitives.close()
            group.cancel_scope.cancel()
        await send({"type": "lifespan.shutdown.complete"})

    def _wake(self) -> None:
        """The runner's ``write``: wake the responses that have parts waiting."""
        exchanges = self._exchanges
        for exchange in exchanges.exchanges_with_output():
            reading = self._reading.get(exchange)
            if reading is not None and not exchanges.reading(exchange):
                reading.cancel()  # answered before its body was in (408): read no more of it
            if exchanges.dropped(exchange):
                scope = self._scopes.get(exchange)
                if scope is not None:
                    scope.cancel()  # it may be blocked writing to a client that does not read
            waking = self._waking.get(exchange)
            if waking is not None:
                waking.cancel()
            waiter = self._waiters.get(exchange)
            if waiter is None:
                continue
            if not isinstance(waiter, asyncio.Future):
                waiter.set()
            elif not waiter.done():
                waiter.set_result(None)

    async def _respond(self, exchange: int, send: Send) -> None:
        """Send the response's parts as they come, until it ends."""
        loop = self._loop
        while True:
            # On asyncio, a future of the loop's (an anyio Event costs an asyncio Event, and
            # a getpid() system call to find the loop, per wait).
            waiter = self._waiters[exchange] = anyio.Event() if loop is None else loop.create_future()
            if await self._send_ready(exchange, send):
                return
            await (waiter if isinstance(waiter, asyncio.Future) else waiter.wait())

    async def _send_ready(self, exchange: int, send: Send) -> bool:
        """Send the response's parts waiting now; whether the response ended."""
        exchanges, runner = self._exchanges, self._runner
        assert runner is not None  # the lifespan made it before any request
        while (part := exchanges.next_part(exchange)) is not None:  # one at a time: the
            # parts not yet taken are what the core's backpressure counts
            if isinstance(part, ResponseStart):
                await send({"type": "http.response.start", "status": part.status, "headers": part.headers})
            elif isinstance(part, ResponseBody):
                await send({"type": "http.response.body", "body": part.data, "more_body": part.more})
                if not part.more:
                    return True
                runner.wake()
            else:
                assert isinstance(part, ResponseAborted)
                return True  # the host closes a response left unfinished
        return False

    async def _watch(self, exchange: int, receive: Receive, done: anyio.CancelScope | _Block) -> None:
        """The client left mid-response: tell the core, stop responding."""
        while (await receive())["type"] != "http.disconnect":
            pass
        done.cancel()
