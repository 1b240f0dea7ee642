"""asyncio driver for stdio servers: a subprocess, one timer, and the core's pump.

The server's stdout is a pipe of the driver's own, read from the loop's selector
(``add_reader``); stderr and the exit come through a ``SubprocessProtocol``. The core
decides everything, and the driver performs what it is told (STYLE.md section 8).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Sequence
from typing import Final, Unpack

from mcp_sansio import Action, CloseInput
from mcp_sansio_base._async.handlers import StdioOptions, resolve
from mcp_sansio_base.stdio import CONNECT_DOC, StdioProcess, signal_group

from ._loop import Connect, LoopDriver

__all__ = ["StdioConnection", "connect_stdio"]

# Read at most what a pipe holds (64 KiB): a bigger buffer is allocated, and with glibc
# mapped and unmapped, on every read.
_READ_SIZE: Final = 65536


class _Protocol(asyncio.SubprocessProtocol):
    """stderr (the one pipe asyncio reads for us) and the exit."""

    def __init__(self, owner: StdioConnection) -> None:
        self._owner = owner

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        self._owner._stderr(data)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd == 2:
            self._owner._stderr_closed()

    def process_exited(self) -> None:
        self._owner._exited()


class StdioConnection(StdioProcess, LoopDriver):
    """A client connected to a server subprocess; use it through :func:`connect_stdio`."""

    def __init__(self, command: str, args: Sequence[str], options: StdioOptions) -> None:
        settings = resolve(options)
        core = self._stdio_core(command, args, settings.config, settings.handlers.capabilities(), options)
        super().__init__(core, settings.handlers)
        self._transport: asyncio.SubprocessTransport | None = None
        self._stdin: asyncio.WriteTransport | None = None
        self._stdout: int | None = None  # the read end of the server's stdout, until EOF
        self._exit = self._loop.create_future()
        self._stderr_done = self._loop.create_future()

    @property
    def pid(self) -> int | None:
        """The server's process id."""
        return self._transport.get_pid() if self._transport else None

    # ----------------------------------------------------------- lifecycle

    async def _start(self) -> None:
        # stdout is our own pipe, read when the selector says so: asyncio's subprocess
        # transport hands every read to its protocol through call_soon, which costs one
        # loop iteration more per reply.
        stdout, child_stdout = os.pipe()
        with self._spawning(lambda: os.close(stdout), child_stdout):
            transport, _ = await self._loop.subprocess_exec(
                lambda: _Protocol(self), *self._argv,
                stdin=asyncio.subprocess.PIPE, stdout=child_stdout,
                stderr=asyncio.subprocess.PIPE, env=self._env, cwd=self._cwd, start_new_session=True,
            )
        self._transport = transport
        self._stdin = transport.get_pipe_transport(0)  # type: ignore[assignment]  # PIPE stdin is a WriteTransport
        os.set_blocking(stdout, False)
        self._stdout = stdout
        self._loop.add_reader(stdout, self._read_stdout)
        await self._handshake(lambda now: self._client.start(now=now))

    async def aclose(self) -> None:
        """Close: pending calls fail, then stdin closes and the shutdown ladder runs until
        the process has exited; no child, task or pipe is left behind."""
        if self._transport is None:
            return
        self._client.close(now=self._loop.time())
        self._pump()
        try:
            await asyncio.shield(self._exit)
        finally:
            self._stop_tasks()
            self._reap_group()
            self._close_stdout()
            self._transport.close()
            self._transport = None

    # ------------------------------------------------------------- the pump

    def _pump(self) -> None:
        data = self._drain()
        if data and self._stdin is not None and not self._stdin.is_closing():
            self._stdin.write(data)
        self._arm(self._client.next_deadline())

    def _perform(self, action: Action) -> None:
        if isinstance(action, CloseInput):
            if self._stdin is not None:
                self._stdin.close()
            return
        if self._transport is not None and self._returncode is None:
            signal_group(self._transport.get_pid(), self._signal_for(action))

    def _reap_group(self) -> None:
        """Kill anything the server left running in its process group."""
        if self._transport is not None:
            signal_group(self._transport.get_pid(), signal.SIGKILL)

    # ------------------------------------------------------------ callbacks

    def _read_stdout(self) -> None:
        """The server's stdout is readable: what it holds (``b""`` at EOF) goes to the core."""
        assert self._stdout is not None  # the reader goes with the pipe
        try:
            data = os.read(self._stdout, _READ_SIZE)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""  # the pipe broke: as at EOF, the core fails what is pending
        if not data:
            self._close_stdout()
        self._client.receive_data(data, self._loop.time())
        self._pump()

    def _close_stdout(self) -> None:
        fd, self._stdout = self._stdout, None
        if fd is not None:
            self._loop.remove_reader(fd)
            os.close(fd)

    def _stderr_closed(self) -> None:
        self._stderr(b"")
        if not self._stderr_done.done():
            self._stderr_done.set_result(None)

    def _exited(self) -> None:
        if self._transport is None:
            # Its start was abandoned inside subprocess_exec (which killed and reaped it),
            # or aclose() was, after closing the transport: nobody waits for the exit.
            return
        self._returncode = self._transport.get_returncode()
        self._loop.create_task(self._finish_exit())

    async def _finish_exit(self) -> None:
        # Let stderr drain (bounded) so the failure carries the server's last words.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self._stderr_done), 0.5)
        self._client.process_exited(self._returncode, self._loop.time())
        self._pump()
        if not self._exit.done():
            self._exit.set_result(None)


def connect_stdio(
    command: str, args: Sequence[str] = (), **options: Unpack[StdioOptions]
) -> Connect[StdioConnection]:
    return Connect(lambda: StdioConnection(command, args, options))


connect_stdio.__doc__ = CONNECT_DOC
