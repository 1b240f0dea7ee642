"""Blocking driver for stdio servers, and the reference driver (STYLE.md section 8).

``subprocess`` + ``selectors`` + ``time.monotonic()`` on one thread. A call runs the
loop until its answer arrives: select on the pipes (and on the process, where pidfds
exist) with the core's next deadline as the timeout, feed the core what arrived,
fire its deadline when due, then pump. Stdin is non-blocking: a large write is queued
and finished as the pipe drains, while stdout and stderr keep being read.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import Final, Unpack

from mcp_sansio import Action, CloseInput
from mcp_sansio_base._sync.connect import Connect
from mcp_sansio_base._sync.handlers import StdioOptions, resolve
from mcp_sansio_base.stdio import CONNECT_DOC, PipeStdin, StdioProcess, cannot_start, signal_group

from ._loop import BlockingDriver

__all__ = ["StdioConnection", "connect_stdio"]

_CHUNK: Final = 65536
# Once the process has exited, at most this many reads per pipe collect what it left
# there (a grandchild holding the pipe could otherwise keep us reading forever).
_DRAIN_READS: Final = 64
# Without pidfds, how often the exit is polled for.
_POLL: Final = 0.05


class StdioConnection(StdioProcess, PipeStdin, BlockingDriver):
    """A client connected to a server subprocess; use it through :func:`connect_stdio`."""

    def __init__(self, command: str, args: Sequence[str], options: StdioOptions) -> None:
        settings = resolve(options)
        core = self._stdio_core(command, args, settings.config, settings.handlers.capabilities(), options)
        super().__init__(core, settings.handlers)
        self._proc: subprocess.Popen[bytes] | None = None
        self._selector = selectors.DefaultSelector()
        self._stdin: int | None = None  # fd, None once closed
        self._unsent = bytearray()  # what stdin has not taken yet
        self._open_pipes: set[int] = set()  # 1 (stdout), 2 (stderr) until their end
        self._exit_fd: int | None = None  # pidfd, readable once the process exited
        self._exited = False
        self._closed = False

    @property
    def pid(self) -> int | None:
        """The server's process id."""
        return self._proc.pid if self._proc is not None else None

    # ----------------------------------------------------------- lifecycle

    def _start(self) -> None:
        try:
            proc = subprocess.Popen(
                self._argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, env=self._env, cwd=self._cwd, bufsize=0, start_new_session=True,
            )
        except OSError as exc:
            self._closed = True
            self._selector.close()
            raise cannot_start(self._command, exc) from exc
        self._proc = proc
        assert proc.stdin and proc.stdout and proc.stderr  # all three are pipes
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            os.set_blocking(pipe.fileno(), False)
        self._stdin = proc.stdin.fileno()
        self._selector.register(proc.stdout.fileno(), selectors.EVENT_READ, self._read_stdout)
        self._selector.register(proc.stderr.fileno(), selectors.EVENT_READ, self._read_stderr)
        self._open_pipes = {1, 2}
        if sys.platform == "linux":
            with contextlib.suppress(OSError):  # before Linux 5.3: poll for the exit instead
                self._exit_fd = os.pidfd_open(proc.pid)
                self._selector.register(self._exit_fd, selectors.EVENT_READ, self._on_exit)
        self._handshake(lambda: self._client.start(now=time.monotonic()))

    def close(self) -> None:
        """Close: pending calls fail, then stdin closes and the shutdown ladder runs until
        the process has exited; no child or pipe is left behind."""
        proc = self._proc
        if self._closed or proc is None:
            return
        self._closed = True
        try:
            self._client.close(now=time.monotonic())
            self._flush()
            while not self._exited:
                self._step()
        finally:
            if not self._exited:  # interrupted (KeyboardInterrupt): end it the hard way
                self._signal(signal.SIGKILL)
                proc.wait()
            self._signal(signal.SIGKILL)  # whatever it left running in its group
            self._close_stdin()
            for pipe in (proc.stdout, proc.stderr):
                if pipe is not None:
                    pipe.close()
            if self._exit_fd is not None:
                os.close(self._exit_fd)
            self._selector.close()

    # -------------------------------------------------------- Client contract

    def _step(self, wait: bool = True) -> None:
        deadline = self._client.next_deadline()
        timeout = self._timeout(deadline, wait)
        polling = self._exit_fd is None and not self._exited
        if polling:
            timeout = _POLL if timeout is None else min(timeout, _POLL)
        for key, _ in self._selector.select(timeout):
            key.data()
        if polling and self._proc is not None and self._proc.poll() is not None:
            self._on_exit()
        self._fire(deadline)

    def _pump(self) -> None:
        data = self._drain()
        if data:
            self._write(data)

    # ---------------------------------------------------------------- output

    def _perform(self, action: Action) -> None:
        if isinstance(action, CloseInput):
            self._close_stdin()
        elif not self._exited:
            self._signal(self._signal_for(action))

    def _signal(self, sig: int) -> None:
        """Signal the server's process group (it leads one: ``start_new_session``)."""
        assert self._proc is not None
        signal_group(self._proc.pid, sig)

    def _watch_stdin(self) -> None:
        assert self._stdin is not None
        self._selector.register(self._stdin, selectors.EVENT_WRITE, self._write_more)

    def _write_more(self) -> None:
        if self._stdin is None:
            return
        del self._unsent[: self._send(self._unsent)]
        if self._stdin is not None and not self._unsent:
            self._selector.unregister(self._stdin)

    def _close_stdin(self) -> None:
        if self._stdin is None:
            return
        if self._unsent:
            self._selector.unregister(self._stdin)
            self._unsent.clear()
        self._stdin = None
        assert self._proc is not None and self._proc.stdin is not None
        self._proc.stdin.close()

    # ----------------------------------------------------------------- input

    def _read_stdout(self) -> bool:
        """Feed one chunk of stdout (or its EOF) to the core; False if nothing was read."""
        data = self._read_pipe(1)
        if data is None:
            return False
        self._client.receive_data(data, time.monotonic())
        return bool(data)

    def _read_stderr(self) -> bool:
        """Record one chunk of stderr in the tail and log its lines; False if nothing was read."""
        data = self._read_pipe(2)
        if data is None:
            return False
        self._stderr(data)
        return bool(data)

    def _read_pipe(self, which: int) -> bytes | None:
        """One chunk of the server's stdout (1) or stderr (2): ``None`` if nothing is there
        or it has ended; ``b""`` at its end, when it leaves the selector."""
        if which not in self._open_pipes:
            return None
        assert self._proc is not None
        pipe = self._proc.stdout if which == 1 else self._proc.stderr
        assert pipe is not None
        data = _read(pipe.fileno())
        if data == b"":
            self._open_pipes.discard(which)
            self._selector.unregister(pipe.fileno())
        return data

    def _on_exit(self) -> None:
        assert self._proc is not None
        self._returncode = self._proc.wait()
        if self._exit_fd is not None:
            self._selector.unregister(self._exit_fd)
        # Its last answers and words may still sit in the pipes: take them first.
        for _ in range(_DRAIN_READS):
            if not (self._read_stdout() | self._read_stderr()):
                break
        self._exited = True
        self._client.process_exited(self._returncode, time.monotonic())


def _read(fd: int) -> bytes | None:
    """One non-blocking read: ``None`` if nothing is there, ``b""`` at EOF."""
    try:
        return os.read(fd, _CHUNK)
    except BlockingIOError:
        return None
    except OSError:  # EIO and the like: the pipe is as good as closed
        return b""


def connect_stdio(
    command: str, args: Sequence[str] = (), **options: Unpack[StdioOptions]
) -> Connect[StdioConnection]:
    return Connect(lambda: StdioConnection(command, args, options))


connect_stdio.__doc__ = CONNECT_DOC
