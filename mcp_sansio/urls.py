"""Absolute ``http``/``https`` URLs: parsing, reference resolution and origin checks.

Implements the generic syntax of RFC 3986 (section 3, appendix B) restricted to the two
schemes HTTP runs on, and reference resolution per section 5.2 in its strict form, for
``Location`` headers and SSE ``endpoint`` events. Userinfo is refused outright so that no
credential ever rides in a URL; fragments are dropped, as no HTTP request carries one.
"""

from __future__ import annotations

import ipaddress
import re
import string
from typing import Final
from urllib.parse import quote

import msgspec

from mcp_sansio.errors import LocalProtocolError, RemoteProtocolError

__all__ = ["Url", "is_loopback", "is_loopback_host", "parse_url", "resolve_url", "same_origin"]

_DEFAULT_PORTS: Final = {"http": 80, "https": 443}
# RFC 3986 appendix B: scheme, authority, path, query, fragment (None when absent).
_REFERENCE: Final = re.compile(r"(?:([^:/?#]+):)?(?://([^/?#]*))?([^?#]*)(?:\?([^#]*))?(?:#.*)?")
# Space and controls never belong in a URL; letting them through would smuggle lines into
# the request head.
_FORBIDDEN: Final = re.compile(r"[\x00-\x20\x7f]")
# reg-name: unreserved / pct-encoded / sub-delims (RFC 3986 section 3.2.2).
_REG_NAME: Final = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,;=%]+")
_PORT: Final = re.compile(r"[0-9]*")
_MAX_PORT: Final = 65535


class Url(msgspec.Struct, frozen=True, kw_only=True):
    """An absolute HTTP(S) URL, normalised for comparison and for building a request.

    Attributes:
        scheme: ``"http"`` or ``"https"``, lower-case.
        host: a lower-case host name or IP address; IPv6 without brackets, compressed.
        port: the explicit port, or the scheme's default (80 or 443).
        target: the request target: path (at least ``"/"``), then ``"?"`` and the query
            when the URL has one; non-ASCII characters percent-encoded as UTF-8.
    """

    scheme: str
    host: str
    port: int
    target: str

    @property
    def origin(self) -> tuple[str, str, int]:
        """The ``(scheme, host, port)`` triple that same-origin checks compare."""
        return (self.scheme, self.host, self.port)

    @property
    def authority(self) -> str:
        """The ``Host`` header value: the host (IPv6 bracketed), then a non-default port."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        if self.port == _DEFAULT_PORTS.get(self.scheme):
            return host
        return f"{host}:{self.port}"

    def __str__(self) -> str:
        """The absolute URL, without fragment."""
        return f"{self.scheme}://{self.authority}{self.target}"


def parse_url(text: str) -> Url:
    """Parse an absolute ``http``/``https`` URL given by the user or the configuration.

    Dot segments in the path are removed, as RFC 3986 section 5.2.2 does for an absolute
    reference, so ``parse_url(s) == resolve_url(base, s)`` for any absolute ``s``.

    Args:
        text: the URL.

    Returns:
        The parsed URL.

    Raises:
        LocalProtocolError: the scheme is not http(s), the host is missing or invalid, the
            port is not in 1-65535, the URL holds credentials, spaces or control
            characters.
    """
    try:
        return _parse_absolute(text)
    except ValueError as exc:
        raise LocalProtocolError(f"invalid URL: {exc}") from exc


def resolve_url(base: Url, reference: str) -> Url:
    """Resolve a URI reference the server sent against ``base`` (RFC 3986 section 5.2.2).

    Resolution is strict: a reference with a scheme is absolute, so ``"http:g"`` names no
    host and is refused rather than read as the relative path ``g``.

    Args:
        base: the URL of the request the reference came in the answer to.
        reference: a ``Location`` header value or an SSE ``endpoint`` event's data.

    Returns:
        The target URL.

    Raises:
        RemoteProtocolError: the reference is malformed, or resolves to a URL
            :func:`parse_url` would refuse.
    """
    try:
        return _resolve(base, reference)
    except ValueError as exc:
        raise RemoteProtocolError(f"invalid URL reference from the server: {exc}") from exc


def same_origin(a: Url, b: Url) -> bool:
    """Whether ``a`` and ``b`` share scheme, host and port (RFC 6454 section 5)."""
    return a.origin == b.origin


def is_loopback(url: Url) -> bool:
    """Whether ``url`` names this machine: ``localhost``, ``127.0.0.0/8`` or ``::1``.

    Only literal addresses and the name ``localhost`` count; no name is resolved here.
    """
    return is_loopback_host(url.host)


def is_loopback_host(host: str) -> bool:
    """Whether ``host`` (a name or an address, IPv6 with or without brackets, in any
    spelling: ``0:0:0:0:0:0:0:1``, ``::ffff:127.0.0.1``, ``LOCALHOST.``) names this machine.

    Only literal addresses and the name ``localhost`` count; no name is resolved here.
    """
    host = host.strip().lower()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host in ("localhost", "localhost.")
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped.is_loopback
    return address.is_loopback


def _split(text: str) -> tuple[str | None, str | None, str, str | None]:
    """Split a reference into scheme, authority, path and query; the fragment is dropped."""
    if _FORBIDDEN.search(text):
        raise ValueError("spaces and control characters are not allowed")
    match = _REFERENCE.fullmatch(text)
    # The pattern matches every string: each group is optional or accepts anything.
    assert match is not None
    scheme, authority, path, query = match.groups()
    return scheme, authority, path, query


def _parse_absolute(text: str) -> Url:
    """Parse an absolute URL; ``ValueError`` names the defect."""
    scheme, authority, path, query = _split(text)
    if scheme is None:
        raise ValueError("the URL has no scheme")
    return _build(scheme, authority, _remove_dot_segments(path), query)


def _resolve(base: Url, reference: str) -> Url:
    """RFC 3986 section 5.2.2, strict; ``ValueError`` names the defect."""
    scheme, authority, path, query = _split(reference)
    if scheme is not None:
        return _build(scheme, authority, _remove_dot_segments(path), query)
    if authority is not None:
        return _build(base.scheme, authority, _remove_dot_segments(path), query)
    base_path, has_query, base_query = base.target.partition("?")
    if not path:
        path = base_path
        if query is None and has_query:
            query = base_query
    elif path.startswith("/"):
        path = _remove_dot_segments(path)
    else:
        # Merge (section 5.2.3): the base always has an authority and a path of at least "/".
        path = _remove_dot_segments(base_path[: base_path.rindex("/") + 1] + path)
    return Url(scheme=base.scheme, host=base.host, port=base.port, target=_target(path, query))


def _build(scheme: str, authority: str | None, path: str, query: str | None) -> Url:
    """Validate the parts of an absolute URL and normalise them into a :class:`Url`."""
    scheme = scheme.lower()
    default_port = _DEFAULT_PORTS.get(scheme)
    if default_port is None:
        raise ValueError(f"the scheme must be http or https, not {scheme!r}")
    if not authority:
        raise ValueError("the URL has no host")
    if "@" in authority:
        raise ValueError("credentials in URLs are refused; pass them in a header")
    if authority.startswith("["):
        literal, bracket, port = authority[1:].partition("]")
        if not bracket or (port and not port.startswith(":")):
            raise ValueError("malformed IPv6 literal")
        try:
            host = str(ipaddress.IPv6Address(literal))
        except ValueError:
            raise ValueError(f"invalid IPv6 address {literal!r}") from None
        port = port[1:]
    else:
        host, _, port = authority.partition(":")
        host = _reg_name(host)
    return Url(scheme=scheme, host=host, port=_port(port, default_port), target=_target(path, query))


def _reg_name(host: str) -> str:
    """Validate a host name or IPv4 address; non-ASCII names are IDNA-encoded."""
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            raise ValueError(f"invalid international host name {host!r}") from None
    if not _REG_NAME.fullmatch(host):
        raise ValueError(f"invalid host {host!r}")
    return host.lower()


def _port(text: str, default: int) -> int:
    """The port an authority names: ``default`` when empty, else 1-65535."""
    if not text:
        return default
    digits = text.lstrip("0")
    if not _PORT.fullmatch(text) or not digits or len(digits) > 5 or int(digits) > _MAX_PORT:
        raise ValueError(f"invalid port {text!r}")
    return int(digits)


def _target(path: str, query: str | None) -> str:
    """Join path and query into a request target, percent-encoding non-ASCII as UTF-8."""
    target = path or "/"
    if query is not None:
        target = f"{target}?{query}"
    if not target.isascii():
        target = quote(target, safe=string.punctuation)
    return target


def _remove_dot_segments(path: str) -> str:
    """RFC 3986 section 5.2.4 for the absolute or empty paths a URL with a host has."""
    if "." not in path:
        return path
    output: list[str] = []
    segments = path.split("/")
    for segment in segments:
        if segment == "..":
            if len(output) > 1:
                output.pop()
        elif segment != ".":
            output.append(segment)
    if segments[-1] in {".", ".."}:
        output.append("")
    return "/".join(output)
