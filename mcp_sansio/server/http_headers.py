"""HTTP request checks of the Streamable HTTP server: DNS rebinding, Accept, standard headers.

``Host`` and ``Origin`` are checked against allow-lists (MCP "Streamable HTTP",
"Security": servers MUST validate ``Origin``, on every bind: a present ``Origin`` must be
an allowed origin or the server's own; for a server bound to loopback ``Host`` defaults to
the loopback names, so a page on another site reaching it through DNS rebinding is
refused). In 2026-07-28 a request mirrors its method, name and annotated tool arguments
into ``Mcp-Method``, ``Mcp-Name`` and ``Mcp-Param-*`` headers, which the server checks
against the body (a mismatch is ``-32020`` HeaderMismatch, HTTP 400), decoding the
``=?base64?...?=`` form strictly. A request carrying a header that names one thing
(``Host``, ``Origin``, ``Authorization``, ``Mcp-Session-Id``, ...) more than once is
ambiguous, since a proxy may judge the first while the server reads the last, and is
refused whole (RFC 9112 section 3.2 for ``Host``; RFC 9110 section 5.3: only list-valued
fields may repeat). All functions are pure.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable, Mapping
from typing import Final

from ..errors import LocalProtocolError

__all__ = [
    "LOOPBACK_HOSTS",
    "accepts",
    "check_origins",
    "decode_header_value",
    "host_allowed",
    "normalize_origin",
    "origin_allowed",
    "param_mismatch",
    "repeated_header",
    "single_headers",
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
_SINGLE: Final = frozenset({
    "host", "origin", "authorization", "content-type", "content-length", "mcp-session-id",
    "mcp-protocol-version", "last-event-id", "mcp-method", "mcp-name",
})
_SINGLE_PREFIX: Final = "mcp-param-"
_DEFAULT_PORTS: Final[Mapping[str, int]] = {"http": 80, "https": 443}


def _hostname(authority: str) -> str:
    """``authority`` without its port, lower-case (``[::1]:80`` -> ``[::1]``)."""
    authority = authority.strip().lower()
    if authority.startswith("["):
        return authority[: authority.find("]") + 1] if "]" in authority else authority
    return authority.rsplit(":", 1)[0] if authority.count(":") == 1 else authority


def _host_port(authority: str, default_port: int) -> tuple[str, int] | None:
    """``(host, port)`` of an ``authority`` (lower-case host, the default port filled in),
    or ``None`` when it is not a plain ``host[:port]``."""
    authority = authority.strip().lower()
    host = _hostname(authority)
    rest = authority[len(host):]
    if not host or any(c in host for c in "/?#@ \\"):
        return None
    if not rest:
        return host, default_port
    if not rest.startswith(":") or not rest[1:].isdigit() or len(rest) > 6 or not rest[1:].isascii():
        return None
    port = int(rest[1:])
    return (host, port) if 0 < port < 65536 else None


def normalize_origin(origin: str) -> str | None:
    """An ``http(s)`` origin in the form RFC 6454 section 6.1 serializes it, with the port
    always written (``HTTPS://App.example`` -> ``https://app.example:443``), or ``None``
    when ``origin`` is not one (``null``, a path, another scheme, a bad port)."""
    scheme, sep, rest = origin.strip().partition("://")
    scheme = scheme.lower()
    if not sep or scheme not in _DEFAULT_PORTS:
        return None
    parts = _host_port(rest, _DEFAULT_PORTS[scheme])
    return None if parts is None else f"{scheme}://{parts[0]}:{parts[1]}"


def host_allowed(host: str | None, allowed: Iterable[str] | None) -> bool:
    """Whether the ``Host`` header names an allowed host (any port); ``allowed`` ``None``
    allows every host."""
    if allowed is None:
        return True
    return host is not None and _hostname(host) in {name.lower() for name in allowed}


def origin_allowed(origin: str | None, allowed: Iterable[str] | None, *, host: str | None = None,
                   host_checked: bool = False) -> bool:
    """Whether a request with this ``Origin`` header may be served (MCP "Streamable HTTP",
    "Security Warning": servers MUST validate ``Origin`` on every connection and answer an
    invalid one with 403).

    A request without ``Origin`` (not from a browser) passes. A present one passes when
    it is one of ``allowed`` (origins, compared by scheme, host and port), or when it is
    the server's own origin as the ``Host`` header names it and that ``Host`` was checked
    against an allow-list (``host_checked``): a page of the server itself, never a page of
    another site or of another port. ``allowed`` ``None`` lets every origin pass (an
    explicit opt-out). ``null`` and anything not an ``http(s)`` origin never pass.
    """
    if origin is None or allowed is None:
        return True
    normal = normalize_origin(origin)
    if normal is None:
        return False
    if normal in {normalize_origin(entry) for entry in allowed}:
        return True
    if not host_checked or host is None:
        return False
    scheme = normal.partition("://")[0]
    own = _host_port(host, _DEFAULT_PORTS[scheme])
    return own is not None and f"{scheme}://{own[0]}:{own[1]}" == normal


def check_origins(origins: Iterable[str] | None) -> None:
    """Refuse an ``allowed_origins`` entry that is not an ``http(s)`` origin.

    Raises:
        LocalProtocolError: an entry such as ``localhost`` or ``https://a.example/path``.
    """
    for entry in origins or ():
        if normalize_origin(entry) is None:
            raise LocalProtocolError(
                f"allowed_origins takes origins such as 'https://app.example.com' or "
                f"'http://localhost:3000' (scheme, host and port), not {entry!r}")


def repeated_header(headers: Iterable[tuple[str, str]], skip: frozenset[str] = frozenset()) -> str | None:
    """The first header (lower-case name) that names one thing, such as ``host``,
    ``origin`` or ``mcp-session-id``, and that ``headers`` carry more than once, or ``None``
    (headers named in ``skip`` are judged elsewhere)."""
    seen: set[str] = set()
    for name, _ in headers:
        if (name in _SINGLE or name.startswith(_SINGLE_PREFIX)) and name not in skip:
            if name in seen:
                return name
            seen.add(name)
    return None


def single_headers(headers: Iterable[tuple[str, str]]) -> dict[str, str]:
    """``headers`` by name, the values of a repeated (list-valued) one joined with ``", "``
    as RFC 9110 section 5.3 combines them; call :func:`repeated_header` first."""
    found: dict[str, str] = {}
    for name, value in headers:
        found[name] = f"{found[name]}, {value}" if name in found else value
    return found


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
