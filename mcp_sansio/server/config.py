"""Every limit and knob of a server, in one frozen :class:`ServerConfig` (STYLE.md section 5).

Durations are float seconds (``*_timeout``, ``*_ttl``), sizes are bytes (``*_bytes``); the
caching hints of 2026-07-28 are milliseconds because the wire says so (``*_ms``). The core
reads nothing from the environment; a driver may build a config from it.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from ..errors import LocalProtocolError
from ..versions import MODERN_VERSIONS, SUPPORTED_VERSIONS

__all__ = ["CacheScope", "ServerConfig"]

_MIB = 1024 * 1024

CacheScope = Literal["public", "private"]
"""Who may cache a result (2026-07-28 "Caching"): any cache, or only this caller's."""


class ServerConfig(msgspec.Struct, frozen=True, kw_only=True):
    """Limits, timeouts and protocol choices of a server.

    Attributes:
        protocol_versions: handshake-era revisions ``initialize`` may settle on, the
            preferred (answered to an unknown offer) first.
        modern_versions: stateless revisions a request's ``_meta`` may name.
        max_line_bytes: longest stdio line (and WebSocket message) accepted.
        max_in_flight: client requests one connection may have unanswered at once;
            more are refused with a JSON-RPC error. (Stateless HTTP requests each have
            an exchange of their own: ``max_connections`` and ``max_tasks`` bound them.)
        request_timeout: how long a request the server sends the client (sampling,
            elicitation, roots) may go unanswered.
        page_size: items per page of ``tools/list`` and the other lists; ``None``
            answers every list in one page.
        list_ttl_ms: the ``ttlMs`` caching hint of list results (2026-07-28).
        list_cache_scope: their ``cacheScope``.
        read_ttl_ms: the default ``ttlMs`` of ``resources/read`` results (a resource
            may set its own).
        read_cache_scope: their default ``cacheScope``.
        discover_ttl_ms: the ``ttlMs`` of ``server/discover``.
        server_info_in_results: every 2026-07-28 result names the server in its
            ``_meta`` (``io.modelcontextprotocol/serverInfo``), as the spec recommends.
        state_ttl: how long a ``requestState`` the server minted stays valid.
        max_input_requests: input requests one handler round may gather.
        max_state_bytes: the largest ``requestState`` accepted back.
        task_ttl_ms: how long a finished task stays readable with ``tasks/get``.
        task_poll_interval_ms: the polling interval tasks suggest.
        max_tasks: tasks kept at once; more task-augmented calls run synchronously.
        max_subscriptions: ``subscriptions/listen`` streams (and resource
            subscriptions) one connection may hold.
    """

    protocol_versions: tuple[str, ...] = SUPPORTED_VERSIONS
    modern_versions: tuple[str, ...] = MODERN_VERSIONS
    max_line_bytes: int = 32 * _MIB
    max_in_flight: int = 1024
    request_timeout: float = 300.0
    page_size: int | None = None
    list_ttl_ms: int = 0
    list_cache_scope: CacheScope = "public"
    read_ttl_ms: int = 0
    read_cache_scope: CacheScope = "private"
    discover_ttl_ms: int = 0
    server_info_in_results: bool = True
    state_ttl: float = 600.0
    max_input_requests: int = 16
    max_state_bytes: int = 256 * 1024
    task_ttl_ms: int = 3_600_000
    task_poll_interval_ms: int = 500
    max_tasks: int = 1024
    max_subscriptions: int = 64

    def __post_init__(self) -> None:
        unknown = [v for v in self.protocol_versions if v not in SUPPORTED_VERSIONS]
        if not self.protocol_versions or unknown:
            raise LocalProtocolError(f"protocol_versions must be a non-empty subset of {SUPPORTED_VERSIONS}")
        if any(v not in MODERN_VERSIONS for v in self.modern_versions):
            raise LocalProtocolError(f"modern_versions must be a subset of {MODERN_VERSIONS}")
        if self.page_size is not None and self.page_size < 1:
            raise LocalProtocolError("page_size must be positive (or None for one page)")
        counts = (self.max_line_bytes, self.max_in_flight, self.max_input_requests, self.max_state_bytes,
                  self.max_tasks, self.max_subscriptions)
        if min(counts) < 1:
            raise LocalProtocolError("size and count limits must be positive")
        hints = (self.list_ttl_ms, self.read_ttl_ms, self.discover_ttl_ms, self.task_ttl_ms,
                 self.task_poll_interval_ms)
        if min(hints) < 0 or self.request_timeout < 0 or self.state_ttl <= 0:
            raise LocalProtocolError("durations must not be negative (and state_ttl positive)")
