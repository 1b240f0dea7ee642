"""Running a server's handlers, loop-neutral: the one pump every server driver uses.

:class:`ServerRunner` drains a server transport's events, runs each handler (an ``async
def`` as a task of its own; a plain ``def`` in a worker thread when the driver has a pool,
``Primitives.threads``, else inline), gives it a ``Context``, waits for the client's
answers to its questions, turns its return value or exception into the response, and
honours cancellation and backpressure (a handler awaiting what ``ctx.report_progress``/
``ctx.log`` return waits while the core says its stream is congested, until the driver has
taken its backlog down: drivers call :meth:`ServerRunner.wake` after taking output). It
asks the driver for a few primitives only (:class:`Primitives`): spawn a task, make a
future, read the clock, arm a timer, write what the transport has to send, run a blocking
function off the loop, run a handler in a bounded worker thread, and call back into the
loop from another thread. When the transport asks for a bearer token's verdict
(``TokenVerificationRequired``), the runner runs the app's ``auth.verifier`` off the loop
and hands the verdict back. The protocol decisions stay in the core; the core is touched
on the loop's thread only (a ``Context`` used from a worker thread hands its calls to the
loop and waits for them). Spans and metrics come from :mod:`.telemetry` when a provider is
configured.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import contextvars
import functools
import inspect
import logging
import threading
from collections.abc import Awaitable, Callable, Coroutine, Generator, Sequence
from typing import Any, Final, Protocol, TypeVar, assert_never, cast

import msgspec

from mcp_sansio.errors import LocalProtocolError, RequestError
from mcp_sansio.events import ConnectionTerminated, MessageDiscarded, NotificationReceived
from mcp_sansio.server import (
    Answered,
    AnswerFailed,
    AnswerPending,
    AnswerReceived,
    Ask,
    CallCancelled,
    CallOutcome,
    ClientInitialized,
    CompletionReceived,
    Context,
    Deferred,
    Endpoint,
    HandlerCallReceived,
    InputRequired,
    Principal,
    PromptGetReceived,
    RequestAnswered,
    ResourceReadReceived,
    ResourceSubscribed,
    ResourceUnsubscribed,
    ServerEvent,
    TokenRejected,
    TokenVerdict,
    TokenVerificationRequired,
    ToolCallReceived,
    ToolError,
    VerifierUnavailable,
)
from mcp_sansio.types import EmptyResult

from .handler_pool import HandlerPool
from .telemetry import server_telemetry

__all__ = ["DEFAULT_HANDLER_THREADS", "Cancellable", "FutureLike", "Primitives", "ServerRunner"]

DEFAULT_HANDLER_THREADS: Final = 40
"""How many plain ``def`` handlers the event-loop drivers (asyncio, anyio, ASGI) run at once
in worker threads (anyio's own default); more wait for a free thread. The blocking driver
runs them inline unless given ``handler_threads``."""

_IDLE: Final = EmptyResult()  # what a settled() waiter is resolved with

log = logging.getLogger("mcp_sansio.server")

T = TypeVar("T")
T_contra = TypeVar("T_contra", contravariant=True)


class _Drained(msgspec.Struct, frozen=True):
    """What a drain future resolves with."""


_DRAINED: Final = _Drained()


class Cancellable(Protocol):
    """A spawned task or an armed timer."""

    def cancel(self) -> object:
        """Stop it (a task sees its loop's cancellation at its next await)."""
        ...


class FutureLike(Protocol[T_contra]):
    """A one-shot result a task can await (its result is what ``await`` gives)."""

    def set_result(self, value: T_contra) -> None:
        """Resolve it."""
        ...

    def set_exception(self, error: BaseException) -> None:
        """Fail it."""
        ...

    def done(self) -> bool:
        """Whether it is resolved."""
        ...

    def __await__(self) -> Any:
        """Wait for it."""
        ...


class Primitives(Protocol):
    """What a driver's loop provides the runner."""

    def spawn(self, coro: Coroutine[Any, Any, None]) -> Cancellable:
        """Run ``coro`` as a task of its own."""
        ...

    def future(self) -> FutureLike[msgspec.Struct]:
        """A fresh future."""
        ...

    def clock(self) -> float:
        """The loop's monotonic time."""
        ...

    def call_at(self, when: float, callback: Callable[[], None]) -> Cancellable:
        """Call ``callback`` at ``when`` (loop time)."""
        ...

    def write(self) -> None:
        """Write what the transport has to send (``data_to_send`` or its connections')."""
        ...

    def run_blocking(self, fn: Callable[[], T]) -> Awaitable[T]:
        """Run ``fn``, which may block on I/O, without stalling the loop: in a worker
        thread on an event loop, inline where there is none (the blocking driver)."""
        ...

    @property
    def threads(self) -> int:
        """How many worker threads run plain ``def`` handlers (0: they run inline)."""
        ...

    @property
    def handler_pool(self) -> HandlerPool:
        """Where plain ``def`` handlers run (when ``threads``), with no task per call."""
        ...

    def call_soon_threadsafe(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` on the loop's thread soon (from any thread)."""
        ...


class ServerRunner:
    """Runs the handlers of one server transport on a driver's loop.

    The driver calls :meth:`pump` after every input it gives the transport (bytes, a
    closed connection, a fired timer); the runner does the rest. ``on_event`` receives
    the events the runner has no use for (``ClientInitialized``, ``ResourceSubscribed``,
    ``NotificationReceived``, ...).
    """

    def __init__(self, endpoint: Endpoint, primitives: Primitives,
                 on_event: Callable[[ServerEvent], None] | None = None) -> None:
        self.endpoint = endpoint
        self._p = primitives
        self._on_event = on_event
        self._tasks: dict[int, Cancellable] = {}
        self._answers: dict[int, FutureLike[msgspec.Struct]] = {}
        self._draining: list[tuple[int, FutureLike[msgspec.Struct]]] = []  # handlers awaiting a drain
        self._timer: Cancellable | None = None
        self._timer_at: float | None = None
        self._thread = threading.get_ident()  # the loop's: the core is touched there only
        self._threaded = 0
        self._idle_waiters: list[FutureLike[msgspec.Struct]] = []
        self.tasks_started = 0
        """Handlers started as tasks so far (an ``async def`` that awaits): a driver that
        pumped and sees this unchanged knows no handler answers at the loop's next turn."""
        self.terminated = False
        """The transport reported ``ConnectionTerminated`` (stdio: the client left)."""
        self.on_terminated: Callable[[], None] = lambda: None
        """Called at each ``ConnectionTerminated``: a stdio driver stops reading then, also
        when the session ended because the client stopped reading stdout (its input may
        never end)."""
        self.telemetry = server_telemetry(endpoint)
        """Spans and metrics (OpenTelemetry), or ``None`` when no provider is configured."""
        self._asked: dict[int, object] = {}  # question ticket -> its telemetry operation
        if self.telemetry is not None:  # the requests the core answers itself get spans too
            endpoint.app.report_answers = True
        endpoint.app.add_listener(self._from_app)

    @property
    def running(self) -> int:
        """Handlers running as tasks."""
        return len(self._tasks)

    @property
    def threaded(self) -> int:
        """Plain ``def`` handlers running (or waiting) in worker threads."""
        return self._threaded

    @property
    def unsettled(self) -> bool:
        """Whether a plain ``def`` handler runs in a worker thread or a result is held back
        for a congested stream (see :meth:`settled`)."""
        return bool(self._threaded or self.endpoint.holding)

    async def settled(self) -> None:
        """Wait until no plain ``def`` handler runs in a worker thread and no result is held
        back. A stdio driver waits for it (writing meanwhile) before it tells the core that
        input ended, so that such a handler in flight, or a finished result waiting for the
        client to read, is answered as when it ran inline (the end of input cancels what
        still runs)."""
        if self.unsettled:
            waiter = self._p.future()
            self._idle_waiters.append(waiter)
            await waiter

    def _maybe_settled(self) -> None:
        if not self.unsettled:
            waiters, self._idle_waiters = self._idle_waiters, []
            for waiter in waiters:
                waiter.set_result(_IDLE)

    def pump(self) -> None:
        """Act on every queued event, write what is to be sent, re-arm the timer."""
        endpoint = self.endpoint
        while (event := endpoint.next_event()) is not None:
            match event:
                case ToolCallReceived() | PromptGetReceived() | ResourceReadReceived() | CompletionReceived():
                    self._start(event)
                case CallCancelled(call=call):
                    task = self._tasks.pop(call, None)
                    if task is not None:
                        task.cancel()
                    if self.telemetry is not None:
                        self.telemetry.end(call, None, cancelled=True)
                case AnswerReceived() | AnswerFailed():
                    self._answer(event)
                case TokenVerificationRequired(ticket=ticket, token=token):
                    self._p.spawn(self._verify(ticket, token))
                case ConnectionTerminated(session_id=session_id):
                    self.terminated = True
                    self.on_terminated()
                    if self.telemetry is not None:
                        self.telemetry.session_ended(session_id)
                    self._forward(event)
                case RequestAnswered():
                    if self.telemetry is not None:
                        self.telemetry.answered_by_core(event)
                case ClientInitialized(session_id=session_id, protocol_version=version):
                    if self.telemetry is not None:
                        self.telemetry.session_started(session_id, version)
                    self._forward(event)
                case (ResourceSubscribed() | ResourceUnsubscribed() | NotificationReceived()
                      | MessageDiscarded()):
                    self._forward(event)
                case _:  # pragma: no cover
                    assert_never(event)
        self._p.write()
        self.wake()
        self._rearm()

    def arm_by(self, deadline: float | None) -> None:
        """The driver gave the transport an input that queued no event and no output but
        may have armed a deadline, none earlier than ``deadline`` (``None``: none): make
        sure the timer fires by then. Cheaper than :meth:`pump` (which also does this),
        as the timer armed usually fires no later (then the core is not asked)."""
        armed = self._timer_at
        if deadline is None or (armed is not None and armed <= deadline):
            return
        self._rearm()

    def _forward(self, event: ServerEvent) -> None:
        """Hand ``event`` to the driver's ``on_event``, if it has one."""
        if self._on_event is not None:
            self._on_event(event)

    def wake(self) -> None:
        """The driver took output (or a stream ended): held results are answered and
        handlers waiting for their stream to drain go on, once the core no longer calls
        it congested."""
        if self.endpoint.holding:
            self._release()
        if not self._draining:
            return
        waiting, self._draining = self._draining, []
        for call, future in waiting:
            if future.done():
                continue  # its handler was cancelled
            if self.endpoint.congested(call):
                self._draining.append((call, future))
            else:
                future.set_result(_DRAINED)

    def cancel_all(self) -> None:
        """Cancel every running handler (shutting down); the app's notifications no longer
        reach this transport."""
        self.endpoint.app.remove_listener(self._from_app)
        tasks, self._tasks = self._tasks, {}
        for task in tasks.values():
            task.cancel()
        if self.telemetry is not None:
            self.telemetry.abandon()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = self._timer_at = None

    # ------------------------------------------------------------ HandlerRuntime

    def ask(self, call: int, asks: Sequence[Ask]) -> Awaitable[list[msgspec.Struct]]:
        """Ask the client (see ``HandlerRuntime.ask``).

        Raises:
            LocalProtocolError: called from a plain ``def`` handler's worker thread, which
                cannot await the answer.
        """
        self._check_loop()
        return self._ask(call, asks)

    def ask_one(self, call: int, ask: Ask) -> Awaitable[msgspec.Struct]:
        """Ask the client one question (raises as :meth:`ask`)."""
        self._check_loop()
        return self._ask_one(call, ask)

    def _check_loop(self) -> None:
        if threading.get_ident() != self._thread:
            raise LocalProtocolError("asking the client (elicit, sample, list_roots) awaits its answer: "
                                     "make the handler an async def")

    def flush(self) -> None:
        """A handler queued messages, or a socket can take more: write now, and (the write
        may have taken output that was congested) answer held results and let the
        handlers waiting for a drain go on, see :meth:`wake`. Every write goes through here
        or :meth:`pump`, so no taking of output misses its wake-up."""
        self._p.write()
        self.wake()

    def drained(self, call: int) -> Awaitable[None]:
        """What waits, when awaited, until ``call``'s stream is not congested."""
        return _Drain(self, call)

    async def _wait_drained(self, call: int) -> None:
        if self.endpoint.is_cancelled(call):
            # Its stream is gone (so never congested) and its task is (or is about to be)
            # cancelled: a future nobody resolves makes this await where that lands, rather
            # than let the handler run on to its end without a suspension.
            await self._p.future()
        while self.endpoint.congested(call):
            future = self._p.future()
            self._draining.append((call, future))
            self._rearm()  # the stall deadline of the stream it waits for
            await future

    def now(self) -> float:
        """The loop's clock."""
        return self._p.clock()

    def on_loop(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` (it touches the core) on the loop's thread, write what it queued, and
        return its value; from a worker thread this waits for the loop."""
        if threading.get_ident() == self._thread:
            value = fn()
            self.flush()
            return value
        done: concurrent.futures.Future[T] = concurrent.futures.Future()

        def run() -> None:
            try:
                done.set_result(fn())
            except BaseException as exc:  # handed to the waiting thread
                done.set_exception(exc)
            self.flush()

        self._p.call_soon_threadsafe(run)
        return done.result()

    def _from_app(self, apply: Callable[[Endpoint], None]) -> None:
        """The app announced a change (``app.notify_list_changed``, from any thread)."""
        def run() -> None:
            apply(self.endpoint)
            self.flush()

        if threading.get_ident() == self._thread:
            run()
        else:
            with contextlib.suppress(RuntimeError):  # the loop is gone: so is every client
                self._p.call_soon_threadsafe(run)

    # ------------------------------------------------------------ internals

    def _start(self, event: HandlerCallReceived) -> None:
        handler = event.handler
        kwargs = event.arguments
        ctx = None
        if handler.context_param is not None:
            ctx = Context(self.endpoint, event.call, event.request, self)
            kwargs = {**kwargs, handler.context_param: ctx}
        call = event.call
        telemetry = self.telemetry
        if not handler.is_async and self._p.threads:
            work = functools.partial(handler.fn, **kwargs)
            self._threaded += 1  # no task: one queue put, one wake-up of the loop
            self._submit(self._p.handler_pool, call, work, ctx, None if telemetry is None else event)
            return
        if not handler.suspends:  # a plain def, or an async def that never awaits: inline
            token = None if telemetry is None else telemetry.enter(telemetry.start(event))
            try:
                try:
                    if handler.is_async:  # in a context of its own, as a task's would be
                        value = contextvars.copy_context().run(_run_through, handler.fn(**kwargs))
                    else:
                        value = handler.fn(**kwargs)
                except BaseException as exc:
                    self._conclude(call, ctx, None, exc)
                else:
                    self._conclude(call, ctx, value, None)
            finally:
                if token is not None and telemetry is not None:
                    telemetry.leave(token)
            return
        self.tasks_started += 1
        self._tasks[call] = self._p.spawn(self._run(call, handler.fn, kwargs, ctx,
                                                    None if telemetry is None else event))

    def _submit(self, pool: HandlerPool, call: int, work: Callable[[], object], ctx: Context | None,
                traced: HandlerCallReceived | None) -> None:
        """Run ``work`` in ``pool``; its outcome concludes ``call`` on the loop, without a
        task awaiting it."""
        telemetry = self.telemetry
        token = None if traced is None or telemetry is None else telemetry.enter(telemetry.start(traced))
        try:  # the job copies the context here: the span is current in the worker

            def done(value: object, error: BaseException | None) -> None:
                self._tasks.pop(call, None)
                self._threaded -= 1
                try:
                    self._conclude(call, ctx, value, error)
                finally:
                    self._maybe_settled()
                self.pump()

            def cancelled() -> None:
                self._tasks.pop(call, None)
                self._threaded -= 1
                self._maybe_settled()

            self._tasks[call] = pool.submit(work, done, cancelled)
        finally:
            if token is not None and telemetry is not None:
                telemetry.leave(token)

    async def _run(self, call: int, fn: Callable[..., object], kwargs: dict[str, Any],
                   ctx: Context | None, traced: HandlerCallReceived | None = None) -> None:
        # The handler's coroutine is made here: a call cancelled before its task first
        # runs then leaves no coroutine that was never awaited.
        telemetry = self.telemetry
        token = None if traced is None or telemetry is None else telemetry.enter(telemetry.start(traced))
        try:
            coro: Coroutine[Any, Any, object] = fn(**kwargs)  # type: ignore[assignment]  # is_async
            try:
                value = await coro
            except BaseException as exc:
                self._conclude(call, ctx, None, exc, task=True)
            else:
                self._conclude(call, ctx, value, None)
        finally:
            self._tasks.pop(call, None)
            if token is not None and telemetry is not None:
                telemetry.leave(token)
        self.pump()

    def _conclude(self, call: int, ctx: Context | None, value: object, error: BaseException | None, *,
                  task: bool = False) -> None:
        """Answer ``call`` with what its handler returned, or with its failure (which becomes
        the response), or ask for input (``InputRequired``). ``KeyboardInterrupt`` goes on
        up, and so does the cancellation of a ``task`` the runner cancelled
        (``CallCancelled`` and :meth:`cancel_all` forget its call first). Any other
        ``BaseException`` (a cancellation the handler raised itself, an
        ``asyncio.CancelledError`` from a library, a ``SystemExit`` from a command-line
        library on bad arguments) fails the call like an exception: going on up, it left
        the client waiting until its timeout, or ended the whole server."""
        if error is None:
            self._respond(call, value)
        elif isinstance(error, InputRequired):
            self._input_required(call, ctx)
        elif isinstance(error, KeyboardInterrupt) or (task and call not in self._tasks):
            raise error
        else:
            self._fail(call, error)

    async def _verify(self, ticket: int, token: str) -> None:
        """Run the app's token verifier off the loop; give the core its verdict."""
        auth = self.endpoint.app.auth
        verdict: TokenVerdict = VerifierUnavailable(detail="the server has no token verifier")
        if auth is not None:
            verify = auth.verifier.verify
            try:
                if inspect.iscoroutinefunction(verify):  # an AsyncTokenVerifier: awaited on the loop
                    verdict = await cast("Awaitable[TokenVerdict]", verify(token))
                else:
                    verdict = await self._p.run_blocking(lambda: cast("TokenVerdict", verify(token)))
            except Exception as exc:  # a verifier's failure is no verdict; its text may hold anything
                log.warning("the token verifier raised %s", type(exc).__name__)
                verdict = VerifierUnavailable(detail=type(exc).__name__)
            if not isinstance(verdict, Principal | TokenRejected | VerifierUnavailable):
                log.warning("the token verifier answered a %s, not a verdict", type(verdict).__name__)
                verdict = VerifierUnavailable(detail="no verdict")
        self.endpoint.token_verified(ticket, verdict, now=self._p.clock())
        self.pump()

    def _respond(self, call: int, value: object) -> None:
        """Answer ``call``; the core holds the answer, encoded and bounded in bytes, while
        its stream is congested (a stdout or WebSocket shared by pipelined calls), so the
        bytes queued stay near the high-water mark rather than every finished result at once."""
        now = self._p.clock()
        try:
            outcome = self.endpoint.hold(call, value, now=now)
        except LocalProtocolError as exc:  # a value the method cannot send
            outcome = self.endpoint.fail(call, exc, now=now)
        self._ended(call, outcome)
        if self.endpoint.holding:
            self._release()

    def _release(self) -> None:
        """Send the held answers their streams can take, writing between rounds (a pipe or
        socket with room takes them at once: then more may go)."""
        while self.endpoint.release(self._p.clock()):
            self._p.write()
        self._maybe_settled()

    def _fail(self, call: int, error: BaseException) -> None:
        """Answer ``call`` for its handler's ``error``; when the app masks error details the
        client gets a generic message, so the traceback is logged here."""
        if self.endpoint.app.mask_error_details and not isinstance(error, ToolError | RequestError):
            log.error("handler of call %s failed", call, exc_info=error)
        else:
            log.debug("handler of call %s failed", call, exc_info=error)
        self._ended(call, self.endpoint.fail(call, error, now=self._p.clock()))

    def _ended(self, call: int, outcome: CallOutcome | None) -> None:
        if self.telemetry is not None:
            self.telemetry.end(call, outcome)

    def _input_required(self, call: int, ctx: Context | None) -> None:
        now = self._p.clock()
        try:
            self.endpoint.input_required(call, {} if ctx is None else ctx.state, now=now)
        except LocalProtocolError as exc:  # no retry can bring answers (handshake era), or bad state
            self._fail(call, exc)
            return
        self._ended(call, None)

    async def _ask(self, call: int, asks: Sequence[Ask]) -> list[msgspec.Struct]:
        telemetry = self.telemetry
        if telemetry is None:
            outcomes = self.endpoint.ask(call, asks, now=self._p.clock())
        else:  # a CLIENT span per question, its context in the question's _meta
            asks, ops = telemetry.asking(asks)
            try:
                outcomes = self.endpoint.ask(call, asks, now=self._p.clock())
            except BaseException as exc:
                for op in ops:
                    telemetry.asked(op, exc)
                raise
            for op, outcome in zip(ops, outcomes, strict=True):
                if isinstance(outcome, AnswerPending):
                    self._asked[outcome.ticket] = op
                else:  # answered at once, or carried in input_required (stateless era)
                    telemetry.asked(op, None)
        if any(isinstance(o, Deferred) for o in outcomes):
            raise InputRequired
        waiting: list[FutureLike[msgspec.Struct] | msgspec.Struct] = []
        for outcome in outcomes:
            if isinstance(outcome, Answered):
                waiting.append(outcome.result)
            elif isinstance(outcome, AnswerPending):
                future = self._p.future()
                self._answers[outcome.ticket] = future
                waiting.append(future)
        self.pump()
        return [item if isinstance(item, msgspec.Struct) else await item for item in waiting]

    async def _ask_one(self, call: int, ask: Ask) -> msgspec.Struct:
        (answer,) = await self._ask(call, [ask])
        return answer

    def _answer(self, event: AnswerReceived | AnswerFailed) -> None:
        match event:
            case AnswerReceived(result=result):
                error = None
            case AnswerFailed():
                error = event.to_exception()
            case _:  # pragma: no cover
                assert_never(event)
        if self._asked:
            op = self._asked.pop(event.ticket, None)
            if op is not None and self.telemetry is not None:
                self.telemetry.asked(op, error)
        future = self._answers.pop(event.ticket, None)
        if future is None or future.done():
            return  # the handler that asked is gone
        if error is None:
            future.set_result(result)
        else:
            future.set_exception(error)

    def _rearm(self) -> None:
        deadline = self.endpoint.next_deadline()
        armed = self._timer_at
        if deadline == armed or (armed is not None and (deadline is None or deadline > armed)):
            return  # the timer armed fires no later: its pump arms the next one (no churn per call)
        if self._timer is not None:
            self._timer.cancel()
        self._timer_at = deadline
        self._timer = None if deadline is None else self._p.call_at(deadline, self._fire)

    def _fire(self) -> None:
        deadline = self._timer_at
        self._timer = self._timer_at = None
        now = self._p.clock()
        self.endpoint.handle_timeout(max(now, deadline or now))
        self.pump()


def _run_through(coro: Any) -> object:
    """What the coroutine of an ``async def`` that never awaits returns (its first step
    ends it: ``HandlerSignature.suspends``)."""
    try:
        coro.send(None)
    except StopIteration as stop:
        return stop.value
    coro.close()  # pragma: no cover  # its code has no yield: it cannot get here
    raise RuntimeError("a handler read as never suspending suspended")  # pragma: no cover


class _Drain:
    """The awaitable ``ctx.report_progress``/``ctx.log`` return: nothing runs unless it is
    awaited (a coroutine would warn when a plain handler ignores it)."""

    __slots__ = ("_call", "_runner")

    def __init__(self, runner: ServerRunner, call: int) -> None:
        self._runner = runner
        self._call = call

    def __await__(self) -> Generator[Any, None, None]:
        return self._runner._wait_drained(self._call).__await__()
