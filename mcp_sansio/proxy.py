"""HTTP proxies: which one a URL goes through, and the CONNECT tunnel through it.

:class:`ProxySettings` decides, as a pure function of a target URL and an environment
mapping the driver passes in (the core never reads ``os.environ``), whether a
connection goes through a proxy, following curl's conventions for ``HTTPS_PROXY``,
``HTTP_PROXY``, ``ALL_PROXY`` and ``NO_PROXY``. :class:`Tunnel` is the sans-IO CONNECT
exchange (RFC 9110 section 9.3.6) that both the HTTP pool and the WebSocket client run
on a fresh connection to the proxy before their own bytes; only the CONNECT carries
the proxy's credentials (``Proxy-Authorization: Basic``, RFC 7617), and no repr or
message ever shows them.
"""

from __future__ import annotations

import base64
import dataclasses
import ipaddress
import re
from collections.abc import Mapping
from typing import Final
from urllib.parse import unquote

import h11
import msgspec

from .errors import LocalProtocolError
from .urls import Url, is_loopback, parse_url

__all__ = ["NoProxyRule", "Proxy", "ProxySettings", "Tunnel", "TunnelFailed", "TunnelOpen", "proxy_settings"]

# The variables for each scheme, the one that wins first (curl and Python's urllib prefer
# the lower-case spelling when both are set).
_SCHEME_VARIABLES: Final = {"http": ("http_proxy", "HTTP_PROXY"), "https": ("https_proxy", "HTTPS_PROXY")}
_ALL_VARIABLES: Final = ("all_proxy", "ALL_PROXY")
_NO_PROXY_VARIABLES: Final = ("no_proxy", "NO_PROXY")
_NO_PROXY_SEPARATORS: Final = re.compile(r"[\s,]+")
_AUTHORITY_END: Final = re.compile(r"[/?#]")
# The reason phrase of a refusal is the proxy's text: keep the message short.
_MAX_REASON: Final = 100


@dataclasses.dataclass(frozen=True)
class Proxy:
    """An ``http://`` proxy to tunnel through.

    Attributes:
        host: its host name or IP address (IPv6 without brackets).
        port: its port (80 when the URL names none).
        authorization: the ``Proxy-Authorization`` value for the CONNECT, from the URL's
            ``user:password@``; left out of the repr.
    """

    host: str
    port: int
    authorization: str | None = dataclasses.field(default=None, repr=False)

    @property
    def authority(self) -> str:
        """``host:port`` (IPv6 bracketed), as messages name the proxy; never credentials."""
        return _authority(self.host, self.port)


@dataclasses.dataclass(frozen=True)
class NoProxyRule:
    """One ``NO_PROXY`` entry: a host name (and its subdomains) or an IP network, with an
    optional port.

    Attributes:
        name: the host name, lower-case, without a leading ``.``; empty for a network.
        network: the IP network (a single address is a ``/32`` or ``/128``).
        port: the only port it applies to, or ``None`` for all.
    """

    name: str = ""
    network: ipaddress.IPv4Network | ipaddress.IPv6Network | None = None
    port: int | None = None

    def matches(self, host: str, port: int) -> bool:
        """Whether a connection to ``host`` (lower-case, no trailing dot) and ``port`` is direct."""
        if self.port is not None and self.port != port:
            return False
        if self.network is None:
            return host == self.name or host.endswith("." + self.name)
        try:
            return ipaddress.ip_address(host) in self.network  # False across IP versions
        except ValueError:
            return False  # a host name: nothing is resolved here


@dataclasses.dataclass(frozen=True)
class ProxySettings:
    """Which proxy each URL goes through.

    Attributes:
        http: the proxy for ``http``/``ws`` URLs, if any.
        https: the proxy for ``https``/``wss`` URLs, if any.
        no_proxy: the hosts reached directly (``NO_PROXY``); ``None`` means every host.
        loopback: whether loopback targets (``localhost``, ``127.0.0.0/8``, ``::1``) use
            the proxy too; proxies from the environment never apply to them (Go's rule).
    """

    http: Proxy | None = None
    https: Proxy | None = None
    no_proxy: tuple[NoProxyRule, ...] | None = ()
    loopback: bool = False

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> ProxySettings:
        """The proxies the environment names, as curl reads them.

        ``https_proxy``/``HTTPS_PROXY`` serve ``https`` URLs, ``http_proxy``/``HTTP_PROXY``
        ``http`` ones, ``all_proxy``/``ALL_PROXY`` both when the scheme's variable is
        unset or empty. The lower-case spelling wins when both are set, even empty.
        ``HTTP_PROXY`` is ignored when ``REQUEST_METHOD`` is set: in a CGI program a
        request header named ``Proxy`` arrives as that variable ("httpoxy").

        ``NO_PROXY`` (either spelling) lists hosts reached directly, separated by commas
        or spaces: ``*`` (every host); a host name, with or without a leading ``.`` or
        ``*.``, matching it and its subdomains; an IP address or a CIDR range, matching
        literal addresses only (nothing is resolved); each optionally with ``:port``
        (IPv6 bracketed then). Malformed entries are ignored.

        Args:
            environ: the environment, e.g. ``os.environ``.

        Raises:
            LocalProtocolError: a proxy URL that would be used is malformed, or is not
                ``http://`` (``https://`` proxies and SOCKS are not supported). The
                message names the variable, never its value.
        """
        chosen: dict[str, Proxy | None] = {}
        for scheme, names in _SCHEME_VARIABLES.items():
            found = _variable(environ, names)
            if found is not None and found[0] == "HTTP_PROXY" and "REQUEST_METHOD" in environ:
                found = None
            if found is None or not found[1]:
                found = _variable(environ, _ALL_VARIABLES)
            chosen[scheme] = None if found is None else _parse_proxy(*found)
        no_proxy = _variable(environ, _NO_PROXY_VARIABLES)
        rules = _no_proxy_rules(no_proxy[1] if no_proxy is not None else "")
        return cls(http=chosen["http"], https=chosen["https"], no_proxy=rules)

    @classmethod
    def explicit(cls, url: str) -> ProxySettings:
        """``url`` for every target, loopback ones included; the environment plays no part.

        Raises:
            LocalProtocolError: ``url`` is malformed or not an ``http://`` proxy URL.
        """
        proxy = _parse_proxy("proxy", url)
        if proxy is None:
            raise LocalProtocolError("proxy: the proxy URL is empty")
        return cls(http=proxy, https=proxy, loopback=True)

    def select(self, url: Url) -> Proxy | None:
        """The proxy to reach ``url`` through, or ``None`` to connect directly."""
        proxy = self.https if url.scheme == "https" else self.http
        if proxy is None or self.no_proxy is None or (not self.loopback and is_loopback(url)):
            return None
        host = url.host.rstrip(".")
        if any(rule.matches(host, url.port) for rule in self.no_proxy):
            return None
        return proxy


def proxy_settings(proxy: str | bool, environ: Mapping[str, str]) -> ProxySettings | None:
    """The drivers' ``proxy=`` option: ``True`` reads ``environ``, ``False`` connects
    directly, a string is the one proxy URL for every target.

    Raises:
        LocalProtocolError: the proxy URL to use is malformed or unsupported.
    """
    if proxy is True:
        return ProxySettings.from_environ(environ)
    if proxy is False:
        return None
    return ProxySettings.explicit(proxy)


def _variable(environ: Mapping[str, str], names: tuple[str, str]) -> tuple[str, str] | None:
    """``(name, value)`` of the first of ``names`` that is set, stripped; ``None`` if none is."""
    for name in names:
        value = environ.get(name)
        if value is not None:
            return name, value.strip()
    return None


def _parse_proxy(source: str, text: str) -> Proxy | None:
    """The proxy ``text`` names (``None`` when empty); ``source`` names it in errors."""
    if not text:
        return None
    scheme, separator, rest = text.partition("://")
    if not separator:
        scheme, rest = "http", text  # "proxy:3128", as curl and Go read it
    scheme = scheme.lower()
    if scheme == "https":
        raise LocalProtocolError(f"{source}: TLS to the proxy itself (an https:// proxy) is not supported")
    if scheme != "http":
        raise LocalProtocolError(f"{source}: {scheme[:20]!r} proxies are not supported, only http://")
    authority = _AUTHORITY_END.split(rest, maxsplit=1)[0]
    userinfo, at, host_port = authority.rpartition("@")
    try:
        url = parse_url(f"http://{host_port}/")
    except LocalProtocolError:
        # The details could quote a mistyped password: name the variable only.
        raise LocalProtocolError(f"{source} is not a valid http:// proxy URL") from None
    authorization = None
    if at:
        user, _, password = userinfo.partition(":")
        pair = f"{unquote(user)}:{unquote(password)}".encode()
        authorization = "Basic " + base64.b64encode(pair).decode("ascii")
    return Proxy(host=url.host, port=url.port, authorization=authorization)


def _no_proxy_rules(text: str) -> tuple[NoProxyRule, ...] | None:
    """The rules of a ``NO_PROXY`` value; ``None`` when it holds ``*``."""
    rules = []
    for entry in _NO_PROXY_SEPARATORS.split(text.lower()):
        if entry == "*":
            return None
        rule = _rule(entry)
        if rule is not None:
            rules.append(rule)
    return tuple(rules)


def _rule(entry: str) -> NoProxyRule | None:
    """One ``NO_PROXY`` entry, or ``None`` when it is empty or malformed."""
    port = ""
    if entry.startswith("["):
        host, bracket, rest = entry[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            return None
        port = rest[1:]
    elif entry.count(":") == 1:
        host, _, port = entry.partition(":")
    else:
        host = entry  # a name, or an IPv6 address or range without a port
    if port and not (port.isdecimal() and 0 < int(port) < 65536):
        return None
    number = int(port) if port else None
    try:
        return NoProxyRule(network=ipaddress.ip_network(host, strict=False), port=number)
    except ValueError:
        pass
    name = host.removeprefix("*").removeprefix(".").rstrip(".")
    return NoProxyRule(name=name, port=number) if name else None


def _authority(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class TunnelOpen(msgspec.Struct, frozen=True, kw_only=True):
    """The proxy opened the tunnel (a 2xx answer to CONNECT).

    Attributes:
        leftover: bytes that followed the answer in the same read: the target's, to be
            read as such (always empty when TLS follows, or the tunnel would have failed).
    """

    leftover: bytes


class TunnelFailed(msgspec.Struct, frozen=True, kw_only=True):
    """The tunnel could not be opened; the connection is useless.

    Attributes:
        message: what happened, naming the proxy and the target, never credentials.
        status: the proxy's HTTP status when it refused; ``None`` when it closed the
            connection or answered with something that is not HTTP.
    """

    message: str
    status: int | None = None


class Tunnel:
    """The CONNECT exchange on a fresh connection to a proxy (RFC 9110 section 9.3.6).

    Write :attr:`request` once connected, feed what the proxy sends to
    :meth:`receive_data` until it returns an outcome, then use the connection for the
    target (after a TLS handshake with the target when ``tls``). The proxy's answer head
    may not exceed ``max_header_bytes``, however the bytes are split.
    """

    __slots__ = ("_h11", "_room", "_tls", "request", "where")

    def __init__(self, proxy: Proxy, host: str, port: int, *, tls: bool, max_header_bytes: int) -> None:
        """Prepare the CONNECT to ``host:port`` through ``proxy``.

        Args:
            proxy: the proxy; its credentials go in ``Proxy-Authorization``.
            host: the target host.
            port: the target port.
            tls: whether TLS with the target follows: then no byte may follow the answer.
            max_header_bytes: the largest answer head accepted.
        """
        target = _authority(host, port)
        self.where = f"the proxy {proxy.authority} (tunnel to {target})"
        headers = [("host", target)]
        if proxy.authorization is not None:
            headers.append(("proxy-authorization", proxy.authorization))
        self._h11 = h11.Connection(h11.CLIENT, max_incomplete_event_size=max_header_bytes)
        # Built from a parsed URL's host and a Basic token: h11 accepts them.
        self.request: bytes = self._h11.send(h11.Request(method="CONNECT", target=target, headers=headers))
        self._h11.send(h11.EndOfMessage())
        self._tls = tls
        self._room = max_header_bytes  # answer head bytes still allowed

    def receive_data(self, data: bytes) -> TunnelOpen | TunnelFailed | None:
        """Feed bytes from the proxy (``b""`` at EOF); ``None`` while the answer is incomplete.

        Call it no more once it returned an outcome.
        """
        head, rest = data[: self._room], data[self._room :]
        self._room -= len(head)
        self._h11.receive_data(head)
        try:
            while True:
                event = self._h11.next_event()
                if isinstance(event, h11.Response):
                    return self._answered(event, rest)
                if event is h11.NEED_DATA:
                    break
                # else a 1xx interim answer: the real one follows
        except h11.RemoteProtocolError as exc:
            if not data:
                return TunnelFailed(message=f"{self.where} closed the connection before answering CONNECT")
            return TunnelFailed(message=f"{self.where} sent an invalid answer to CONNECT: {exc}")
        if not self._room:
            return TunnelFailed(message=f"{self.where} answered CONNECT with a head over the size limit")
        return None

    def _answered(self, event: h11.Response, rest: bytes) -> TunnelOpen | TunnelFailed:
        status = event.status_code
        if not 200 <= status < 300:
            reason = event.reason.decode("latin-1")[:_MAX_REASON]
            message = f"{self.where} refused: HTTP {status} {reason}".rstrip()
            return TunnelFailed(message=message, status=status)
        leftover = self._h11.trailing_data[0] + rest
        if leftover and self._tls:
            return TunnelFailed(message=f"{self.where} sent data before the TLS handshake")
        return TunnelOpen(leftover=leftover)
