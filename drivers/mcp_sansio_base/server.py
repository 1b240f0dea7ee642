"""Running a server's handlers, loop-neutral: the one pump every server driver uses.

:class:`ServerRunner` drains a server transport's events, runs each handler (a plain
``def`` inline, an ``async def`` as a task of its own), gives it a ``Context``, waits for
the client's answers to its questions, turns its return value or exception into the
response, and honours cancellation. It asks the driver for six primitives only
(:class:`Primitives`): spawn a task, make a future, read the clock, arm a timer, write
what the transport has to send, and run a blocking function off the loop. When the
transport asks for a bearer token's verdict (``TokenVerificationRequired``), the runner
runs the app's ``auth.verifier`` that last way and hands the verdict back. The protocol
decisions stay in the core.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, Protocol, TypeVar, cast

import msgspec

from mcp_sansio.errors import LocalProtocolError
from mcp_sansio.events import ConnectionTerminated, Event
from mcp_sansio.server import (
    Answered,
    AnswerFailed,
    AnswerReceived,
    Ask,
    CallCancelled,
    Context,
    Deferred,
    Endpoint,
    HandlerCallReceived,
    InputRequired,
    Pending,
    Principal,
    TokenRejected,
    TokenVerdict,
    TokenVerificationRequired,
    VerifierUnavailable,
)

__all__ = ["Cancellable", "FutureLike", "Primitives", "ServerRunner"]

log = logging.getLogger("mcp_sansio.server")

T = TypeVar("T")
T_contra = TypeVar("T_contra", contravariant=True)


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


class ServerRunner:
    """Runs the handlers of one server transport on a driver's loop.

    The driver calls :meth:`pump` after every input it gives the transport (bytes, a
    closed connection, a fired timer); the runner does the rest. ``on_event`` receives
    the events the runner has no use for (``ClientInitialized``, ``ResourceSubscribed``,
    ``NotificationReceived``, ...).
    """

    def __init__(self, endpoint: Endpoint, primitives: Primitives,
                 on_event: Callable[[Event], None] | None = None) -> None:
        self.endpoint = endpoint
        self._p = primitives
        self._on_event = on_event
        self._tasks: dict[int, Cancellable] = {}
        self._answers: dict[int, FutureLike[msgspec.Struct]] = {}
        self._timer: Cancellable | None = None
        self._timer_at: float | None = None
        self.terminated = False
        """The transport reported ``ConnectionTerminated`` (stdio: the client left)."""

    @property
    def running(self) -> int:
        """Handlers running as tasks."""
        return len(self._tasks)

    def pump(self) -> None:
        """Act on every queued event, write what is to be sent, re-arm the timer."""
        endpoint = self.endpoint
        while (event := endpoint.next_event()) is not None:
            if isinstance(event, HandlerCallReceived):
                self._start(event)
            elif isinstance(event, CallCancelled):
                task = self._tasks.pop(event.call, None)
                if task is not None:
                    task.cancel()
            elif isinstance(event, AnswerReceived | AnswerFailed):
                self._answer(event)
            elif isinstance(event, TokenVerificationRequired):
                self._p.spawn(self._verify(event.ticket, event.token))
            elif isinstance(event, ConnectionTerminated):
                self.terminated = True
                if self._on_event is not None:
                    self._on_event(event)
            elif self._on_event is not None:
                self._on_event(event)
        self._p.write()
        self._rearm()

    def cancel_all(self) -> None:
        """Cancel every running handler (shutting down)."""
        tasks, self._tasks = self._tasks, {}
        for task in tasks.values():
            task.cancel()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = self._timer_at = None

    # ------------------------------------------------------------ HandlerRuntime

    def ask(self, call: int, asks: Sequence[Ask]) -> Awaitable[list[msgspec.Struct]]:
        """Ask the client (see ``HandlerRuntime.ask``)."""
        return self._ask(call, asks)

    def ask_one(self, call: int, ask: Ask) -> Awaitable[msgspec.Struct]:
        """Ask the client one question."""
        return self._ask_one(call, ask)

    def flush(self) -> None:
        """A handler queued messages: write them now."""
        self._p.write()

    def now(self) -> float:
        """The loop's clock."""
        return self._p.clock()

    # ------------------------------------------------------------ internals

    def _start(self, event: HandlerCallReceived) -> None:
        handler = event.handler
        kwargs = event.arguments
        ctx = None
        if handler.context_param is not None:
            ctx = Context(self.endpoint, event.call, event.request, self)
            kwargs = {**kwargs, handler.context_param: ctx}
        call = event.call
        if not handler.is_async:
            try:
                value = handler.fn(**kwargs)
            except InputRequired:
                self._input_required(call, ctx)
            except Exception as exc:  # the handler's failure becomes the response
                self.endpoint.fail(call, exc, now=self._p.clock())
            else:
                self._respond(call, value)
            return
        self._tasks[call] = self._p.spawn(self._run(call, handler.fn, kwargs, ctx))

    async def _run(self, call: int, fn: Callable[..., object], kwargs: dict[str, Any],
                   ctx: Context | None) -> None:
        # The handler's coroutine is made here: a call cancelled before its task first
        # runs then leaves no coroutine that was never awaited.
        try:
            coro: Coroutine[Any, Any, object] = fn(**kwargs)  # type: ignore[assignment]  # is_async
            value = await coro
        except InputRequired:
            self._input_required(call, ctx)
        except Exception as exc:  # the handler's failure becomes the response
            self.endpoint.fail(call, exc, now=self._p.clock())
        else:
            self._respond(call, value)
        finally:
            self._tasks.pop(call, None)
        self.pump()

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
        now = self._p.clock()
        try:
            self.endpoint.respond(call, value, now=now)
        except LocalProtocolError as exc:  # a value the method cannot send
            self.endpoint.fail(call, exc, now=now)

    def _input_required(self, call: int, ctx: Context | None) -> None:
        now = self._p.clock()
        try:
            self.endpoint.input_required(call, {} if ctx is None else ctx.state, now=now)
        except LocalProtocolError as exc:  # no retry can bring answers (handshake era), or bad state
            self.endpoint.fail(call, exc, now=now)

    async def _ask(self, call: int, asks: Sequence[Ask]) -> list[msgspec.Struct]:
        outcomes = self.endpoint.ask(call, asks, now=self._p.clock())
        if any(isinstance(o, Deferred) for o in outcomes):
            raise InputRequired
        waiting: list[FutureLike[msgspec.Struct] | msgspec.Struct] = []
        for outcome in outcomes:
            if isinstance(outcome, Answered):
                waiting.append(outcome.result)
            elif isinstance(outcome, Pending):
                future = self._p.future()
                self._answers[outcome.ticket] = future
                waiting.append(future)
        self.pump()
        return [item if isinstance(item, msgspec.Struct) else await item for item in waiting]

    async def _ask_one(self, call: int, ask: Ask) -> msgspec.Struct:
        (answer,) = await self._ask(call, [ask])
        return answer

    def _answer(self, event: AnswerReceived | AnswerFailed) -> None:
        future = self._answers.pop(event.ticket, None)
        if future is None or future.done():
            return  # the handler that asked is gone
        if isinstance(event, AnswerReceived):
            future.set_result(event.result)
        else:
            future.set_exception(event.to_exception())

    def _rearm(self) -> None:
        deadline = self.endpoint.next_deadline()
        if deadline == self._timer_at:
            return
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

