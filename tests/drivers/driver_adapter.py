"""The adapter that runs every driver test body on every driver.

Test bodies are async and see one client API, over stdio, HTTP or WebSocket. The
blocking driver is wrapped, without threads, in an object whose methods are coroutines
that run the blocking call at once, and its handlers are the tests' async handlers run
to completion inline (they must not suspend). A call is abandoned as each driver's
users do it: by cancelling the task (asyncio), with a cancel scope (anyio), with an
alarm signal standing in for Ctrl-C (blocking).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import ssl
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from functools import partial
from pathlib import Path
from types import FrameType
from typing import Final, Literal, Protocol, TypeVar, cast

import anyio
import anyio.to_thread
import msgspec
import pytest
from peer_servers import running_http_server

import mcp_sansio_anyio
import mcp_sansio_anyio.manager as anyio_manager
import mcp_sansio_asyncio
import mcp_sansio_asyncio.manager as asyncio_manager
import mcp_sansio_sync
import mcp_sansio_sync.manager as sync_manager
from mcp_sansio import ClientConfig
from mcp_sansio.auth import Token
from mcp_sansio.hostconfig import ExpansionWarning, ServerEntry
from mcp_sansio.manager import NamedPrompt, NamedTool, ServerResource, ServerResourceTemplate
from mcp_sansio.manager_lifecycle import RestartPolicy, ServerStatus
from mcp_sansio.result_policy import ResultPolicy
from mcp_sansio.skills import LoadedSkill, Skill
from mcp_sansio.types import (
    CallToolResult,
    CompleteResult,
    GetPromptResult,
    Implementation,
    Prompt,
    PromptReference,
    ReadResourceResult,
    Resource,
    ResourceTemplate,
    ResourceTemplateReference,
    ServerCapabilities,
    TextContent,
    Tool,
)
from mcp_sansio_base._async.handlers import (
    ElicitationHandler,
    NotificationHandler,
    ProgressCallback,
    RootsArg,
    SamplingHandler,
)
from mcp_sansio_oauth import OAuth

DRIVER_NAMES: Final = ("asyncio", "anyio-asyncio", "anyio-trio", "sync")
# The drivers that can have several calls in flight (the blocking one makes one at a time).
CONCURRENT_DRIVERS: Final = ("asyncio", "anyio-asyncio", "anyio-trio")

# Short limits for misbehaving servers, so the whole matrix stays quick.
QUICK: Final = ClientConfig(
    request_timeout=10.0, initialize_timeout=10.0, shutdown_close_delay=0.2,
    shutdown_interrupt_delay=0.2, shutdown_terminate_delay=0.2,
)

T = TypeVar("T")
R = TypeVar("R")
U = TypeVar("U")
Transport = Literal["auto", "streamable-http", "sse"]


class SessionUnderTest(Protocol):
    """The client API every driver offers on every transport, seen through the adapter
    (all awaitable)."""

    @property
    def server_info(self) -> Implementation: ...
    @property
    def protocol_version(self) -> str: ...
    @property
    def server_capabilities(self) -> ServerCapabilities: ...
    @property
    def instructions(self) -> str | None: ...
    @property
    def closed(self) -> bool: ...

    async def list_tools(self, *, timeout: float | None = None) -> list[Tool]: ...
    async def call_tool(
        self, name: str, arguments: Mapping[str, object] | None = None, *,
        timeout: float | None = None, on_progress: ProgressCallback | None = None,
    ) -> CallToolResult: ...
    async def list_resources(self, *, timeout: float | None = None) -> list[Resource]: ...
    async def list_resource_templates(self, *, timeout: float | None = None) -> list[ResourceTemplate]: ...
    async def read_resource(self, uri: str, *, timeout: float | None = None) -> ReadResourceResult: ...
    async def subscribe_resource(self, uri: str, *, timeout: float | None = None) -> None: ...
    async def unsubscribe_resource(self, uri: str, *, timeout: float | None = None) -> None: ...
    async def list_prompts(self, *, timeout: float | None = None) -> list[Prompt]: ...
    async def get_prompt(
        self, name: str, arguments: Mapping[str, str] | None = None, *, timeout: float | None = None
    ) -> GetPromptResult: ...
    async def complete(
        self, ref: PromptReference | ResourceTemplateReference | Mapping[str, object],
        argument_name: str, value: str, *, context_arguments: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> CompleteResult: ...
    async def set_logging_level(self, level: str, *, timeout: float | None = None) -> None: ...
    async def ping(self, *, timeout: float | None = None) -> None: ...
    async def request(
        self, method: str, params: msgspec.Struct | Mapping[str, object] | None = None, *,
        timeout: float | None = None,
    ) -> msgspec.Struct: ...
    async def set_roots(self, roots: RootsArg) -> None: ...
    async def list_skills(self, *, timeout: float | None = None) -> list[Skill]: ...
    async def get_skill(self, uri: str, *, timeout: float | None = None) -> Skill: ...
    async def load_skill(self, skill: Skill | str, *, timeout: float | None = None) -> LoadedSkill: ...
    async def read_skill_file(
        self, skill: LoadedSkill, path: str, *, timeout: float | None = None
    ) -> bytes: ...
    @property
    def era(self) -> str: ...


class ClientUnderTest(SessionUnderTest, Protocol):
    """A client of a stdio server."""

    @property
    def stderr_tail(self) -> str: ...
    @property
    def pid(self) -> int | None: ...


class HttpUnderTest(SessionUnderTest, Protocol):
    """A client of an HTTP server."""

    @property
    def transport(self) -> str: ...
    @property
    def session_id(self) -> str | None: ...
    @property
    def token(self) -> Token | None: ...

    async def authorize(self) -> Token: ...


class WebSocketUnderTest(SessionUnderTest, Protocol):
    """A client of a WebSocket server."""

    @property
    def url(self) -> str: ...
    @property
    def subprotocol(self) -> str | None: ...


class ManagerUnderTest(Protocol):
    """The ``ServerManager`` API every driver offers, seen through the adapter (all awaitable)."""

    @property
    def states(self) -> dict[str, ServerStatus]: ...
    @property
    def warnings(self) -> list[ExpansionWarning]: ...

    async def connect_all(self) -> None: ...
    async def connect(self, name: str) -> SessionUnderTest: ...
    async def aclose(self) -> None: ...
    async def tools(self) -> list[NamedTool]: ...
    async def prompts(self) -> list[NamedPrompt]: ...
    async def resources(self) -> list[ServerResource | ServerResourceTemplate]: ...
    async def list_tools(self, name: str) -> list[Tool]: ...
    async def list_prompts(self, name: str) -> list[Prompt]: ...
    async def list_resources(self, name: str) -> list[Resource]: ...
    async def read_resource(self, name: str, uri: str) -> ReadResourceResult: ...
    async def call_tool(self, model_name: str, arguments: Mapping[str, object] | None = None, *,
                        timeout: float | None = None) -> CallToolResult: ...
    async def get_prompt(self, model_name: str, arguments: Mapping[str, str] | None = None, *,
                         timeout: float | None = None) -> GetPromptResult: ...


class Interrupted(BaseException):
    """What the alarm raises inside a blocking call, as Ctrl-C would."""


class Driver:
    """One driver under test: how to connect with it and how to cancel a call."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.backend = "trio" if name == "anyio-trio" else "asyncio"

    def connect(
        self, command: str, args: Sequence[str] = (), *, config: ClientConfig | None = None,
        env: Mapping[str, str] | None = None, on_sampling: SamplingHandler | None = None,
        on_elicitation: ElicitationHandler | None = None, roots: RootsArg | None = None,
        on_notification: NotificationHandler | None = None,
    ) -> AbstractAsyncContextManager[ClientUnderTest]:
        """``connect_stdio`` of this driver, with the tests' async handlers."""
        if self.name == "sync":
            return _blocking(mcp_sansio_sync.connect_stdio(
                command, args, config=config, env=env, on_sampling=_inline(on_sampling),
                on_elicitation=_inline(on_elicitation), roots=roots,
                on_notification=_inline(on_notification)))
        if self.name == "asyncio":
            return mcp_sansio_asyncio.connect_stdio(
                command, args, config=config, env=env, on_sampling=on_sampling,
                on_elicitation=on_elicitation, roots=roots, on_notification=on_notification)
        return mcp_sansio_anyio.connect_stdio(
            command, args, config=config, env=env, on_sampling=on_sampling,
            on_elicitation=on_elicitation, roots=roots, on_notification=on_notification)

    def connect_http(
        self, url: str, *, headers: Mapping[str, str] | None = None, transport: Transport = "auto",
        config: ClientConfig | None = None, on_sampling: SamplingHandler | None = None,
        on_elicitation: ElicitationHandler | None = None, roots: RootsArg | None = None,
        on_notification: NotificationHandler | None = None, auth: OAuth | None = None,
        proxy: str | bool = True, ssl_context: ssl.SSLContext | None = None,
    ) -> AbstractAsyncContextManager[HttpUnderTest]:
        """``connect_http`` of this driver, with the tests' async handlers."""
        if self.name == "sync":
            return _blocking(mcp_sansio_sync.connect_http(
                url, headers=headers, transport=transport, config=config,
                on_sampling=_inline(on_sampling), on_elicitation=_inline(on_elicitation),
                roots=roots, on_notification=_inline(on_notification), auth=auth, proxy=proxy,
                ssl_context=ssl_context))
        connect = (mcp_sansio_asyncio.connect_http if self.name == "asyncio"
                   else mcp_sansio_anyio.connect_http)
        return connect(url, headers=headers, transport=transport, config=config,
                       on_sampling=on_sampling, on_elicitation=on_elicitation, roots=roots,
                       on_notification=on_notification, auth=auth, proxy=proxy, ssl_context=ssl_context)

    def connect_websocket(
        self, url: str, *, headers: Mapping[str, str] | None = None, config: ClientConfig | None = None,
        ping_interval: float | None = None,
    ) -> AbstractAsyncContextManager[WebSocketUnderTest]:
        """``connect_websocket`` of this driver."""
        if self.name == "sync":
            return _blocking(mcp_sansio_sync.connect_websocket(
                url, headers=headers, config=config, ping_interval=ping_interval))
        connect = (mcp_sansio_asyncio.connect_websocket if self.name == "asyncio"
                   else mcp_sansio_anyio.connect_websocket)
        return connect(url, headers=headers, config=config, ping_interval=ping_interval)

    def manager(
        self, entries: Sequence[ServerEntry], *, env: Mapping[str, str] | None = None,
        client_config: ClientConfig | None = None, restart: RestartPolicy | None = None,
        result_dir: Path | None = None, result_policy: ResultPolicy | None = None,
        on_elicitation: ElicitationHandler | None = None,
    ) -> AbstractAsyncContextManager[ManagerUnderTest]:
        """This driver's ``ServerManager`` of ``entries`` (``env``: the process environment),
        with the tests' async handlers."""
        environ = os.environ if env is None else env
        if self.name == "sync":
            return _blocking(sync_manager.ServerManager(
                entries, env=environ, client_config=client_config, restart=restart, result_dir=result_dir,
                result_policy=result_policy, on_elicitation=_inline(on_elicitation)))
        manager = asyncio_manager.ServerManager if self.name == "asyncio" else anyio_manager.ServerManager
        return cast(AbstractAsyncContextManager[ManagerUnderTest], manager(
            entries, env=environ, client_config=client_config, restart=restart, result_dir=result_dir,
            result_policy=result_policy, on_elicitation=on_elicitation))

    def cancel_after(self, seconds: float | None) -> AbstractContextManager[Callable[[float], None]]:
        """Abandon what the block is waiting for after ``seconds``, and go on after it,
        the way this driver's users do: a task cancellation, a cancel scope, Ctrl-C.

        With ``seconds=None`` nothing is armed until the block calls what it is given with
        a delay, so a test can start the clock once the block has reached what it abandons
        (a loaded machine may take longer than any fixed delay to get there)."""
        if self.name == "sync":
            return _interrupt_after(seconds)
        if self.name == "asyncio":
            return _cancel_task_after(seconds)
        return _move_on_after(seconds)


# ---------------------------------------------------------------- helpers


class Restartable:
    """An HTTP peer (see ``running_http_server``) that a test can restart on its port;
    the new process knows none of the old one's sessions."""

    def __init__(self, command: str, args: Sequence[str], env: Mapping[str, str] | None, port: int,
                 path: str) -> None:
        self._start = partial(running_http_server, command, args, env, port, path)
        self._stack = contextlib.ExitStack()
        self.url = ""

    def __enter__(self) -> Restartable:
        self.url = self._stack.enter_context(self._start())
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stack.close()

    async def restart(self, *, blocking: bool = False) -> None:
        """Stop the server and start it again. In a worker thread (the default) an
        application's event loop keeps running meanwhile, so the async drivers see the old
        one go; ``blocking`` holds the loop, as a script that restarts the server between
        two calls does, so the next request meets the connection the old one closed."""
        if blocking:
            self._restart()
        else:
            await anyio.to_thread.run_sync(self._restart)

    def _restart(self) -> None:
        self._stack.close()
        self._stack = contextlib.ExitStack()
        self._stack.enter_context(self._start())



def text_of(result: CallToolResult) -> str:
    """The text of a tool result's first block."""
    block = result.content[0]
    assert isinstance(block, TextContent), block
    return block.text


def process_is_gone(pid: int | None) -> bool:
    """No process ``pid`` exists any more (not even a zombie)."""
    return pid is not None and not os.path.exists(f"/proc/{pid}")


async def until(client: SessionUnderTest, condition: Callable[[], bool], timeout: float = 10.0) -> None:
    """Ping until ``condition()`` holds (a blocking client reads only while a call waits,
    so the pings follow each other closely)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"the condition did not hold within {timeout} s")
        await client.ping()
        await anyio.sleep(0.001)


# ------------------------------------------------------ the blocking adapter


class _Awaitable:
    """A blocking client (or manager) whose methods are coroutines (that complete without
    suspending)."""

    def __init__(self, client: object) -> None:
        self._client = client
        self._wrapped: dict[object, _Awaitable] = {}  # each client a manager gave, wrapped once

    def __getattr__(self, name: str) -> object:
        attr = getattr(self._client, name)
        if not callable(attr):
            return attr

        async def call(*args: object, **kwargs: object) -> object:
            result = attr(*args, **kwargs)
            if isinstance(result, mcp_sansio_sync.Client):  # a manager's connect() gives a client:
                return self._wrapped.setdefault(result, _Awaitable(result))  # the same one each time
            return result

        return call


def _inline(handler: Callable[[T], Awaitable[R]] | None) -> Callable[[T], R] | None:
    """A blocking handler that runs the async ``handler`` to completion."""
    if handler is None:
        return None

    def call(arg: T) -> R:
        steps = handler(arg).__await__()
        try:
            next(steps)
        except StopIteration as stop:
            return cast(R, stop.value)
        raise RuntimeError("a handler used with the blocking driver must not suspend")

    return call


@contextlib.asynccontextmanager
async def _blocking(connect: AbstractContextManager[object]) -> AsyncIterator[U]:
    """Enter a blocking driver's ``connect_*`` (or manager) and yield it with awaitable methods."""
    with connect as client:
        yield cast(U, _Awaitable(client))


@contextlib.contextmanager
def _move_on_after(seconds: float | None) -> Iterator[Callable[[float], None]]:
    """A cancel scope whose deadline is ``seconds`` away, or set by the block."""
    with anyio.CancelScope() as scope:
        def arm(delay: float) -> None:
            scope.deadline = anyio.current_time() + delay

        if seconds is not None:
            arm(seconds)
        yield arm


@contextlib.contextmanager
def _cancel_task_after(seconds: float | None) -> Iterator[Callable[[float], None]]:
    """``task.cancel()`` after ``seconds``, caught at the end of the block (as ``asyncio.timeout``)."""
    task = asyncio.current_task()
    assert task is not None
    fired = False
    timers: list[asyncio.TimerHandle] = []

    def fire() -> None:
        nonlocal fired
        fired = True
        task.cancel()

    def arm(delay: float) -> None:
        timers.append(asyncio.get_running_loop().call_later(delay, fire))

    if seconds is not None:
        arm(seconds)
    try:
        yield arm
    except asyncio.CancelledError:
        if not fired:
            raise
        task.uncancel()
    finally:
        for timer in timers:
            timer.cancel()


@contextlib.contextmanager
def _interrupt_after(seconds: float | None) -> Iterator[Callable[[float], None]]:
    def fire(signum: int, frame: FrameType | None) -> None:
        raise Interrupted

    def arm(delay: float) -> None:
        signal.setitimer(signal.ITIMER_REAL, delay)

    previous = signal.signal(signal.SIGALRM, fire)
    if seconds is not None:
        arm(seconds)
    try:
        yield arm
    except Interrupted:
        pass
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
