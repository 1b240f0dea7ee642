"""Differences between MCP revisions, as data rows looked up by the negotiated version.

Code asks a row (``rules_for(version).batches``) instead of comparing version strings
(STYLE.md section 6). A new revision is a new row; a new *era* (the stateless 2026-07-28
protocol) adds rows whose ``handshake`` is false, plus the module that speaks it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import msgspec

__all__ = ["LATEST_VERSION", "MODERN_VERSIONS", "SUPPORTED_VERSIONS", "VersionRules", "rules_for"]


class VersionRules(msgspec.Struct, frozen=True, kw_only=True):
    """What one protocol revision allows and requires.

    Attributes:
        version: the revision's date string.
        handshake: ``initialize`` / ``notifications/initialized`` open the session.
        batches: JSON-RPC batches (arrays) may be received.
        streamable_http: the Streamable HTTP transport exists (else only HTTP+SSE).
        protocol_version_header: HTTP requests carry ``MCP-Protocol-Version``.
        resumable_streams: SSE streams may be resumed with ``Last-Event-ID``.
        elicitation: the client may declare ``elicitation``.
        url_elicitation: elicitation has the URL mode.
        sampling_tools: sampling requests may carry tools.
        tasks: task-augmented requests exist.
        sessions: Streamable HTTP sessions (``Mcp-Session-Id``), the GET stream and
            ``DELETE`` exist.
        request_meta: every request carries version, capabilities and client info in
            ``_meta`` (the stateless era); results may ask for input (MRTR).
        standard_headers: HTTP requests carry ``Mcp-Method`` / ``Mcp-Name`` and the
            ``x-mcp-header`` parameters.
        ping: ``ping`` exists (else a liveness check is a ``server/discover``).
        set_level: ``logging/setLevel`` exists (else the level rides in ``_meta``).
        subscribe: ``resources/subscribe`` exists (else ``subscriptions/listen``).
        tool_input_errors_in_result: arguments that fail a tool's input schema are a tool
            execution error (a result with ``isError``), not a ``-32602`` protocol error.
        resource_not_found: the JSON-RPC error code of a ``resources/read`` for an unknown
            URI.
        cache_hints: cacheable results (lists, reads, ``server/discover``) carry ``ttlMs``
            and ``cacheScope``; every result carries ``resultType``.
        structured_any_value: a tool's ``structuredContent`` may be any JSON value and its
            ``outputSchema`` any schema; before 2026-07-28 both are objects, so a server
            wraps other values as ``{"result": value}`` (FastMCP's rule).
    """

    version: str
    handshake: bool = True
    batches: bool = False
    streamable_http: bool = True
    protocol_version_header: bool = True
    resumable_streams: bool = True
    elicitation: bool = True
    url_elicitation: bool = False
    sampling_tools: bool = False
    tasks: bool = False
    sessions: bool = True
    request_meta: bool = False
    standard_headers: bool = False
    ping: bool = True
    set_level: bool = True
    subscribe: bool = True
    tool_input_errors_in_result: bool = False
    resource_not_found: int = -32002
    cache_hints: bool = False
    structured_any_value: bool = False


_ROWS: Final[tuple[VersionRules, ...]] = (
    VersionRules(
        version="2025-11-25", url_elicitation=True, sampling_tools=True, tasks=True,
        tool_input_errors_in_result=True,
    ),
    VersionRules(version="2025-06-18"),
    VersionRules(
        version="2025-03-26", batches=True, protocol_version_header=False, elicitation=False
    ),
    VersionRules(
        version="2024-11-05",
        streamable_http=False,
        protocol_version_header=False,
        resumable_streams=False,
        elicitation=False,
    ),
)

# The stateless era: no handshake, no sessions, per-request _meta (2026-07-28 changelog).
_MODERN_ROWS: Final[tuple[VersionRules, ...]] = (
    VersionRules(
        version="2026-07-28", handshake=False, resumable_streams=False, url_elicitation=True,
        sampling_tools=True, sessions=False, request_meta=True, standard_headers=True,
        ping=False, set_level=False, subscribe=False, tool_input_errors_in_result=True,
        resource_not_found=-32602, cache_hints=True, structured_any_value=True,
    ),
)

VERSIONS: Final[Mapping[str, VersionRules]] = {row.version: row for row in (*_ROWS, *_MODERN_ROWS)}
SUPPORTED_VERSIONS: Final[tuple[str, ...]] = tuple(row.version for row in _ROWS)
"""The handshake-era revisions, preferred first (what ``initialize`` may offer)."""
MODERN_VERSIONS: Final[tuple[str, ...]] = tuple(row.version for row in _MODERN_ROWS)
"""The stateless revisions, preferred first (what ``server/discover`` may ask for)."""
LATEST_VERSION: Final[str] = SUPPORTED_VERSIONS[0]


def rules_for(version: str) -> VersionRules | None:
    """The row of ``version``, or ``None`` for a revision we do not speak."""
    return VERSIONS.get(version)
