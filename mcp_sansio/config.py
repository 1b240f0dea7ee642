"""Every limit and knob of a client, in one frozen :class:`ClientConfig` (STYLE.md section 5).

Durations are float seconds (``*_timeout``, ``*_delay``), sizes are bytes (``*_bytes``).
The core reads nothing from the environment; drivers may build a config from it.
"""

from __future__ import annotations

import math

import msgspec

from .errors import LocalProtocolError
from .retry import RetryPolicy
from .versions import MODERN_VERSIONS, SUPPORTED_VERSIONS

__all__ = ["ClientConfig"]

_MIB = 1024 * 1024


class ClientConfig(msgspec.Struct, frozen=True, kw_only=True):
    """Limits, timeouts and identity of one client connection.

    Attributes:
        client_name: ``clientInfo.name`` sent in ``initialize``.
        client_version: ``clientInfo.version``.
        client_title: optional human-readable ``clientInfo.title``.
        protocol: ``"auto"`` (probe with ``server/discover``, fall back to ``initialize``),
            or one revision to speak and nothing else.
        protocol_versions: handshake-era revisions we accept, the preferred (offered)
            one first.
        modern_versions: stateless revisions we accept, preferred first.
        discover_timeout: how long the ``server/discover`` probe may go unanswered
            before an ``auto`` client takes the server for a handshake-era one; at most
            half of ``initialize_timeout``, so ``initialize`` has the rest.
        max_input_rounds: rounds of multi round-trip input one request may take.
        request_timeout: default deadline of a request, from when it is sent.
        max_request_timeout: the longest any request may wait, from when it is sent, however
            often progress resets its deadline (10 minutes; the spec's "SHOULD always
            enforce a maximum timeout"). A call's own ``timeout`` longer than this is that
            call's bound instead; ``None`` lets progress keep a request alive forever.
        reset_timeout_on_progress: a ``notifications/progress`` for a request moves its
            deadline to ``now + timeout``.
        initialize_timeout: the wall time of the whole connect: opening the connection,
            the probe, the fallback to ``initialize``, version retries and retries of
            requests that never left, together.
        max_line_bytes: longest stdio line accepted; longer is a protocol error.
        skip_non_json_lines: report stdio lines that are not JSON as
            ``MessageDiscarded`` and go on (servers that print banners), rather than
            failing the connection.
        stderr_limit_bytes: how much of a subprocess's stderr the driver keeps (the tail).
        stderr_log_line_bytes: longest stderr line logged; the rest of it is counted.
        stderr_log_lines: stderr lines logged per ``stderr_log_window`` seconds, at most
            (about: a token bucket of that size, refilled at that rate); the others are
            counted in one summary line.
        stderr_log_window: the period of ``stderr_log_lines``.
        max_list_pages: bound on pages followed by a "list everything" call.
        max_queued_notifications: notifications a driver holds for a handler that is
            behind; past it new ones are dropped, with a warning.
        max_skill_files: files a skill may list to be loaded (the Skills extension's
            512; a host may accept more).
        max_skill_bytes: total size of a skill's files for it to be loaded (16 MiB).
        shutdown_close_delay: after closing the server's stdin, how long to wait for it
            to exit before interrupting it (SIGINT).
        shutdown_interrupt_delay: after SIGINT, how long before SIGTERM.
        shutdown_terminate_delay: after SIGTERM, how long before SIGKILL.
        max_connections: HTTP/1.1 connections open at once (one exchange each).
        max_response_bytes: largest JSON response body or SSE event accepted over HTTP.
        max_send_queue_bytes: what a WebSocket client may hold to send while the driver
            waits for the socket to take more (Pongs are coalesced, so only our own
            messages count); past it the server has stopped reading and the connection
            is dropped (``SEND_QUEUE_FULL``). One message is always accepted into an
            empty queue, however large. HTTP needs no such bound: each connection carries
            one request at a time.
        max_redirects: 307/308 redirects followed for one request.
        retry: reconnection policy for dropped SSE streams and refused connections.
        reinitialize_on_expiry: when the server forgets the session (HTTP 404), open a
            new one and re-send the requests that were in flight, once.
        max_session_restarts: new sessions opened in a row without a request succeeding
            in between, before giving up with ``SessionExpired``.
        open_get_stream: open the optional GET stream for server-initiated messages.
        get_stream_wait: once the handshake is done and that GET stream is opening, how
            long the app's messages wait for its response head, at most: a server may send
            its requests on that stream only, dropping those it sends while none is open
            (the TypeScript SDK does), so a request must not reach it first. They go as
            soon as the head arrives, the GET fails or the server has no such stream
            (405). Reconnections of the stream hold nothing. 0: no wait.
        close_timeout: how long closing an HTTP session (its DELETE) may take.
        user_agent: the HTTP ``User-Agent``.
    """

    client_name: str = "mcp-sansio"
    client_version: str = "0.1.0"
    client_title: str | None = None
    protocol: str = "auto"
    protocol_versions: tuple[str, ...] = SUPPORTED_VERSIONS
    modern_versions: tuple[str, ...] = MODERN_VERSIONS
    discover_timeout: float = 3.0
    max_input_rounds: int = 8
    request_timeout: float = 60.0
    max_request_timeout: float | None = 600.0
    reset_timeout_on_progress: bool = True
    initialize_timeout: float = 30.0
    max_line_bytes: int = 32 * _MIB
    skip_non_json_lines: bool = True
    stderr_limit_bytes: int = 1 * _MIB
    stderr_log_line_bytes: int = 4096
    stderr_log_lines: int = 200
    stderr_log_window: float = 10.0
    max_list_pages: int = 1000
    max_queued_notifications: int = 10_000
    max_skill_files: int = 512
    max_skill_bytes: int = 16 * _MIB
    shutdown_close_delay: float = 1.0
    shutdown_interrupt_delay: float = 0.5
    shutdown_terminate_delay: float = 0.5
    max_connections: int = 8
    max_response_bytes: int = 32 * _MIB
    max_send_queue_bytes: int = 32 * _MIB
    max_redirects: int = 5
    retry: RetryPolicy = RetryPolicy()
    reinitialize_on_expiry: bool = True
    max_session_restarts: int = 3
    open_get_stream: bool = True
    get_stream_wait: float = 1.0
    close_timeout: float = 2.0
    user_agent: str = "mcp-sansio/0.1.0"

    def __post_init__(self) -> None:
        if self.protocol != "auto" and self.protocol not in (*SUPPORTED_VERSIONS, *MODERN_VERSIONS):
            known = SUPPORTED_VERSIONS + MODERN_VERSIONS
            raise LocalProtocolError(f"protocol must be 'auto' or one of {known}")
        if any(v not in MODERN_VERSIONS for v in self.modern_versions):
            raise LocalProtocolError(f"modern_versions must be a subset of {MODERN_VERSIONS}")
        unknown = [v for v in self.protocol_versions if v not in SUPPORTED_VERSIONS]
        if not self.protocol_versions or unknown:
            raise LocalProtocolError(
                f"protocol_versions must be a non-empty subset of {SUPPORTED_VERSIONS}"
            )
        for name in (
            "request_timeout",
            "initialize_timeout",
            "shutdown_close_delay",
            "shutdown_interrupt_delay",
            "shutdown_terminate_delay",
            "get_stream_wait",
        ):
            if getattr(self, name) < 0:
                raise LocalProtocolError(f"{name} must not be negative")
        if (self.max_line_bytes < 1 or self.max_list_pages < 1 or self.stderr_limit_bytes < 0
                or self.max_connections < 1 or self.max_response_bytes < 1 or self.max_send_queue_bytes < 1
                or self.max_skill_files < 1 or self.max_skill_bytes < 0 or self.max_queued_notifications < 1
                or self.stderr_log_line_bytes < 1 or self.stderr_log_lines < 1):
            raise LocalProtocolError("size and page limits must be positive")
        if self.max_request_timeout is not None and not self.max_request_timeout > 0:
            raise LocalProtocolError("max_request_timeout must be a positive number of seconds, or None")
        if not (math.isfinite(self.stderr_log_window) and self.stderr_log_window > 0):
            raise LocalProtocolError("stderr_log_window must be a positive number of seconds")
