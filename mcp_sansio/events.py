"""What the core reports (events) and what it asks the driver to do (actions).

Events are past-tense facts, fully built before they are queued; actions are imperative
nouns. Both are frozen, keyword-only msgspec Structs (STYLE.md section 5).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Final, TypeAlias

import msgspec

from .errors import (
    ConnectError,
    ConnectionClosed,
    HttpError,
    InsufficientScope,
    McpSansioError,
    MessageTooLarge,
    PaginationError,
    ProxyError,
    RemoteProtocolError,
    RequestCancelled,
    RequestError,
    RequestTimeout,
    SendQueueFull,
    SessionExpired,
    Unauthorized,
    UnsupportedProtocolVersion,
)
from .types import Implementation, InitializeResult, ServerCapabilities

if TYPE_CHECKING:  # annotations only: a stdio program need not import the OAuth planner
    from .auth import AuthFailure, Token

__all__ = [
    "Action",
    "AuthorizationCompleted",
    "AuthorizationEvent",
    "AuthorizationFailed",
    "AuthorizationRedirect",
    "AuthorizationRequired",
    "ClientEvent",
    "CloseInput",
    "ConnectionTerminated",
    "DiscardReason",
    "ErrorData",
    "Event",
    "FailureReason",
    "GetStreamAbandoned",
    "InitializeCompleted",
    "InitializeFailed",
    "InterruptProcess",
    "KillProcess",
    "MessageDiscarded",
    "NotificationReceived",
    "PeerErrorReceived",
    "ProgressReceived",
    "RequestFailed",
    "RequestId",
    "ResponseReceived",
    "ServerRequestReceived",
    "SessionForgotten",
    "SideRequestFailed",
    "SideResponseReceived",
    "TerminateProcess",
]

RequestId = int | str
"""A JSON-RPC id. Ids we allocate are ints; a peer's may be strings."""


class FailureReason(enum.Enum):
    """Why a request ended without a result."""

    ERROR_RESPONSE = "error-response"
    TIMEOUT = "timeout"
    CANCELLED = "cancelled"
    CONNECTION_LOST = "connection-lost"
    CONNECT_FAILED = "connect-failed"  # the connection could not be opened: ``detail`` says where, why
    SEND_QUEUE_FULL = "send-queue-full"  # the server stopped reading what we send
    SESSION_EXPIRED = "session-expired"
    PROTOCOL_ERROR = "protocol-error"
    MESSAGE_TOO_LARGE = "message-too-large"
    INVALID_RESULT = "invalid-result"
    PAGINATION = "pagination"
    UNSUPPORTED_VERSION = "unsupported-version"
    HTTP_ERROR = "http-error"
    AUTHORIZATION_REQUIRED = "authorization-required"
    INSUFFICIENT_SCOPE = "insufficient-scope"
    PROXY_ERROR = "proxy-error"


class DiscardReason(enum.Enum):
    """Why an incoming message was skipped."""

    NOT_JSON = "not-json"
    INVALID_UTF8 = "invalid-utf8"
    NOT_JSON_RPC = "not-json-rpc"
    UNKNOWN_ID = "unknown-id"
    BATCH_NOT_ALLOWED = "batch-not-allowed"
    INVALID_PARAMS = "invalid-params"


class ErrorData(msgspec.Struct, frozen=True, kw_only=True):
    """A JSON-RPC error object as the peer sent it."""

    code: int
    message: str
    data: object = None


class Event(msgspec.Struct, frozen=True, kw_only=True):
    """Base of everything ``next_event()`` returns."""


class InitializeCompleted(Event, frozen=True, kw_only=True):
    """The handshake finished; the session is ready for requests."""

    protocol_version: str
    server_info: Implementation
    capabilities: ServerCapabilities
    instructions: str | None
    result: InitializeResult


class InitializeFailed(Event, frozen=True, kw_only=True):
    """The handshake failed; the session will never become ready."""

    reason: FailureReason
    message: str
    error: ErrorData | None = None
    offered: str = ""
    received: tuple[str, ...] = ()
    status: int | None = None
    detail: dict[str, str] | None = None

    def to_exception(
        self, *, returncode: int | None = None, stderr_tail: str = ""
    ) -> McpSansioError:
        """The exception a driver raises for this failure (same type in every driver)."""
        if self.reason is FailureReason.UNSUPPORTED_VERSION:
            return UnsupportedProtocolVersion(
                self.message, offered=self.offered, received=self.received
            )
        if self.reason is FailureReason.TIMEOUT:  # what a stalled server last said helps
            return RequestTimeout(self.message, stderr_tail=stderr_tail)
        return _exception_for(self, returncode, stderr_tail)


class ResponseReceived(Event, frozen=True, kw_only=True):
    """The peer answered request ``request_id``; ``result`` is decoded by method, to the type
    its :class:`~mcp_sansio.types.MethodResult` names (``CALL_TOOL.of(event.result)`` is it
    typed; a method the types do not know gives ``EmptyResult``).

    For a "list everything" request the result holds every page merged, with no cursor.
    ``raw`` is the JSON of the (last) result, for fields the types do not model.
    """

    request_id: RequestId
    method: str
    result: msgspec.Struct
    raw: msgspec.Raw


class RequestFailed(Event, frozen=True, kw_only=True):
    """Request ``request_id`` ended without a result."""

    request_id: RequestId
    method: str
    reason: FailureReason
    message: str
    error: ErrorData | None = None
    status: int | None = None
    detail: dict[str, str] | None = None

    def to_exception(
        self, *, returncode: int | None = None, stderr_tail: str = ""
    ) -> McpSansioError:
        """The exception a driver raises for this failure (same type in every driver)."""
        return _exception_for(self, returncode, stderr_tail)


class ProgressReceived(Event, frozen=True, kw_only=True):
    """A ``notifications/progress`` for our request ``request_id``."""

    request_id: RequestId
    progress: float
    total: float | None
    message: str | None


class NotificationReceived(Event, frozen=True, kw_only=True):
    """A notification from the peer; ``params`` is typed when the method is known."""

    method: str
    params: object


class ServerRequestReceived(Event, frozen=True, kw_only=True):
    """The peer asked us something; answer with ``respond()`` or ``respond_error()``."""

    request_id: RequestId
    method: str
    params: msgspec.Struct


class PeerErrorReceived(Event, frozen=True, kw_only=True):
    """The peer sent a JSON-RPC error that matches no request (for example a parse error)."""

    error: ErrorData


class MessageDiscarded(Event, frozen=True, kw_only=True):
    """An incoming message was skipped; ``excerpt`` shows its start.

    ``warning`` is what the host should log about it (at WARNING), as the core decided
    (:mod:`mcp_sansio.discards`: the first of each reason quoted, the rest counted), or
    ``None`` for nothing.
    """

    reason: DiscardReason
    detail: str
    excerpt: bytes
    warning: str | None = None


class ConnectionTerminated(Event, frozen=True, kw_only=True):
    """The connection ended; every pending request has already failed.

    ``warning``, if not ``None``, is for the host's log (at WARNING): how many incoming
    messages were skipped since the last :class:`MessageDiscarded` warning. On a server,
    ``session_id`` names the HTTP session that ended, if it had one.
    """

    reason: FailureReason
    message: str
    returncode: int | None = None
    warning: str | None = None
    session_id: str | None = None


class SessionForgotten(Event, frozen=True, kw_only=True):
    """The HTTP server no longer knows our session (``Mcp-Session-Id``).

    ``reinitializing`` tells whether a new session is being opened (pending requests are
    re-sent once it is ready) or the client gave up (they fail with SESSION_EXPIRED).
    """

    status: int
    reinitializing: bool


class GetStreamAbandoned(Event, frozen=True, kw_only=True):
    """The HTTP client stopped reopening the GET stream for server-initiated messages:
    it kept failing or ending at once (``attempts`` reconnections in a row, as the retry
    policy allows). The session and its requests go on; the server can no longer send
    outside an answer. Drivers log ``message`` as a warning.
    """

    message: str
    attempts: int


class AuthorizationRequired(Event, frozen=True, kw_only=True):
    """The server answered 401 or 403; ``params`` are the ``WWW-Authenticate`` parameters."""

    status: int
    scheme: str
    params: dict[str, str]


class SideResponseReceived(Event, frozen=True, kw_only=True):
    """The answer to a request made with ``side_request`` (OAuth and the like)."""

    tag: int
    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes


class SideRequestFailed(Event, frozen=True, kw_only=True):
    """A request made with ``side_request`` got no answer."""

    tag: int
    message: str


class AuthorizationRedirect(Event, frozen=True, kw_only=True):
    """Send the user's browser to ``authorization_url``; the authorization server then
    redirects it to ``redirect_uri``. Pass that URL to
    ``AuthorizingHttpClient.receive_authorization_redirect``."""

    authorization_url: str
    state: str
    redirect_uri: str


class AuthorizationCompleted(Event, frozen=True, kw_only=True):
    """A new token was obtained (a host may store it); held requests are being re-sent."""

    token: Token


class AuthorizationFailed(Event, frozen=True, kw_only=True):
    """An authorization ended without a token; the requests it held failed. After a failed
    renewal the old token stays in use, and the next renewal waits 30 s."""

    reason: AuthFailure
    message: str


AuthorizationEvent: TypeAlias = AuthorizationRedirect | AuthorizationCompleted | AuthorizationFailed
"""What an OAuth-enabled HTTP core says about its authorizations."""

ClientEvent: TypeAlias = (
    InitializeCompleted | InitializeFailed | ResponseReceived | RequestFailed | ProgressReceived
    | NotificationReceived | ServerRequestReceived | PeerErrorReceived | MessageDiscarded
    | ConnectionTerminated | SessionForgotten | AuthorizationRequired | SideResponseReceived
    | SideRequestFailed | AuthorizationRedirect | AuthorizationCompleted | AuthorizationFailed
    | GetStreamAbandoned
)
"""Everything a client core's ``next_event()`` can return: a closed union, so a driver's
``match`` over it is checked for exhaustiveness (``assert_never``)."""


class Action(msgspec.Struct, frozen=True, kw_only=True):
    """Base of everything ``next_action()`` returns: I/O the driver must perform."""


class CloseInput(Action, frozen=True, kw_only=True):
    """Close the server's stdin (the first, polite step of the shutdown ladder)."""


class InterruptProcess(Action, frozen=True, kw_only=True):
    """Send SIGINT to the server process."""


class TerminateProcess(Action, frozen=True, kw_only=True):
    """Send SIGTERM to the server process."""


class KillProcess(Action, frozen=True, kw_only=True):
    """Send SIGKILL to the server process."""


def _exception_for(
    event: RequestFailed | InitializeFailed, returncode: int | None, stderr_tail: str
) -> McpSansioError:
    reason, message, error = event.reason, event.message, event.error
    if error is not None and reason is FailureReason.ERROR_RESPONSE:
        return RequestError(error.code, error.message, error.data)
    simple = _SIMPLE.get(reason)
    if simple is not None:
        return simple(message)
    if reason is FailureReason.CONNECTION_LOST:
        return ConnectionClosed(message, returncode=returncode, stderr_tail=stderr_tail)
    if reason is FailureReason.CONNECT_FAILED:
        detail = event.detail or {}
        errno = detail.get("errno", "")
        return ConnectError(message, host=detail.get("host", ""), port=int(detail.get("port") or 0),
                            cause=detail.get("cause", ""), errno=int(errno) if errno else None)
    if reason is FailureReason.HTTP_ERROR:
        return HttpError(message, status=event.status or 0, body_excerpt=(event.detail or {}).get("body", ""))
    if reason is FailureReason.AUTHORIZATION_REQUIRED:
        return Unauthorized(message, status=event.status or 0, params=dict(event.detail or {}))
    if reason is FailureReason.PROXY_ERROR:
        return ProxyError(message, status=event.status or 0)
    if reason is FailureReason.INSUFFICIENT_SCOPE:
        return InsufficientScope(message, status=event.status or 0, params=dict(event.detail or {}))
    return RemoteProtocolError(message)


_SIMPLE: Final[Mapping[FailureReason, Callable[[str], McpSansioError]]] = {
    FailureReason.TIMEOUT: RequestTimeout,
    FailureReason.CANCELLED: RequestCancelled,
    FailureReason.SESSION_EXPIRED: SessionExpired,
    FailureReason.MESSAGE_TOO_LARGE: MessageTooLarge,
    FailureReason.PAGINATION: PaginationError,
    FailureReason.SEND_QUEUE_FULL: SendQueueFull,
}
