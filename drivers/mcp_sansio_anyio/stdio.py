"""anyio driver for stdio servers: the same client on asyncio and on trio.

One task group holds the readers of stdout and stderr, the process-exit watcher, the
one timer and the handler tasks; stdin is our own non-blocking pipe, written from the
pump. The core decides everything; the driver performs what it is told (STYLE.md
section 8).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
from collections.abc import AsyncIterator, Mapping, Sequence
from functools import partial
from typing import Final

import anyio
from anyio.abc import ByteReceiveStream, Process

from mcp_sansio import (
    Action,
    ClientConfig,
    CloseInput,
    InterruptProcess,
    KillProcess,
    RequestFailed,
    StderrLog,
    StderrTail,
    StdioClient,
    TerminateProcess,
)
from mcp_sansio.errors import ConnectionClosed, McpSansioError
from mcp_sansio.events import InitializeFailed
from mcp_sansio.handlers import client_capabilities
from mcp_sansio_asyncio.client import ElicitationHandler, NotificationHandler, RootsArg, SamplingHandler

from ._loop import AnyioDriver, Waiter

__all__ = ["StdioConnection", "connect_stdio"]

_SIGNALS: Final = {InterruptProcess: signal.SIGINT, TerminateProcess: signal.SIGTERM,
                   KillProcess: signal.SIGKILL}
# After the exit, how long stderr may take to reach EOF, so failures carry its last words.
_STDERR_GRACE: Final = 0.5
_BROKEN: Final = (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError)


class StdioConnection(AnyioDriver):
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
        # stdin is our own non-blocking pipe, written from the pump; only what the pipe
        # cannot take at once waits for a task (no task hop per message).
        self._stdin: int | None = None
        self._unsent = bytearray()
        self._exited = anyio.Event()
        self._stderr_done = anyio.Event()
        self._stderr_tail = StderrTail(config.stderr_limit_bytes)
        self._stderr_lines = StderrLog(config)  # what of it reaches the log, bounded
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
        await self._enter()
        try:
            self._start(partial(self._read_stdout, process.stdout))
            self._start(partial(self._read_stderr, process.stderr))
            self._start(partial(self._watch_exit, process))
            waiter = Waiter()
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
        process = self._process
        if self._tg is None or process is None:
            return
        with anyio.CancelScope(shield=True):
            self._client.close(now=anyio.current_time())
            self._pump()
            await self._exited.wait()
            self._reap_group(process)
        try:
            await self._exit()
        finally:
            self._close_stdin()
            with anyio.CancelScope(shield=True):
                await process.aclose()

    # ------------------------------------------------------- AsyncClient API

    def _failure(self, event: RequestFailed | InitializeFailed) -> McpSansioError:
        return event.to_exception(returncode=self._returncode, stderr_tail=self._stderr_tail.text())

    # ------------------------------------------------------------- the pump

    def _pump(self) -> None:
        client = self._client
        event = client.next_event()
        if event is not None:  # mostly none after a request goes out: no call then
            self._deliver_events(event)
        action = client.next_action()
        while action is not None:
            self._perform(action)
            action = client.next_action()
        data = client.data_to_send()
        if data:
            self._write(data)
        self._arm(client.next_deadline())

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

    async def _read_stdout(self, stream: ByteReceiveStream) -> None:
        client = self._client
        with contextlib.suppress(*_BROKEN):
            async for chunk in stream:
                client.receive_data(chunk, anyio.current_time())
                self._pump()
        client.receive_data(b"", anyio.current_time())
        self._pump()

    async def _read_stderr(self, stream: ByteReceiveStream) -> None:
        tail, lines, logger = self._stderr_tail, self._stderr_lines, self._stderr_log
        with contextlib.suppress(*_BROKEN):
            async for chunk in stream:
                tail.feed(chunk)
                for line in lines.feed(chunk, anyio.current_time()):
                    logger.info("%s", line)
        for line in lines.close(anyio.current_time()):
            logger.info("%s", line)
        self._stderr_done.set()

    async def _drain_stdin(self) -> None:
        """Finish a write the pipe could not take at once, as the server reads."""
        with contextlib.suppress(anyio.ClosedResourceError):  # CloseInput came first
            while self._unsent and self._stdin is not None:
                await anyio.wait_writable(self._stdin)
                # Woken but not yet run when another task closed stdin (trio raises
                # ClosedResourceError only to a task still waiting): then stop.
                if self._stdin is None:
                    return
                del self._unsent[: self._send(self._unsent)]

    async def _watch_exit(self, process: Process) -> None:
        self._returncode = await process.wait()
        with anyio.move_on_after(_STDERR_GRACE):
            await self._stderr_done.wait()
        self._client.process_exited(self._returncode, anyio.current_time())
        self._pump()
        self._exited.set()


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
