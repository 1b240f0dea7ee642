"""What the core reports (events) and what it asks the driver to do (actions).

Events are past-tense facts, fully built before they are queued; actions are imperative
nouns. Both are frozen, keyword-only msgspec Structs (STYLE.md section 5).
"""

from __future__ import annotations

import enum

import msgspec

from .errors import (
    ConnectionClosed,
    McpSansioError,
    MessageTooLarge,
    PaginationError,
    RemoteProtocolError,
    RequestCancelled,
    RequestError,
    RequestTimeout,
    SessionExpired,
    UnsupportedProtocolVersion,
)
from .types import Implementation, InitializeResult, ServerCapabilities

__all__ = [
    "Action",
    "CloseInput",
    "ConnectionTerminated",
    "DiscardReason",
    "ErrorData",
    "Event",
    "FailureReason",
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
    SESSION_EXPIRED = "session-expired"
    PROTOCOL_ERROR = "protocol-error"
    MESSAGE_TOO_LARGE = "message-too-large"
    INVALID_RESULT = "invalid-result"
    PAGINATION = "pagination"
    UNSUPPORTED_VERSION = "unsupported-version"


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

    def to_exception(
        self, *, returncode: int | None = None, stderr_tail: str = ""
    ) -> McpSansioError:
        """The exception a driver raises for this failure (same type in every driver)."""
        if self.reason is FailureReason.UNSUPPORTED_VERSION:
            return UnsupportedProtocolVersion(
                self.message, offered=self.offered, received=self.received
            )
        if self.reason is FailureReason.CONNECTION_LOST:
            return ConnectionClosed(self.message, returncode=returncode, stderr_tail=stderr_tail)
        return _exception_for(self.reason, self.message, self.error)


class ResponseReceived(Event, frozen=True, kw_only=True):
    """The peer answered request ``request_id``; ``result`` is decoded by method.

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

    def to_exception(
        self, *, returncode: int | None = None, stderr_tail: str = ""
    ) -> McpSansioError:
        """The exception a driver raises for this failure (same type in every driver)."""
        if self.reason is FailureReason.CONNECTION_LOST:
            return ConnectionClosed(self.message, returncode=returncode, stderr_tail=stderr_tail)
        return _exception_for(self.reason, self.message, self.error)


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
    """An incoming message was skipped; ``excerpt`` shows its start."""

    reason: DiscardReason
    detail: str
    excerpt: bytes


class ConnectionTerminated(Event, frozen=True, kw_only=True):
    """The connection ended; every pending request has already failed."""

    reason: FailureReason
    message: str
    returncode: int | None = None


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
    reason: FailureReason, message: str, error: ErrorData | None
) -> McpSansioError:
    if error is not None and reason is FailureReason.ERROR_RESPONSE:
        return RequestError(error.code, error.message, error.data)
    if reason is FailureReason.TIMEOUT:
        return RequestTimeout(message)
    if reason is FailureReason.CANCELLED:
        return RequestCancelled(message)
    if reason is FailureReason.SESSION_EXPIRED:
        return SessionExpired(message)
    if reason is FailureReason.MESSAGE_TOO_LARGE:
        return MessageTooLarge(message)
    if reason is FailureReason.PAGINATION:
        return PaginationError(message)
    if reason is FailureReason.CONNECTION_LOST:
        return ConnectionClosed(message)
    return RemoteProtocolError(message)

