"""OAuth for ``connect_http(url, auth=OAuth(...))``: settings, token stores, the loopback redirect.

The core (:class:`mcp_sansio.http_auth.AuthorizingHttpClient`) makes every OAuth
decision; this module supplies what only the host has: where the browser comes back to
(a listener on ``127.0.0.1``), opening the browser, and keeping tokens between runs.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import logging
import os
import socket
import webbrowser
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Protocol

import msgspec

from mcp_sansio.auth import (
    AuthorizationCodeGrant,
    ClientCredentials,
    ClientCredentialsGrant,
    Grant,
    IdJagGrant,
    JwtBearerGrant,
    OAuthConfig,
    SigningKey,
    Token,
)
from mcp_sansio.errors import LocalProtocolError
from mcp_sansio.urls import is_loopback, parse_url

__all__ = [
    "FileTokenStore",
    "MemoryTokenStore",
    "OAuth",
    "StoredToken",
    "TokenStore",
    "es256_key",
]

log = logging.getLogger("mcp_sansio.oauth")

_MAX_REQUEST_LINE: Final = 8192
_MAX_HEADER_LINES: Final = 100
_PAGE: Final = (b"<!doctype html><meta charset=utf-8><title>mcp-sansio</title>"
                b"<p>%s You can close this window.</p>")


class StoredToken(msgspec.Struct, frozen=True, kw_only=True):
    """A token as kept between runs; ``expires_at`` is Unix time.

    Attributes:
        access_token: the access token.
        token_type: ``"Bearer"`` or ``"DPoP"`` (only bearer tokens are reused).
        expires_at: when it expires (Unix time), if known.
        scopes: the scopes granted.
        refresh_token: the refresh token, if one was issued.
        issuer: the authorization server that issued it.
    """

    access_token: str
    token_type: str
    expires_at: float | None
    scopes: tuple[str, ...]
    refresh_token: str | None
    issuer: str


class TokenStore(Protocol):
    """Where tokens live between connections, keyed by MCP server URL."""

    def load(self, server_url: str) -> StoredToken | None:
        """The latest token saved for ``server_url``, if any."""
        ...

    def save(self, server_url: str, token: StoredToken) -> None:
        """Keep ``token`` for ``server_url`` (one per issuer)."""
        ...

    def delete(self, server_url: str) -> None:
        """Forget every token of ``server_url``."""
        ...


class MemoryTokenStore:
    """Tokens for the life of the process (the default)."""

    def __init__(self) -> None:
        self._tokens: dict[str, StoredToken] = {}

    def load(self, server_url: str) -> StoredToken | None:
        """The latest token saved for ``server_url``, if any."""
        return self._tokens.get(server_url)

    def save(self, server_url: str, token: StoredToken) -> None:
        """Keep ``token`` for ``server_url``."""
        self._tokens[server_url] = token

    def delete(self, server_url: str) -> None:
        """Forget the token of ``server_url``."""
        self._tokens.pop(server_url, None)


class _TokenFile(msgspec.Struct, kw_only=True):
    server_url: str
    latest: str  # the issuer saved last
    tokens: dict[str, StoredToken]  # by issuer


class FileTokenStore:
    """Tokens in JSON files readable only by the user (mode 0600), one per server URL.

    Each file holds the server's tokens by issuer; ``load`` returns the one saved last.
    """

    def __init__(self, directory: str | os.PathLike[str] | None = None) -> None:
        """Keep the files in ``directory`` (default ``~/.config/mcp-sansio/tokens``)."""
        default = Path.home() / ".config" / "mcp-sansio" / "tokens"
        self.directory = Path(directory) if directory is not None else default

    def path(self, server_url: str) -> Path:
        """The file of ``server_url``."""
        digest = hashlib.sha256(server_url.encode()).digest()
        return self.directory / (base64.urlsafe_b64encode(digest[:20]).decode().rstrip("=") + ".json")

    def load(self, server_url: str) -> StoredToken | None:
        """The latest token saved for ``server_url``; ``None`` if none or unreadable."""
        stored = self._read(server_url)
        return None if stored is None else stored.tokens.get(stored.latest)

    def save(self, server_url: str, token: StoredToken) -> None:
        """Keep ``token`` under its issuer, replacing the file atomically."""
        stored = self._read(server_url)
        tokens = dict(stored.tokens) if stored is not None else {}
        tokens[token.issuer] = token
        data = msgspec.json.encode(_TokenFile(server_url=server_url, latest=token.issuer, tokens=tokens))
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        target = self.path(server_url)
        temporary = target.with_suffix(".tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(temporary, target)

    def delete(self, server_url: str) -> None:
        """Remove the file of ``server_url``."""
        with contextlib.suppress(FileNotFoundError):
            self.path(server_url).unlink()

    def _read(self, server_url: str) -> _TokenFile | None:
        try:
            stored = msgspec.json.decode(self.path(server_url).read_bytes(), type=_TokenFile)
        except (OSError, msgspec.DecodeError):
            return None
        return stored if stored.server_url == server_url else None


BrowserOpener = Callable[[str], object]


@dataclass(frozen=True, kw_only=True)
class OAuth:
    """How ``connect_http`` authorizes with OAuth 2.1.

    Attributes:
        grant: a grant with no browser (client credentials, JWT bearer, ID-JAG); ``None``
            means a user signs in through the browser (authorization code with PKCE).
        client: credentials registered beforehand (tried before a metadata document or
            dynamic registration); a ``signing_key`` makes them ``private_key_jwt``.
        client_name: the name given in a dynamic client registration.
        client_metadata_url: the host's Client ID Metadata Document URL, if it has one.
        redirect_uri: where the browser comes back to; by default
            ``http://127.0.0.1:<redirect_port>/callback``, served here while needed.
        redirect_port: the loopback port of the default redirect URI (0: a free one,
            chosen when connecting).
        dpop_key: a key for DPoP-bound tokens (RFC 9449), e.g. :func:`es256_key`.
        store: where tokens are kept between connections.
        open_browser: opens a URL for the user (default :func:`webbrowser.open`).
        headless: no browser: the authorization URL is fetched and its redirect read,
            for servers that authorize at once (test servers).
        redirect_timeout: how long the user has to sign in.
        request_offline_access: ask for ``offline_access`` where the server offers it.
        max_authorization_attempts: authorizations in a row before giving up.
    """

    grant: ClientCredentialsGrant | JwtBearerGrant | IdJagGrant | None = None
    client: ClientCredentials | None = None
    client_name: str = "mcp-sansio"
    client_metadata_url: str | None = None
    redirect_uri: str | None = None
    redirect_port: int = 0
    dpop_key: SigningKey | None = None
    store: TokenStore = field(default_factory=MemoryTokenStore)
    open_browser: BrowserOpener | None = None
    headless: bool = False
    redirect_timeout: float = 300.0
    request_offline_access: bool = True
    max_authorization_attempts: int = 3

    @property
    def uses_browser(self) -> bool:
        """Whether this is the authorization code flow (a redirect URI is needed)."""
        return self.grant is None

    def planner_config(self, redirect_uri: str | None) -> OAuthConfig:
        """The core's :class:`OAuthConfig`, with the redirect URI chosen for this connection.

        Raises:
            LocalProtocolError: the settings are inconsistent.
        """
        grant: Grant
        if self.grant is not None:
            grant = self.grant
        elif redirect_uri is None:
            raise LocalProtocolError("the browser flow needs a redirect URI")
        else:
            grant = AuthorizationCodeGrant(redirect_uri=redirect_uri,
                                           client_metadata_url=self.client_metadata_url)
        return OAuthConfig(grant=grant, client=self.client, client_name=self.client_name,
                           dpop_key=self.dpop_key, request_offline_access=self.request_offline_access,
                           max_authorization_attempts=self.max_authorization_attempts)


def stored_from(token: Token, *, clock_offset: float) -> StoredToken:
    """A core token as kept between runs (its expiry moved to Unix time)."""
    expires = None if token.expires_at is None else token.expires_at + clock_offset
    return StoredToken(access_token=token.access_token, token_type=token.token_type, expires_at=expires,
                       scopes=token.scopes, refresh_token=token.refresh_token, issuer=token.issuer)


def token_from(stored: StoredToken, *, clock_offset: float) -> Token:
    """A kept token for the core (its expiry moved to the monotonic clock)."""
    expires = None if stored.expires_at is None else stored.expires_at - clock_offset
    return Token(access_token=stored.access_token, token_type=stored.token_type, expires_at=expires,
                 scopes=stored.scopes, refresh_token=stored.refresh_token, issuer=stored.issuer, serial=0)


def es256_key(private_key_pem: str | bytes | None = None, *, kid: str | None = None) -> SigningKey:
    """An ES256 :class:`SigningKey` from a PKCS#8 PEM P-256 key, or a new key (needs ``cryptography``).

    Raises:
        LocalProtocolError: the PEM is no P-256 private key.
    """
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

    if private_key_pem is None:
        private = ec.generate_private_key(ec.SECP256R1())
    else:
        pem = private_key_pem.encode() if isinstance(private_key_pem, str) else private_key_pem
        loaded = serialization.load_pem_private_key(pem, password=None)
        if not isinstance(loaded, ec.EllipticCurvePrivateKey) or loaded.curve.name != "secp256r1":
            raise LocalProtocolError("ES256 needs a P-256 private key")
        private = loaded
    numbers = private.public_key().public_numbers()

    def coordinate(value: int) -> str:
        return base64.urlsafe_b64encode(value.to_bytes(32, "big")).rstrip(b"=").decode()

    def sign(data: bytes) -> bytes:
        r, s = decode_dss_signature(private.sign(data, ec.ECDSA(hashes.SHA256())))
        return r.to_bytes(32, "big") + s.to_bytes(32, "big")

    jwk = {"kty": "EC", "crv": "P-256", "x": coordinate(numbers.x), "y": coordinate(numbers.y)}
    return SigningKey(alg="ES256", sign=sign, public_jwk=jwk, kid=kid)


class RedirectListener:
    """The loopback HTTP server the browser is redirected to.

    The port is reserved when the connection is made (so the redirect URI can be
    registered), and served only while a redirect is awaited.
    """

    def __init__(self, host: str, port: int, path: str, *, authority: str | None = None) -> None:
        """Bind ``host:port`` (0: a free port) without listening yet; ``authority`` is how
        the redirect URI names it (default ``host:port``).

        Raises:
            OSError: the port cannot be bound.
        """
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._sock: socket.socket | None = socket.socket(family, socket.SOCK_STREAM)
        try:
            self._sock.bind((host, port))
        except OSError:
            self._sock.close()
            raise
        self.host = host
        self.port: int = self._sock.getsockname()[1]
        self.path = path
        shown = f"[{host}]" if ":" in host else host
        self._origin = f"http://{authority or f'{shown}:{self.port}'}"
        self.redirect_uri = self._origin + path
        """The redirect URI this listener serves."""
        self._server: asyncio.Server | None = None
        self._on_redirect: Callable[[str], str] | None = None

    @classmethod
    def for_uri(cls, redirect_uri: str) -> RedirectListener | None:
        """A listener for a loopback ``http`` redirect URI, else ``None`` (served elsewhere).

        Raises:
            OSError: its port cannot be bound.
        """
        url = parse_url(redirect_uri)
        if url.scheme != "http" or not is_loopback(url):
            return None
        host = "127.0.0.1" if url.host == "localhost" else url.host
        listener = cls(host, url.port, url.target.partition("?")[0], authority=url.authority)
        listener.redirect_uri = redirect_uri
        return listener

    async def serve(self, on_redirect: Callable[[str], str]) -> None:
        """Listen; each GET of the path calls ``on_redirect(full URL)``, whose text is shown."""
        self._on_redirect = on_redirect
        if self._server is not None:
            return
        sock, self._sock = self._sock, None
        if sock is not None:
            sock.listen()
            self._server = await asyncio.start_server(self._handle, sock=sock)
        else:
            self._server = await asyncio.start_server(self._handle, self.host, self.port)

    async def stop(self) -> None:
        """Stop listening (the port is released)."""
        server, self._server = self._server, None
        if server is not None:
            server.close()
            await server.wait_closed()

    def close(self) -> None:
        """Release everything at once."""
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        if self._server is not None:
            self._server.close()
            self._server = None

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = await reader.readuntil(b"\n")
            for _ in range(_MAX_HEADER_LINES):
                if (await reader.readuntil(b"\n")).strip() == b"":
                    break
            method, target, _version = line[:_MAX_REQUEST_LINE].decode("latin-1").split(" ", 2)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError, ConnectionError):
            writer.close()
            return
        on_redirect = self._on_redirect
        if method != "GET" or target.partition("?")[0] != self.path or on_redirect is None:
            status, text = "404 Not Found", "Nothing here."
        else:
            status, text = "200 OK", on_redirect(self._origin + target)
        body = _PAGE % text.encode("utf-8", "replace").replace(b"<", b"&lt;")
        writer.write(f"HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\n"
                     f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)
        with contextlib.suppress(ConnectionError):
            await writer.drain()
        writer.close()


def open_in_browser(opener: BrowserOpener | None, url: str) -> None:
    """Open ``url`` for the user; say where to go if no browser opened."""
    log.info("opening the browser for authorization: %s", url)
    if opener is not None:
        opener(url)
        return
    if not webbrowser.open(url):
        log.warning("open this URL to authorize: %s", url)
