"""anyio driver for stdio servers: the same client on asyncio and on trio.

One task group holds the readers of stdout and stderr, the process-exit watcher, the
one timer and the handler tasks; stdin is our own non-blocking pipe, written from the
pump. The core decides everything; the driver performs what it is told (STYLE.md
section 8).
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Sequence
from functools import partial
from typing import Final, Unpack

import anyio
from anyio.abc import ByteReceiveStream, Process

from mcp_sansio import Action, CloseInput
from mcp_sansio_base._async.connect import Connect
from mcp_sansio_base._async.handlers import StdioOptions, resolve
from mcp_sansio_base.stdio import CONNECT_DOC, PipeStdin, StdioProcess, signal_group

from ._loop import AnyioDriver, Waiter

__all__ = ["StdioConnection", "connect_stdio"]

# After the exit, how long stderr may take to reach EOF, so failures carry its last words.
_STDERR_GRACE: Final = 0.5
_BROKEN: Final = (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError)


class StdioConnection(StdioProcess, PipeStdin, AnyioDriver):
    """A client connected to a server subprocess; use it through :func:`connect_stdio`.

    Leaving it waits, shielded from cancellation, until the process has exited.
    """

    def __init__(self, command: str, args: Sequence[str], options: StdioOptions) -> None:
        settings = resolve(options)
        core = self._stdio_core(command, args, settings.config, settings.handlers.capabilities(), options)
        super().__init__(core, settings.handlers)
        self._process: Process | None = None
        # stdin is our own non-blocking pipe, written from the pump; only what the pipe
        # cannot take at once waits for a task (no task hop per message).
        self._stdin: int | None = None
        self._unsent = bytearray()
        self._exited = anyio.Event()
        self._stderr_done = anyio.Event()

    @property
    def pid(self) -> int | None:
        """The server's process id."""
        return self._process.pid if self._process is not None else None

    # ----------------------------------------------------------- lifecycle

    async def _start(self) -> None:
        child_stdin, self._stdin = os.pipe()
        os.set_blocking(self._stdin, False)
        with self._spawning(self._close_stdin, child_stdin):
            process = await anyio.open_process(self._argv, stdin=child_stdin, env=self._env, cwd=self._cwd,
                                               start_new_session=True)
        self._process = process
        assert process.stdout and process.stderr  # both are pipes
        await self._enter()
        try:
            self._start_task(partial(self._read_stdout, process.stdout))
            self._start_task(partial(self._read_stderr, process.stderr))
            self._start_task(partial(self._watch_exit, process))
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

    # ------------------------------------------------------------- the pump

    def _pump(self) -> None:
        data = self._drain()
        if data:
            self._write(data)
        self._arm(self._client.next_deadline())

    def _perform(self, action: Action) -> None:
        if isinstance(action, CloseInput):
            self._close_stdin()
            return
        if self._process is not None and self._returncode is None:
            signal_group(self._process.pid, self._signal_for(action))

    def _reap_group(self, process: Process) -> None:
        """Kill anything the server left running in its process group."""
        signal_group(process.pid, signal.SIGKILL)

    def _watch_stdin(self) -> None:
        self._start_task(self._drain_stdin)

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
        with contextlib.suppress(*_BROKEN):
            async for chunk in stream:
                self._stderr(chunk)
        self._stderr(b"")
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


def connect_stdio(
    command: str, args: Sequence[str] = (), **options: Unpack[StdioOptions]
) -> Connect[StdioConnection]:
    return Connect(lambda: StdioConnection(command, args, options))


connect_stdio.__doc__ = CONNECT_DOC
