"""HTTP request checks of the Streamable HTTP server: DNS rebinding, Accept, standard headers.

``Host`` and ``Origin`` are checked against allow-lists (MCP "Streamable HTTP",
"Security": servers MUST validate ``Origin``; for a server bound to loopback both default
to the loopback names, so a page on another site reaching it through DNS rebinding is
refused). In 2026-07-28 a request mirrors its method, name and annotated tool arguments
into ``Mcp-Method``, ``Mcp-Name`` and ``Mcp-Param-*`` headers, which the server checks
against the body (a mismatch is ``-32020`` HeaderMismatch, HTTP 400), decoding the
``=?base64?...?=`` form strictly. All functions are pure.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable, Mapping
from typing import Final

__all__ = [
    "LOOPBACK_HOSTS",
    "accepts",
    "decode_header_value",
    "host_allowed",
    "origin_allowed",
    "param_mismatch",
    "standard_mismatch",
]

LOOPBACK_HOSTS: Final = ("localhost", "127.0.0.1", "[::1]")
"""The names a server bound to loopback answers to (any port)."""

_SENTINEL_START: Final = "=?base64?"
_SENTINEL_END: Final = "?="
_NAMED: Final[Mapping[str, str]] = {
    "tools/call": "name", "prompts/get": "name", "resources/read": "uri",
    "tasks/get": "taskId", "tasks/update": "taskId", "tasks/cancel": "taskId",
}
_MAX_SAFE_INT: Final = 2**53 - 1


def _hostname(authority: str) -> str:
    """``authority`` without its port, lower-case (``[::1]:80`` -> ``[::1]``)."""
    authority = authority.strip().lower()
    if authority.startswith("["):
        return authority[: authority.find("]") + 1] if "]" in authority else authority
    return authority.rsplit(":", 1)[0] if authority.count(":") == 1 else authority


def host_allowed(host: str | None, allowed: Iterable[str] | None) -> bool:
    """Whether the ``Host`` header names an allowed host (any port); ``allowed`` ``None``
    allows every host."""
    if allowed is None:
        return True
    return host is not None and _hostname(host) in {name.lower() for name in allowed}


def origin_allowed(origin: str | None, allowed: Iterable[str] | None) -> bool:
    """Whether the ``Origin`` header (if any) is an ``http(s)`` origin on an allowed host
    (any port); ``allowed`` ``None`` allows every origin, and a request without one (not
    from a browser) passes."""
    if origin is None or allowed is None:
        return True
    scheme, sep, rest = origin.strip().partition("://")
    if not sep or scheme.lower() not in ("http", "https") or "/" in rest:
        return False
    return _hostname(rest) in {name.lower() for name in allowed}


def accepts(accept: str | None) -> tuple[bool, bool]:
    """Whether an ``Accept`` header takes JSON, and SSE (absent or ``*/*``: both)."""
    if accept is None:
        return True, True
    types = {part.split(";", 1)[0].strip().lower() for part in accept.split(",")}
    anything = "*/*" in types or "application/*" in types
    return ("application/json" in types or anything,
            "text/event-stream" in types or "*/*" in types or "text/*" in types)


def decode_header_value(value: str) -> str | None:
    """A header value as the client meant it: whitespace around it dropped, the
    ``=?base64?...?=`` form decoded (strictly: bad padding or characters give ``None``)."""
    value = value.strip(" \t")
    if not (value.startswith(_SENTINEL_START) and value.endswith(_SENTINEL_END)):
        return value
    encoded = value[len(_SENTINEL_START): -len(_SENTINEL_END)]
    try:
        return base64.b64decode(encoded.encode("ascii"), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeError, ValueError):
        return None


def standard_mismatch(method: str, params: Mapping[str, object], headers: Mapping[str, str]) -> str | None:
    """Why ``Mcp-Method``/``Mcp-Name`` do not match a request's body, or ``None``."""
    header_method = headers.get("mcp-method")
    if header_method is None:
        return "the Mcp-Method header is missing"
    if header_method.strip(" \t") != method:
        return f"the Mcp-Method header {header_method.strip()!r} does not match the method {method!r}"
    field = _NAMED.get(method)
    if field is None:
        return None
    expected = params.get(field)
    if not isinstance(expected, str):
        return None  # the params are invalid: the session answers that
    header_name = headers.get("mcp-name")
    if header_name is None:
        return "the Mcp-Name header is missing"
    if decode_header_value(header_name) != expected:
        return f"the Mcp-Name header does not match params.{field}"
    return None


def param_mismatch(paths: Mapping[tuple[str, ...], str], arguments: object,
                   headers: Mapping[str, str]) -> str | None:
    """Why the ``Mcp-Param-*`` headers of a tool call do not match its arguments, or ``None``.

    A value present in the body needs its header, equal after decoding (integers compared
    as numbers, booleans as ``true``/``false``); an absent or null value needs none.
    """
    for path, name in paths.items():
        value: object = arguments
        for key in path:
            value = value.get(key) if isinstance(value, Mapping) else None
        header = headers.get(f"mcp-param-{name.lower()}")
        if value is None:
            continue
        if header is None:
            return f"the Mcp-Param-{name} header is missing"
        decoded = decode_header_value(header)
        if decoded is None:
            return f"the Mcp-Param-{name} header is not valid base64"
        if not _same(decoded, value):
            return f"the Mcp-Param-{name} header does not match the argument"
    return None


def _same(text: str, value: object) -> bool:
    if isinstance(value, bool):
        return text == ("true" if value else "false")
    if isinstance(value, int):
        try:
            return -_MAX_SAFE_INT <= value <= _MAX_SAFE_INT and float(text) == value
        except ValueError:
            return False
    return isinstance(value, str) and text == value
