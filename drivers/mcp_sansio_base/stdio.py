"""The loop-neutral half of every driver's stdio connection.

A driver's ``StdioConnection`` mixes :class:`StdioProcess` in after its loop base: this
part builds the core from the options, keeps the server's stderr (the tail for errors,
bounded lines for the log), turns the core's shutdown actions into signals to the server's
process group, and adds the exit status and stderr to failures. The driver only starts
the process and moves bytes.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Final

from mcp_sansio import (
    Action,
    InitializeFailed,
    InterruptProcess,
    KillProcess,
    RequestFailed,
    StderrLog,
    StderrTail,
    StdioClient,
    TerminateProcess,
)
from mcp_sansio.config import ClientConfig
from mcp_sansio.errors import ConnectionClosed, McpSansioError
from mcp_sansio.events import ClientEvent
from mcp_sansio.types import ClientCapabilities

from .options import StdioKeys

__all__ = ["CONNECT_DOC", "PipeStdin", "StdioProcess", "cannot_start", "child_env", "signal_group"]

CONNECT_DOC = """Start ``command args`` and speak MCP to it over stdio; the options are
``StdioOptions``. Leaving the block fails pending calls, closes the server's stdin and
escalates SIGINT, SIGTERM, SIGKILL on the deadlines of ``ClientConfig`` until the process
has exited: no child, task or pipe is left behind.

Raises (on entering):
    ConnectionClosed: the server could not start or exited during the handshake.
    UnsupportedProtocolVersion: it speaks no revision we support.
    RequestTimeout: it did not complete the handshake within ``initialize_timeout``.
"""

_SIGNALS: Final[Mapping[type[Action], int]] = {
    InterruptProcess: signal.SIGINT, TerminateProcess: signal.SIGTERM, KillProcess: signal.SIGKILL,
}


def child_env(env: Mapping[str, str] | None) -> dict[str, str] | None:
    """The server's environment: ours plus ``env`` (``None``: ours as it is)."""
    return None if env is None else {**os.environ, **env}


def cannot_start(command: str, exc: OSError) -> ConnectionClosed:
    """The error for a server command that could not be started."""
    return ConnectionClosed(f"cannot start {command!r}: {exc.strerror or exc}")


def signal_group(pid: int, sig: int) -> None:
    """Signal the server's process group (it leads one: ``start_new_session``); a group
    that is gone already is no error."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


class StdioProcess:
    """What every stdio connection keeps besides its loop's pipes."""

    _returncode: int | None

    if TYPE_CHECKING:
        def _now(self) -> float:
            """The loop driver's clock (the connection's other base has it)."""

        def _deliver_events(self, event: ClientEvent | None = None) -> None:
            """The façade's delivery of the core's events (the other base has it)."""

        def _perform(self, action: Action) -> None:
            """The driver's way to carry out one of the core's actions."""

    def _stdio_core(self, command: str, args: Sequence[str], config: ClientConfig,
                    capabilities: ClientCapabilities, options: StdioKeys) -> StdioClient:
        """Record the command and build the core (call first in ``__init__``)."""
        self._command = command
        self._argv = [command, *args]
        self._env = child_env(options.get("env"))
        self._cwd = options.get("cwd")
        self._returncode = None
        self._stderr_tail_buffer = StderrTail(config.stderr_limit_bytes)
        self._stderr_lines = StderrLog(config)  # what of it reaches the log, bounded
        self._stderr_log = logging.getLogger(f"mcp_sansio.stderr.{os.path.basename(command)}")
        self._client = StdioClient(config, capabilities)
        return self._client

    def _drain(self) -> bytes:
        """The first half of every stdio pump: the core's events go to their waiters, its
        actions are performed; returns the bytes to write to the server's stdin."""
        client = self._client
        event = client.next_event()
        if event is not None:  # mostly none after a request goes out: no call then
            self._deliver_events(event)
        while (action := client.next_action()) is not None:
            self._perform(action)
        return client.data_to_send()

    @contextlib.contextmanager
    def _spawning(self, undo: Callable[[], None], child_fd: int) -> Iterator[None]:
        """Around starting the process: on failure ``undo()`` runs and an ``OSError`` becomes
        :func:`cannot_start`'s ``ConnectionClosed``; the child's end ``child_fd`` of a pipe
        is closed either way."""
        try:
            yield
        except BaseException as exc:
            undo()
            if isinstance(exc, OSError):
                raise cannot_start(self._command, exc) from exc
            raise
        finally:
            os.close(child_fd)

    @property
    def stderr_tail(self) -> str:
        """What the server last wrote to stderr (bounded by ``stderr_limit_bytes``)."""
        return self._stderr_tail_buffer.text()

    @property
    def returncode(self) -> int | None:
        """The server's exit status, once it has exited."""
        return self._returncode

    def _failure(self, event: RequestFailed | InitializeFailed) -> McpSansioError:
        return event.to_exception(returncode=self._returncode, stderr_tail=self._stderr_tail_buffer.text())

    def _stderr(self, data: bytes) -> None:
        """A chunk of the server's stderr (``b""`` at its end): kept, and logged in lines
        the core bounds (:class:`~mcp_sansio.StderrLog`: cut, and rate-limited per server)."""
        if data:
            self._stderr_tail_buffer.feed(data)
            lines = self._stderr_lines.feed(data, self._now())
        else:
            lines = self._stderr_lines.close(self._now())
        for line in lines:
            self._stderr_log.info("%s", line)

    def _signal_for(self, action: Action) -> int:
        """The signal a shutdown action asks for."""
        return _SIGNALS[type(action)]


class PipeStdin:
    """The server's stdin as a non-blocking pipe the driver writes itself (anyio, blocking):
    what the pipe does not take at once waits, in order, in ``_unsent`` until the driver's
    :meth:`_watch_stdin` finishes it with :meth:`_send` as the server reads."""

    _stdin: int | None  # the file descriptor, None once closed
    _unsent: bytearray

    def _write(self, data: bytes) -> None:
        if self._stdin is None:
            return
        if self._unsent:  # still waiting for the pipe: keep the order
            self._unsent += data
            return
        sent = self._send(data)
        if self._stdin is not None and sent < len(data):
            self._unsent += memoryview(data)[sent:]
            self._watch_stdin()

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

    def _watch_stdin(self) -> None:
        """Write ``_unsent`` as the pipe becomes writable."""
        raise NotImplementedError

    def _close_stdin(self) -> None:
        raise NotImplementedError
