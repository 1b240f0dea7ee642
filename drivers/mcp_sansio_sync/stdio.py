"""Blocking driver for stdio servers, and the reference driver (STYLE.md section 8).

``subprocess`` + ``selectors`` + ``time.monotonic()`` on one thread. A call runs the
loop until its answer arrives: select on the pipes (and on the process, where pidfds
exist) with the core's next deadline as the timeout, feed the core what arrived,
fire its deadline when due, then pump. Stdin is non-blocking: a large write is queued
and finished as the pipe drains, while stdout and stderr keep being read.
"""

from __future__ import annotations

import contextlib
import logging
import os
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Final

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

from .client import Client, ElicitationHandler, NotificationHandler, RootsArg, SamplingHandler

__all__ = ["StdioConnection", "connect_stdio"]

_SIGNALS: Final = {InterruptProcess: signal.SIGINT, TerminateProcess: signal.SIGTERM,
                   KillProcess: signal.SIGKILL}
_CHUNK: Final = 65536
# Once the process has exited, at most this many reads per pipe collect what it left
# there (a grandchild holding the pipe could otherwise keep us reading forever).
_DRAIN_READS: Final = 64
# Without pidfds, how often the exit is polled for.
_POLL: Final = 0.05


class StdioConnection(Client):
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
        self._proc: subprocess.Popen[bytes] | None = None
        self._selector = selectors.DefaultSelector()
        self._stdin: int | None = None  # fd, None once closed
        self._unsent = bytearray()  # what stdin has not taken yet
        self._stdout_open = self._stderr_open = False
        self._exit_fd: int | None = None  # pidfd, readable once the process exited
        self._returncode: int | None = None
        self._exited = False
        self._closed = False
        self._stderr_tail = StderrTail(config.stderr_limit_bytes)
        self._stderr_lines = StderrLog(config)  # what of it reaches the log, bounded
        self._stderr_log = logging.getLogger(f"mcp_sansio.stderr.{os.path.basename(command)}")

    @property
    def pid(self) -> int | None:
        """The server's process id."""
        return self._proc.pid if self._proc is not None else None

    @property
    def stderr_tail(self) -> str:
        """What the server last wrote to stderr (bounded by ``stderr_limit_bytes``)."""
        return self._stderr_tail.text()

    # ----------------------------------------------------------- lifecycle

    def _start(self) -> None:
        env = None if self._env is None else {**os.environ, **self._env}
        try:
            proc = subprocess.Popen(
                [self._command, *self._args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, env=env, cwd=self._cwd, bufsize=0, start_new_session=True,
            )
        except OSError as exc:
            self._closed = True
            self._selector.close()
            raise ConnectionClosed(f"cannot start {self._command!r}: {exc.strerror or exc}") from exc
        self._proc = proc
        assert proc.stdin and proc.stdout and proc.stderr  # all three are pipes
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            os.set_blocking(pipe.fileno(), False)
        self._stdin = proc.stdin.fileno()
        self._selector.register(proc.stdout.fileno(), selectors.EVENT_READ, self._read_stdout)
        self._selector.register(proc.stderr.fileno(), selectors.EVENT_READ, self._read_stderr)
        self._stdout_open = self._stderr_open = True
        if sys.platform == "linux":
            with contextlib.suppress(OSError):  # before Linux 5.3: poll for the exit instead
                self._exit_fd = os.pidfd_open(proc.pid)
                self._selector.register(self._exit_fd, selectors.EVENT_READ, self._on_exit)
        try:
            self._initialize()
        except BaseException:
            self.close()
            raise

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

    def _now(self) -> float:
        return time.monotonic()

    def _failure(self, event: RequestFailed | InitializeFailed) -> McpSansioError:
        return event.to_exception(returncode=self._returncode, stderr_tail=self._stderr_tail.text())

    def _step(self) -> None:
        client = self._client
        deadline = client.next_deadline()
        timeout = None if deadline is None else max(deadline - time.monotonic(), 0.0)
        polling = self._exit_fd is None and not self._exited
        if polling:
            timeout = _POLL if timeout is None else min(timeout, _POLL)
        for key, _ in self._selector.select(timeout):
            key.data()
        if polling and self._proc is not None and self._proc.poll() is not None:
            self._on_exit()
        if deadline is not None:
            now = time.monotonic()
            if now >= deadline:
                client.handle_timeout(now)
        self._flush()

    def _flush(self) -> None:
        client = self._client
        self._deliver_events()
        while (action := client.next_action()) is not None:
            self._perform(action)
        data = client.data_to_send()
        if data:
            self._write(data)

    # ---------------------------------------------------------------- output

    def _perform(self, action: Action) -> None:
        if isinstance(action, CloseInput):
            self._close_stdin()
        elif not self._exited:
            self._signal(_SIGNALS[type(action)])

    def _signal(self, sig: int) -> None:
        """Signal the server's process group (it leads one: ``start_new_session``)."""
        assert self._proc is not None
        with contextlib.suppress(ProcessLookupError, PermissionError):  # already gone
            os.killpg(self._proc.pid, sig)

    def _write(self, data: bytes) -> None:
        if self._stdin is None:
            return
        if self._unsent:  # still waiting for the pipe: keep the order
            self._unsent += data
            return
        sent = self._send(data)
        if self._stdin is not None and sent < len(data):
            self._unsent += memoryview(data)[sent:]
            self._selector.register(self._stdin, selectors.EVENT_WRITE, self._write_more)

    def _write_more(self) -> None:
        if self._stdin is None:
            return
        del self._unsent[: self._send(self._unsent)]
        if self._stdin is not None and not self._unsent:
            self._selector.unregister(self._stdin)

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
        if not self._stdout_open:
            return False
        assert self._proc is not None and self._proc.stdout is not None
        data = _read(self._proc.stdout.fileno())
        if data is None:
            return False
        if not data:
            self._stdout_open = False
            self._selector.unregister(self._proc.stdout.fileno())
        self._client.receive_data(data, time.monotonic())
        return bool(data)

    def _read_stderr(self) -> bool:
        """Record one chunk of stderr in the tail and log its lines; False if nothing was read."""
        if not self._stderr_open:
            return False
        assert self._proc is not None and self._proc.stderr is not None
        data = _read(self._proc.stderr.fileno())
        if data is None:
            return False
        if data:
            self._stderr_tail.feed(data)
            lines = self._stderr_lines.feed(data, time.monotonic())
        else:
            self._stderr_open = False
            self._selector.unregister(self._proc.stderr.fileno())
            lines = self._stderr_lines.close(time.monotonic())
        for line in lines:
            self._stderr_log.info("%s", line)
        return bool(data)

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


@contextlib.contextmanager
def connect_stdio(
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
) -> Iterator[StdioConnection]:
    """Start ``command args`` and speak MCP to it over stdio, blocking.

    ``env`` entries are added to the current environment. Handlers are plain callables
    that answer the server's requests inline; without one, that capability is not
    declared. Leaving the block closes the connection and waits for the process to exit.

    Raises (on entering):
        ConnectionClosed: the server could not start or exited during the handshake.
        UnsupportedProtocolVersion: it speaks no revision we support.
        RequestTimeout: it did not complete the handshake within ``initialize_timeout``.
    """
    conn = StdioConnection(
        command, args, env=env, cwd=cwd, config=config or ClientConfig(), on_sampling=on_sampling,
        on_elicitation=on_elicitation, roots=roots, on_notification=on_notification,
    )
    conn._start()
    try:
        yield conn
    finally:
        conn.close()
