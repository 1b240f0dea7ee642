"""Where OAuth tokens live between connections: in memory, or in files only the user reads.

A stored token's expiry is Unix time; the core's is on the driver's monotonic clock, so
:func:`stored_from` and :func:`token_from` convert with the offset between the two.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import os
from pathlib import Path
from typing import Protocol

import msgspec

from mcp_sansio.auth import Token

__all__ = [
    "FileTokenStore",
    "MemoryTokenStore",
    "StoredToken",
    "TokenStore",
    "stored_from",
    "token_from",
]


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

    def __repr__(self) -> str:
        return f"StoredToken(token_type={self.token_type!r}, scopes={self.scopes!r}, issuer={self.issuer!r})"


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
