"""The event-loop drivers' stdio output: a file descriptor written without blocking the loop.

Output is taken from the core only once the last piece is written, so what waits stays
counted there (``mcp_sansio.server.flow``); a driver says only how it waits for the
descriptor to take more (:meth:`FdOutput._wait_writable`).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable

__all__ = ["FdOutput"]


class FdOutput:
    """Writes what ``source()`` gives to ``fd``; ``taken`` is called whenever output that
    waited has been taken (the runner's wake: handlers waiting for a drain go on)."""

    def __init__(self, fd: int, source: Callable[[], bytes]) -> None:
        self._fd = fd
        self._source = source
        self.taken: Callable[[], None] = lambda: None
        self._pending = bytearray()
        self._closed = False
        self._blocking = os.get_blocking(fd)
        with contextlib.suppress(OSError):
            os.set_blocking(fd, False)

    def write(self) -> None:
        """Write what the core has, or leave it there while earlier output still waits."""
        if self._pending:
            return  # the core keeps the rest until the descriptor can take it
        data = self._source()
        if not data or self._closed:
            return
        written = self._send(data)
        if written < len(data) and not self._closed:
            self._pending += data[written:]
            self._wait_writable()

    def _send(self, data: bytes | bytearray) -> int:
        try:
            return os.write(self._fd, data)
        except BlockingIOError:
            return 0
        except OSError:
            self._closed = True  # the client is gone; the read side will see EOF
            return len(data)

    def _writable(self) -> None:
        """The descriptor can take more: write what waits; once all of it is written, take
        the core's next output."""
        del self._pending[:self._send(self._pending)]
        if not self._pending and not self._closed:
            self._pending += self._source()
            self.taken()

    def _wait_writable(self) -> None:
        """Call :meth:`_writable` as the descriptor becomes writable, until nothing waits."""
        raise NotImplementedError
