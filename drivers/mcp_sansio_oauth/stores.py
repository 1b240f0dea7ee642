"""Where OAuth tokens live between connections: in memory, or in files only the user reads.

A stored token's expiry is Unix time; the core's is on the driver's monotonic clock, so
:func:`stored_from` and :func:`token_from` convert with the offset between the two.
"""

from __future__ import annotations

import base64
import contextlib
import errno
import hashlib
import os
import secrets
import shlex
import stat
from pathlib import Path
from typing import Final, Protocol

import msgspec

from mcp_sansio.auth import Token
from mcp_sansio.errors import McpSansioError

__all__ = [
    "FileTokenStore",
    "MemoryTokenStore",
    "StoredToken",
    "TokenStore",
    "UnsafeTokenStore",
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


class UnsafeTokenStore(McpSansioError):
    """The token directory or file could let another user read or redirect tokens.

    Nothing was read from it or written to it.

    Attributes:
        path: the directory or file refused.
    """

    def __init__(self, message: str, *, path: Path) -> None:
        super().__init__(message)
        self.path = path


_TEMPORARY_ATTEMPTS: Final = 16  # fresh random names tried before giving up
_DIRECTORY_FLAGS: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
_READ_FLAGS: Final = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK  # a planted FIFO cannot stall us
_CREATE_FLAGS: Final = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW


class FileTokenStore:
    """Tokens in JSON files readable only by the user (mode 0600), one per server URL.

    Each file holds the server's tokens by issuer; ``load`` returns the one saved last.
    Files are written as OpenSSH writes its keys: a fresh temporary file (``O_EXCL``,
    ``O_NOFOLLOW``, mode 0600), ``fsync``, ``rename`` over the old one, ``fsync`` of the
    directory. Every call goes through a descriptor of the directory opened without
    following a symlink, so no path is looked up twice. A directory that is a symlink, not
    the user's, or writable by group or others, and a token file that is a symlink, not a
    regular file, not the user's or readable by others, are refused with
    :class:`UnsafeTokenStore` (POSIX only).
    """

    def __init__(self, directory: str | os.PathLike[str] | None = None) -> None:
        """Keep the files in ``directory`` (default ``~/.config/mcp-sansio/tokens``)."""
        default = Path.home() / ".config" / "mcp-sansio" / "tokens"
        self.directory = Path(directory) if directory is not None else default

    def __repr__(self) -> str:
        return f"FileTokenStore({str(self.directory)!r})"

    def path(self, server_url: str) -> Path:
        """The file of ``server_url``."""
        return self.directory / self._name(server_url)

    def load(self, server_url: str) -> StoredToken | None:
        """The latest token saved for ``server_url``; ``None`` if none or damaged.

        Raises:
            UnsafeTokenStore: the directory or the file is unsafe (see the class).
            OSError: the file could not be read.
        """
        directory = self._open_directory()
        if directory is None:
            return None
        try:
            stored = self._read(directory, server_url)
        finally:
            os.close(directory)
        return None if stored is None else stored.tokens.get(stored.latest)

    def save(self, server_url: str, token: StoredToken) -> None:
        """Keep ``token`` under its issuer, replacing the file atomically.

        Raises:
            UnsafeTokenStore: the directory or the file is unsafe (see the class).
            OSError: the file could not be written (disk full, read-only file system).
        """
        directory = self._make_directory()
        try:
            stored = self._read(directory, server_url)
            tokens = dict(stored.tokens) if stored is not None else {}
            tokens[token.issuer] = token
            data = msgspec.json.encode(_TokenFile(server_url=server_url, latest=token.issuer, tokens=tokens))
            self._replace(directory, self._name(server_url), data)
        finally:
            os.close(directory)

    def delete(self, server_url: str) -> None:
        """Remove the file of ``server_url`` (a symlink there is removed, never followed).

        Raises:
            UnsafeTokenStore: the directory is unsafe (see the class).
        """
        directory = self._open_directory()
        if directory is None:
            return
        try:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self._name(server_url), dir_fd=directory)
        finally:
            os.close(directory)

    @staticmethod
    def _name(server_url: str) -> str:
        digest = hashlib.sha256(server_url.encode()).digest()
        return base64.urlsafe_b64encode(digest[:20]).decode().rstrip("=") + ".json"

    def _make_directory(self) -> int:
        """A descriptor of the checked directory, created (mode 0700) if missing."""
        self.directory.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            self.directory.mkdir(mode=0o700)
        fd = self._open_directory()
        if fd is None:  # removed between the two calls
            raise FileNotFoundError(f"token directory {self.directory} vanished while it was created")
        return fd

    def _open_directory(self) -> int | None:
        """A descriptor of the checked directory; ``None`` if it does not exist."""
        where = self.directory
        try:
            fd = os.open(where, _DIRECTORY_FLAGS)
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                raise
            kind = "a symlink" if where.is_symlink() else "not a directory"
            raise UnsafeTokenStore(
                f"token directory {where} is {kind}; tokens are kept only in a real directory: "
                f"remove it or name the real directory (FileTokenStore(directory), --token-dir)",
                path=where) from exc
        try:
            _check_directory(fd, where)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _read(self, directory: int, server_url: str) -> _TokenFile | None:
        name = self._name(server_url)
        try:
            fd = os.open(name, _READ_FLAGS, dir_fd=directory)
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno != errno.ELOOP:
                raise
            raise UnsafeTokenStore(
                f"token file {self.directory / name} is a symlink; it is never followed: "
                f"remove it (mcp-sansio auth logout --url URL)", path=self.directory / name) from exc
        try:
            _check_file(fd, self.directory / name)
        except BaseException:
            os.close(fd)
            raise
        with os.fdopen(fd, "rb") as file:
            data = file.read()
        try:
            stored = msgspec.json.decode(data, type=_TokenFile)
        except msgspec.DecodeError:
            return None  # damaged: as if there were none; the next save replaces it
        return stored if stored.server_url == server_url else None

    def _replace(self, directory: int, name: str, data: bytes) -> None:
        """Write ``data`` to a new temporary file, then rename it over ``name``."""
        for _ in range(_TEMPORARY_ATTEMPTS):
            temporary = f".{name}.{secrets.token_hex(8)}.tmp"
            try:
                fd = os.open(temporary, _CREATE_FLAGS, 0o600, dir_fd=directory)
            except FileExistsError:
                continue
            break
        else:
            raise FileExistsError(f"no fresh temporary name for {self.directory / name}")
        try:
            with os.fdopen(fd, "wb") as out:
                os.fchmod(fd, 0o600)  # whatever the umask left
                out.write(data)
                out.flush()
                os.fsync(fd)
            os.rename(temporary, name, src_dir_fd=directory, dst_dir_fd=directory)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary, dir_fd=directory)
            raise
        os.fsync(directory)


def _check_directory(fd: int, path: Path) -> None:
    """Refuse the directory ``fd`` unless the user owns it and nobody else may write in it.

    Raises:
        UnsafeTokenStore: naming ``path``, what is wrong and the fix.
    """
    _check_mode(os.fstat(fd), path, "token directory", forbidden=0o022, wanted=0o700)


def _check_file(fd: int, path: Path) -> None:
    """Refuse the file ``fd`` unless it is a regular file of the user's that nobody else may read.

    Raises:
        UnsafeTokenStore: naming ``path``, what is wrong and the fix.
    """
    status = os.fstat(fd)
    if not stat.S_ISREG(status.st_mode):
        raise UnsafeTokenStore(f"token file {path} is not a regular file: remove it", path=path)
    _check_mode(status, path, "token file", forbidden=0o077, wanted=0o600)


def _check_mode(status: os.stat_result, path: Path, what: str, *, forbidden: int, wanted: int) -> None:
    if status.st_uid != os.geteuid():
        raise UnsafeTokenStore(
            f"{what} {path} belongs to user id {status.st_uid}, not to you ({os.geteuid()}): "
            f"remove it, or keep tokens in a directory of your own", path=path)
    mode = stat.S_IMODE(status.st_mode)
    if mode & forbidden:
        raise UnsafeTokenStore(
            f"{what} {path} has mode {mode:04o}, open to other users: "
            f"chmod {wanted:o} {shlex.quote(str(path))}", path=path)


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
