"""anyio driver for stdio servers: the same client on asyncio and on trio.

One task group holds the readers of stdout and stderr, the process-exit watcher, the
one timer and the handler tasks; stdin is our own non-blocking pipe, written from the
pump. The core decides everything; the driver performs what it is told (STYLE.md
section 8).
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import signal
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from functools import partial
from typing import Final

import anyio
import msgspec
from anyio.abc import ByteReceiveStream, Process, TaskGroup

from mcp_sansio import (
    Action,
    ClientConfig,
    CloseInput,
    InterruptProcess,
    KillProcess,
    RequestFailed,
    StderrTail,
    StdioClient,
    TerminateProcess,
)
from mcp_sansio.errors import ConnectionClosed, McpSansioError
from mcp_sansio.events import InitializeFailed, RequestId
from mcp_sansio.handlers import client_capabilities
from mcp_sansio_asyncio.client import (
    AsyncClient,
    ElicitationHandler,
    NotificationHandler,
    ProgressCallback,
    RootsArg,
    SamplingHandler,
)

__all__ = ["StdioConnection", "connect_stdio"]

log = logging.getLogger("mcp_sansio.anyio")

_SIGNALS: Final = {InterruptProcess: signal.SIGINT, TerminateProcess: signal.SIGTERM,
                   KillProcess: signal.SIGKILL}
# After the exit, how long stderr may take to reach EOF, so failures carry its last words.
_STDERR_GRACE: Final = 0.5
_BROKEN: Final = (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError)


class _Waiter:
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


class StdioConnection(AsyncClient):
    """A client connected to a server subprocess; use it through :func:`connect_stdio`."""

    def __init__(
        self,
        command: str,
        args: Sequence[str],
        *,
        env: Mapping[str, str] | None,
        cwd: str | os.PathLike[str] | None,
        config: ClientConfig,
        on_sampling: SamplingHandler | None,
        on_elicitation: ElicitationHandler | None,
        roots: RootsArg | None,
        on_notification: NotificationHandler | None,
    ) -> None:
        caps = client_capabilities(sampling=on_sampling is not None,
                                   elicitation=on_elicitation is not None, roots=roots is not None)
        self._client = StdioClient(config, caps)
        super().__init__(self._client, on_sampling=on_sampling, on_elicitation=on_elicitation,
                         roots=roots, on_notification=on_notification)
        self._command = command
        self._args = list(args)
        self._env = dict(env) if env is not None else None
        self._cwd = cwd
        self._process: Process | None = None
        self._tg: TaskGroup | None = None
        self._task_scopes: set[anyio.CancelScope] = set()
        self._stopping = False
        # stdin is our own non-blocking pipe, written from the pump; only what the pipe
        # cannot take at once waits for a task (no task hop per message).
        self._stdin: int | None = None
        self._unsent = bytearray()
        self._flush_pending = False
        self._timer_scope: anyio.CancelScope | None = None
        self._timer_at: float | None = None
        self._exited = anyio.Event()
        self._stderr_done = anyio.Event()
        self._stderr_tail = StderrTail(config.stderr_limit_bytes)
        self._stderr_log = logging.getLogger(f"mcp_sansio.stderr.{os.path.basename(command)}")
        self._returncode: int | None = None

    @property
    def pid(self) -> int | None:
        """The server's process id."""
        return self._process.pid if self._process is not None else None

    @property
    def stderr_tail(self) -> str:
        """What the server last wrote to stderr (bounded by ``stderr_limit_bytes``)."""
        return self._stderr_tail.text()

    # ----------------------------------------------------------- lifecycle

    async def _open(self) -> None:
        env = None if self._env is None else {**os.environ, **self._env}
        child_stdin, self._stdin = os.pipe()
        os.set_blocking(self._stdin, False)
        try:
            process = await anyio.open_process([self._command, *self._args], stdin=child_stdin,
                                               env=env, cwd=self._cwd, start_new_session=True)
        except BaseException as exc:
            self._close_stdin()
            if isinstance(exc, OSError):
                raise ConnectionClosed(f"cannot start {self._command!r}: {exc.strerror or exc}") from exc
            raise
        finally:
            os.close(child_stdin)
        self._process = process
        assert process.stdout and process.stderr  # both are pipes
        # Entered here and exited in aclose(): a body exception must not pass through the
        # task group, or it would come out wrapped in an ExceptionGroup.
        tg = anyio.create_task_group()
        await tg.__aenter__()
        self._tg = tg
        try:
            self._start(partial(self._read_stdout, process.stdout))
            self._start(partial(self._read_stderr, process.stderr))
            self._start(partial(self._watch_exit, process))
            self._start(self._run_timer)
            waiter = _Waiter()
            self._init_waiter = waiter
            self._client.start(now=anyio.current_time())
            self._pump()
            await waiter.wait()
        except BaseException:
            await self.aclose()
            raise

    async def aclose(self) -> None:
        """Close: pending calls fail, then stdin closes and the shutdown ladder runs until
        the process has exited; no child, task or pipe is left behind."""
        tg, process = self._tg, self._process
        if tg is None or process is None:
            return
        with anyio.CancelScope(shield=True):
            self._client.close(now=anyio.current_time())
            self._pump()
            await self._exited.wait()
            self._reap_group(process)
        self._stopping = True
        for scope in self._task_scopes:
            scope.cancel()
        try:
            await tg.__aexit__(None, None, None)
        finally:
            self._tg = None
            self._close_stdin()
            with anyio.CancelScope(shield=True):
                await process.aclose()

    # ------------------------------------------------------- AsyncClient API

    def _now(self) -> float:
        return anyio.current_time()

    async def _wait(
        self, request_id: RequestId, on_progress: ProgressCallback | None = None
    ) -> msgspec.Struct:
        waiter = _Waiter()
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
                    self._client.cancel(request_id, now=anyio.current_time(),
                                        reason="cancelled by the caller")
                self._pump()

    def _spawn(self, fn: Callable[[], Awaitable[None]]) -> None:
        self._start(partial(_logged, fn))

    def _failure(self, event: RequestFailed | InitializeFailed) -> McpSansioError:
        return event.to_exception(returncode=self._returncode, stderr_tail=self._stderr_tail.text())

    def _flush(self) -> None:
        # A lone call goes out at once; calls started together go out in one write, from
        # a task that runs once they have all been queued.
        if self._flush_pending:
            return
        if len(self._waiters) <= 1:
            self._pump()
        else:
            self._flush_pending = True
            self._start(self._flush_later)

    async def _flush_later(self) -> None:
        self._flush_pending = False
        self._pump()

    # ------------------------------------------------------------- the pump

    def _pump(self) -> None:
        client = self._client
        self._deliver_events()
        action = client.next_action()
        while action is not None:
            self._perform(action)
            action = client.next_action()
        data = client.data_to_send()
        if data:
            self._write(data)
        deadline = client.next_deadline()
        # Only ever move the timer earlier: waking early is harmless (STYLE.md section 8).
        if deadline is not None and (self._timer_at is None or deadline < self._timer_at):
            self._timer_at = deadline
            if self._timer_scope is not None:
                self._timer_scope.deadline = deadline

    def _perform(self, action: Action) -> None:
        if isinstance(action, CloseInput):
            self._close_stdin()
            return
        sig = _SIGNALS[type(action)]
        if self._process is not None and self._returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):  # already gone
                os.killpg(self._process.pid, sig)

    def _reap_group(self, process: Process) -> None:
        """Kill anything the server left running in its process group."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)

    def _write(self, data: bytes) -> None:
        if self._stdin is None:
            return
        if self._unsent:  # still waiting for the pipe: keep the order
            self._unsent += data
            return
        sent = self._send(data)
        if self._stdin is not None and sent < len(data):
            self._unsent += memoryview(data)[sent:]
            self._start(self._drain_stdin)

    def _send(self, data: bytes | bytearray) -> int:
        """Write what the pipe takes now; a broken pipe closes stdin (the server's stdout
        EOF or its exit tells the core)."""
        assert self._stdin is not None
        try:
            return os.write(self._stdin, data)
        except BlockingIOError:
            return 0
        except OSError:
            self._close_stdin()
            return 0

    def _close_stdin(self) -> None:
        fd, self._stdin = self._stdin, None
        if fd is not None:
            self._unsent.clear()
            anyio.notify_closing(fd)  # wakes _drain_stdin, if it waits
            os.close(fd)

    # ---------------------------------------------------------------- tasks

    def _start(self, fn: Callable[[], Awaitable[None]]) -> None:
        """Run ``fn`` in the task group, shielded: a cancelled body must not stop the
        readers and the exit watcher that its shutdown needs; only :meth:`aclose` does."""
        if self._tg is not None and not self._stopping:
            self._tg.start_soon(self._shielded, fn)

    async def _shielded(self, fn: Callable[[], Awaitable[None]]) -> None:
        if self._stopping:  # started too late: aclose() already stopped the others
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
            self._client.handle_timeout(now if at is None else max(at, now))
            self._pump()

    async def _read_stdout(self, stream: ByteReceiveStream) -> None:
        client = self._client
        with contextlib.suppress(*_BROKEN):
            async for chunk in stream:
                client.receive_data(chunk, anyio.current_time())
                self._pump()
        client.receive_data(b"", anyio.current_time())
        self._pump()

    async def _read_stderr(self, stream: ByteReceiveStream) -> None:
        tail, logger = self._stderr_tail, self._stderr_log
        with contextlib.suppress(*_BROKEN):
            async for chunk in stream:
                for line in tail.feed(chunk, want_lines=logger.isEnabledFor(logging.INFO)):
                    logger.info("%s", line)
        for line in tail.flush():
            logger.info("%s", line)
        self._stderr_done.set()

    async def _drain_stdin(self) -> None:
        """Finish a write the pipe could not take at once, as the server reads."""
        with contextlib.suppress(anyio.ClosedResourceError):  # CloseInput came first
            while self._unsent and self._stdin is not None:
                await anyio.wait_writable(self._stdin)
                del self._unsent[: self._send(self._unsent)]

    async def _watch_exit(self, process: Process) -> None:
        self._returncode = await process.wait()
        with anyio.move_on_after(_STDERR_GRACE):
            await self._stderr_done.wait()
        self._client.process_exited(self._returncode, anyio.current_time())
        self._pump()
        self._exited.set()


async def _logged(fn: Callable[[], Awaitable[None]]) -> None:
    """Run a handler task; an application bug is logged, never fatal to the connection."""
    try:
        await fn()
    except Exception:
        log.exception("a handler of the MCP client raised")


@contextlib.asynccontextmanager
async def connect_stdio(
    command: str,
    args: Sequence[str] = (),
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    config: ClientConfig | None = None,
    on_sampling: SamplingHandler | None = None,
    on_elicitation: ElicitationHandler | None = None,
    roots: RootsArg | None = None,
    on_notification: NotificationHandler | None = None,
) -> AsyncIterator[StdioConnection]:
    """Start ``command args`` and speak MCP to it over stdio, on asyncio or trio.

    ``env`` entries are added to the current environment. Handlers answer the server's
    requests; without one, that capability is not declared. Leaving the block closes
    the connection and waits (shielded from cancellation) until the process has exited.

    Raises (on entering):
        ConnectionClosed: the server could not start or exited during the handshake.
        UnsupportedProtocolVersion: it speaks no revision we support.
        RequestTimeout: it did not complete the handshake within ``initialize_timeout``.
    """
    conn = StdioConnection(
        command, args, env=env, cwd=cwd, config=config or ClientConfig(), on_sampling=on_sampling,
        on_elicitation=on_elicitation, roots=roots, on_notification=on_notification,
    )
    await conn._open()
    try:
        yield conn
    finally:
        await conn.aclose()
