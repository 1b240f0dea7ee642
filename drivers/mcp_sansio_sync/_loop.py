"""What every blocking connection shares: waiting by running the loop, inline handlers.

:class:`BlockingDriver` gives the generated blocking client
(:class:`mcp_sansio_base._sync.client.Client`) its primitives: a call queues its request,
then runs :meth:`BlockingDriver._step` (one round of the transport's selector loop) until
its answer has arrived. Server requests and notifications are handled inline, while a
call waits (or :meth:`BlockingDriver.poll` looks), by plain callables; between calls
nothing is read. A transport subclass supplies ``_step`` and ``_pump``.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable

import msgspec

from mcp_sansio.errors import McpSansioError
from mcp_sansio.events import InitializeCompleted, RequestId
from mcp_sansio_base._sync.client import Client
from mcp_sansio_base._sync.handlers import ProgressCallback

__all__ = ["BlockingDriver", "Slot"]

log = logging.getLogger("mcp_sansio.client")


class Slot:
    """Where one caller's answer lands (the blocking counterpart of a future)."""

    __slots__ = ("error", "result")

    def __init__(self) -> None:
        self.result: msgspec.Struct | None = None
        self.error: BaseException | None = None

    def done(self) -> bool:
        return self.result is not None or self.error is not None

    def set_result(self, result: msgspec.Struct, /) -> None:
        self.result = result

    def set_exception(self, exc: BaseException, /) -> None:
        self.error = exc

    def value(self) -> msgspec.Struct:
        """The answer.

        Raises:
            BaseException: the error it was set with.
        """
        if self.error is not None:
            raise self.error
        assert self.result is not None  # done() was checked
        return self.result


class BlockingDriver(Client):
    """The client's primitives on a blocking loop; a subclass gives ``_step`` and ``_pump``."""

    _pumping = False
    _closed = False  # close() has begun: the loop is no longer run

    def poll(self) -> None:
        """Take in, without blocking, what arrived while no call waited: the server's
        notifications and requests (handled inline), its exit or the end of its connection
        (then :attr:`closed` is true)."""
        if not self._closed:
            self._step(wait=False)

    def _now(self) -> float:
        return time.monotonic()

    def _step(self, wait: bool = True) -> None:
        """Block for one round of input (or the next deadline), feed it to the core, pump;
        without ``wait``, take only what is there already."""
        raise NotImplementedError

    def _pump(self) -> None:
        """Deliver events, perform the core's actions, write what it queued."""
        raise NotImplementedError

    def _timeout(self, deadline: float | None, wait: bool) -> float | None:
        """How long one wait may block: until ``deadline`` (the core's next), not at all
        without ``wait``."""
        if not wait:
            return 0.0
        return None if deadline is None else max(deadline - time.monotonic(), 0.0)

    def _fire(self, deadline: float | None) -> None:
        """After one wait: the core's timers fire once ``deadline`` has passed; then flush."""
        if deadline is not None:
            now = time.monotonic()
            if now >= deadline:
                self._core.handle_timeout(now)
        self._flush()

    def _flush(self) -> None:
        # A handler run inline from the pump's delivery queues its answer; the pump under
        # way writes it.
        if self._pumping:
            return
        self._pumping = True
        try:
            self._pump()
        finally:
            self._pumping = False

    def _spawn(self, fn: Callable[[], None]) -> None:
        try:
            fn()
        except Exception:  # an application bug must not break the connection
            log.exception("a handler of the MCP client raised")

    def _handshake(self, begin: Callable[[], None]) -> None:
        """Begin the handshake with ``begin`` and run the loop to its end; on failure (or
        an interrupt) close everything and raise.

        Raises:
            McpSansioError: the handshake failed (the type says why).
        """
        try:
            slot = Slot()
            self._init_waiter = slot
            begin()
            self._flush()
            while not slot.done():
                self._step()
            assert isinstance(slot.value(), InitializeCompleted)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        raise NotImplementedError

    def _wait(self, request_id: RequestId, on_progress: ProgressCallback | None = None) -> msgspec.Struct:
        slot = Slot()
        self._waiters[request_id] = slot
        if on_progress is not None:
            self._progress[request_id] = on_progress
        try:
            self._flush()
            while not slot.done():
                self._step()
        finally:
            if not slot.done():  # interrupted (KeyboardInterrupt): give up on it
                self._waiters.pop(request_id, None)
                self._progress.pop(request_id, None)
                with contextlib.suppress(McpSansioError):  # the connection is gone: nothing to cancel
                    self._core.cancel(request_id, now=time.monotonic(), reason="cancelled by the caller")
                    self._flush()
        return slot.value()
