"""Which headers each HTTP request of the MCP client carries.

State held: the user's own headers (checked once, when the client is made, so no later
request can fail on them) and the ``x-mcp-header`` paths each listed tool declared (the
2026 era's standard headers mirror those arguments into ``Mcp-Param-*``). Both outlive
any one exchange and change only on the user's word or a ``tools/list`` result, so they
live here rather than in the exchange table; everything else a request's headers depend
on (the session id, the negotiated rules, the discover probe) is passed in per request.
See the "Transports" page of each revision of the MCP specification.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Final

import msgspec

from . import modern
from .errors import LocalProtocolError
from .events import DiscardReason
from .http11 import Header
from .http_exchange import SSE, ExchangeKind
from .versions import VersionRules

__all__ = ["RequestHeaders"]

_JSON: Final = "application/json"
_ACCEPT_BOTH: Final = "application/json, text/event-stream"
# Headers that identify or authorize us; never sent to another origin after a redirect.
_PRIVATE: Final = frozenset({"authorization", "cookie", "proxy-authorization", "mcp-session-id"})
# Headers the pool or this module sets; a user's value would duplicate or contradict them.
_RESERVED: Final = frozenset({
    "host", "content-length", "transfer-encoding", "upgrade", "accept", "content-type", "user-agent",
    "mcp-session-id", "mcp-protocol-version", "last-event-id",
})
_TOKEN: Final = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")  # a field name (RFC 9110 section 5.1)
# A field value h11 accepts: visible ASCII and inner spaces or tabs (RFC 9110 section 5.5).
_FIELD_VALUE: Final = re.compile(r"(?:[\x21-\x7e](?:[\x20-\x7e\t]*[\x21-\x7e])?)?")


class _Outgoing(msgspec.Struct):
    """What the standard headers mirror from an outgoing message."""

    method: str | None = None
    params: dict[str, object] | None = None


_OUTGOING: Final = msgspec.json.Decoder(_Outgoing)


class RequestHeaders:
    """The headers of the client's requests: its own, the user's, and the mirrored ones."""

    __slots__ = ("_tool_headers", "_user_agent", "user")

    def __init__(self, user_agent: str, headers: Mapping[str, str]) -> None:
        """Check the user's ``headers`` now.

        Raises:
            LocalProtocolError: a header is malformed or one the client sets itself.
        """
        self._user_agent = user_agent
        self.user: tuple[Header, ...] = tuple(_checked_headers(headers))
        self._tool_headers: dict[str, dict[tuple[str, ...], str]] = {}  # x-mcp-header paths

    def for_request(self, kind: ExchangeKind, body: bytes, last_event_id: str, *, is_init: bool,
                    probe: str | None, legacy: bool, session_id: str | None,
                    rules: VersionRules | None) -> tuple[Header, ...]:
        """The headers of one request of ``kind``. ``is_init``: the ``initialize`` (or
        discover) POST; ``probe``: the version the discover probe asks about."""
        headers: list[Header] = [("user-agent", self._user_agent)]
        if kind is ExchangeKind.POST or kind is ExchangeKind.LEGACY_POST:
            headers += [("accept", _ACCEPT_BOTH), ("content-type", _JSON)]
        elif kind is not ExchangeKind.DELETE:
            headers.append(("accept", SSE))
        if last_event_id:
            headers.append(("last-event-id", last_event_id))
        # The initialize POST goes without: no session exists and no version is agreed yet.
        if probe is not None:  # the stateless era's discover probe: its version, its method
            headers += [("mcp-protocol-version", probe), ("mcp-method", "server/discover")]
        elif not legacy and not is_init:
            if session_id is not None:
                headers.append(("mcp-session-id", session_id))
            if rules is not None and rules.protocol_version_header:
                headers.append(("mcp-protocol-version", rules.version))
            if rules is not None and rules.standard_headers and body:
                headers += self._standard_headers(body)
        headers += self.user
        return tuple(headers)

    def redirected(self, headers: tuple[Header, ...], same_origin: bool) -> tuple[Header, ...]:
        """``headers`` for the redirect's target: to another origin, none that identify
        or authorize us, and none of the user's."""
        if same_origin:
            return headers
        user = {name for name, _ in self.user}
        return tuple(h for h in headers if h[0] not in _PRIVATE and h[0] not in user)

    def checked_tools(self, result: msgspec.Struct,
                      discard: Callable[[DiscardReason, str, bytes], None]) -> msgspec.Struct:
        """Drop tools whose ``x-mcp-header`` annotations are invalid (the spec's rule),
        reporting each to ``discard``; remember the paths of the others."""
        tools = getattr(result, "tools", [])
        kept = []
        for tool in tools:
            try:
                paths = modern.tool_header_paths(tool.input_schema)
            except ValueError as exc:
                detail = f"tool {tool.name!r} rejected: {exc}"
                discard(DiscardReason.INVALID_PARAMS, detail, tool.name.encode())
                continue
            self._tool_headers[tool.name] = paths
            kept.append(tool)
        return msgspec.structs.replace(result, tools=kept) if len(kept) != len(tools) else result

    def _standard_headers(self, body: bytes) -> list[Header]:
        """``Mcp-Method``, ``Mcp-Name`` and ``Mcp-Param-*`` mirrored from a message body."""
        head = _OUTGOING.decode(body)  # a message this client encoded: always an object
        if head.method is None:
            return []  # a response or a batch: nothing to mirror
        headers = modern.standard_headers(head.method, head.params)
        if head.method == "tools/call" and head.params is not None:
            paths = self._tool_headers.get(str(head.params.get("name")))
            if paths:
                arguments = head.params.get("arguments")
                headers += modern.mcp_param_headers(paths, arguments if isinstance(arguments, dict) else None)
        return headers


def _checked_headers(headers: Mapping[str, str]) -> list[Header]:
    """The user's headers, lower-cased; checked now so no later request can fail on them."""
    out: list[Header] = []
    for name, value in headers.items():
        lname = name.lower()
        if not _TOKEN.fullmatch(lname) or not _FIELD_VALUE.fullmatch(value):
            raise LocalProtocolError(f"invalid HTTP header {name!r}: {value!r}")
        if lname in _RESERVED:
            raise LocalProtocolError(f"the client sets the {name} header itself")
        out.append((lname, value))
    return out
