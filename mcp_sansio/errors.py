"""Every exception mcp-sansio raises on purpose, rooted at :class:`McpSansioError`.

The core raises :class:`LocalProtocolError` for misuse and :class:`RemoteProtocolError`
for a peer no conforming implementation would be; the drivers turn failure *events*
into the other types for the caller that was waiting (STYLE.md section 4).
"""

from __future__ import annotations

__all__ = [
    "ConnectError",
    "ConnectionClosed",
    "HttpError",
    "InsufficientScope",
    "InvalidSkillEntry",
    "LocalProtocolError",
    "McpSansioError",
    "MessageTooLarge",
    "PaginationError",
    "ProxyError",
    "RemoteProtocolError",
    "RequestCancelled",
    "RequestError",
    "RequestTimeout",
    "SendQueueFull",
    "SessionExpired",
    "SkillDigestMismatch",
    "SkillError",
    "SkillFileNotListed",
    "SkillFrontmatterMismatch",
    "SkillSizeMismatch",
    "SkillVerificationError",
    "Unauthorized",
    "UnsupportedProtocolVersion",
]


class McpSansioError(Exception):
    """Base of every exception mcp-sansio raises on purpose. Catch it; never raise it."""


class LocalProtocolError(McpSansioError):
    """The caller asked for something the protocol or the current phase forbids."""


class RemoteProtocolError(McpSansioError):
    """The peer sent something no conforming peer sends."""


class MessageTooLarge(RemoteProtocolError):
    """A message (a stdio line, an HTTP body, an SSE event) exceeded its configured bound."""

    def __init__(self, message: str, *, limit: int | None = None) -> None:
        super().__init__(message)
        self.limit = limit


class PaginationError(RemoteProtocolError):
    """A paginated list did not terminate: a cursor repeated or the page bound was hit."""


class RequestError(McpSansioError):
    """The peer answered a request with a JSON-RPC error object."""

    def __init__(self, code: int, message: str, data: object = None) -> None:
        super().__init__(f"{message} (JSON-RPC error {code})")
        self.code = code
        self.message = message
        self.data = data


class RequestTimeout(McpSansioError, TimeoutError):
    """A request's deadline passed; ``notifications/cancelled`` was sent for it.

    Attributes:
        stderr_tail: for a handshake that timed out with a subprocess, the last bytes it
            wrote to stderr (its last line is in the message).
    """

    def __init__(self, message: str, *, stderr_tail: str = "") -> None:
        super().__init__(_with_stderr(message, stderr_tail))
        self.stderr_tail = stderr_tail


class RequestCancelled(McpSansioError):
    """The request was cancelled locally before an answer arrived."""


class ConnectionClosed(McpSansioError):
    """The server went away; every request still pending fails with this.

    Attributes:
        returncode: the subprocess exit status, when there was a subprocess that exited.
        stderr_tail: the last bytes the server wrote to stderr, decoded leniently.
    """

    def __init__(
        self, message: str, *, returncode: int | None = None, stderr_tail: str = ""
    ) -> None:
        detail = message
        if returncode is not None:
            detail += f" (exit status {returncode})"
        super().__init__(_with_stderr(detail, stderr_tail))
        self.reason = message
        self.returncode = returncode
        self.stderr_tail = stderr_tail


class ConnectError(ConnectionClosed):
    """The connection to the server (or to its proxy) could not be opened: the host name
    did not resolve, the connection was refused or the host unreachable, or TLS failed.

    Attributes:
        host: where the connection was to go (the proxy, through one).
        port: the port.
        cause: what the OS or the TLS library said (``"Connection refused"``).
        errno: the OS error number, when there is one.
    """

    def __init__(self, message: str, *, host: str, port: int, cause: str, errno: int | None = None) -> None:
        super().__init__(message)
        self.host = host
        self.port = port
        self.cause = cause
        self.errno = errno


class SendQueueFull(ConnectionClosed):
    """The server stopped reading: what the client had to send passed
    ``ClientConfig.max_send_queue_bytes``, so the connection was dropped."""


class SessionExpired(McpSansioError):
    """The server no longer knows our session and it could not be re-created."""


class UnsupportedProtocolVersion(McpSansioError):
    """The peer speaks no protocol revision we support.

    Attributes:
        offered: what we asked for.
        received: what the peer answered or listed as supported.
    """

    def __init__(self, message: str, *, offered: str, received: tuple[str, ...]) -> None:
        super().__init__(message)
        self.offered = offered
        self.received = received


class HttpError(McpSansioError):
    """The HTTP server answered with a status that is not part of the MCP exchange.

    Attributes:
        status: the HTTP status code.
        body_excerpt: the start of the body, decoded leniently (for diagnostics).
    """

    def __init__(self, message: str, *, status: int, body_excerpt: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.body_excerpt = body_excerpt


class ProxyError(McpSansioError):
    """The HTTP proxy refused to open a tunnel to the server (its answer to CONNECT).

    Attributes:
        status: the proxy's HTTP status (407: it wants credentials, ``user:password@`` in
            the proxy URL; 403: it forbids the target; 502/503/504: it cannot reach it),
            or 0 when it is not known.
    """

    def __init__(self, message: str, *, status: int) -> None:
        super().__init__(message)
        self.status = status


class Unauthorized(McpSansioError):
    """The server wants authorization (HTTP 401 or 403); OAuth is the host's next step.

    Attributes:
        status: 401 or 403.
        params: the ``WWW-Authenticate`` challenge parameters (``resource_metadata``,
            ``scope``, ``error``, ...), lower-case names.
    """

    def __init__(self, message: str, *, status: int, params: dict[str, str]) -> None:
        super().__init__(message)
        self.status = status
        self.params = params


class InsufficientScope(Unauthorized):
    """The server kept answering 403 ``insufficient_scope`` after every step-up authorization
    allowed (``OAuthConfig.max_authorization_attempts``)."""


class SkillError(McpSansioError):
    """A skill (Skills extension, SEP-2640) cannot be used; nothing unverified is returned.

    Attributes:
        uri: the skill's ``SKILL.md`` URI, or the file the failure is about.
    """

    def __init__(self, message: str, *, uri: str) -> None:
        super().__init__(message)
        self.uri = uri


class InvalidSkillEntry(SkillError):
    """The skill's entry cannot be loaded: malformed, or over the per-skill limits."""


class SkillVerificationError(SkillError):
    """A skill file read does not match the held entry: it must not be used."""


class SkillDigestMismatch(SkillVerificationError):
    """The file's SHA-256 digest differs from the entry's ``digest``."""


class SkillSizeMismatch(SkillVerificationError):
    """The file's length in bytes differs from the entry's ``size``."""


class SkillFrontmatterMismatch(SkillVerificationError):
    """``SKILL.md``'s YAML frontmatter is missing, unparsable, or differs from the entry's."""


class SkillFileNotListed(SkillVerificationError):
    """A read of a file the held entry does not list (or outside the skill's directory)."""


def _with_stderr(message: str, stderr_tail: str) -> str:
    """``message``, then the last line the server wrote to stderr, if any (cut at 300)."""
    last = stderr_tail.strip().splitlines()[-1:]
    return f"{message}; stderr: {last[0][:300]}" if last else message
