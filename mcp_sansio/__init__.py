"""mcp-sansio: the Model Context Protocol as pure state machines (no I/O, no clock).

Bytes and messages go in, events and bytes to send come out, time is an argument.
Drivers for asyncio, anyio and blocking code live in their own packages.
"""

from typing import TYPE_CHECKING

from .config import ClientConfig
from .connections import SocketFailure, SocketStage
from .errors import (
    ConnectError,
    ConnectionClosed,
    HttpError,
    InsufficientScope,
    InvalidSkillEntry,
    LocalProtocolError,
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
    SkillDigestMismatch,
    SkillError,
    SkillFileNotListed,
    SkillFrontmatterMismatch,
    SkillSizeMismatch,
    SkillVerificationError,
    Unauthorized,
    UnsupportedProtocolVersion,
)
from .events import (
    Action,
    ClientEvent,
    CloseInput,
    ConnectionTerminated,
    DiscardReason,
    ErrorData,
    Event,
    FailureReason,
    InitializeCompleted,
    InitializeFailed,
    InterruptProcess,
    KillProcess,
    MessageDiscarded,
    NotificationReceived,
    PeerErrorReceived,
    ProgressReceived,
    RequestFailed,
    RequestId,
    ResponseReceived,
    ServerRequestReceived,
    TerminateProcess,
)
from .front import SessionFront
from .session import ClientSession, Link, Phase
from .stderr import StderrLog, StderrTail
from .stdio import StdioClient
from .versions import LATEST_VERSION, SUPPORTED_VERSIONS

if TYPE_CHECKING:
    from .server import (
        Ask,
        Context,
        InputRequired,
        MCPServer,
        ServerConfig,
        ServerSession,
        StdioServer,
        ToolError,
    )

__version__ = "0.1.0"

_SERVER_NAMES = (
    "Ask", "Context", "InputRequired", "MCPServer", "ServerConfig", "ServerSession", "StdioServer",
    "ToolError",
)
_LAZY = dict.fromkeys(_SERVER_NAMES, ".server")


def __getattr__(name: str) -> object:
    """The server role loads on first use: clients never pay for importing it."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(module, __name__), name)
    globals()[name] = value
    return value

__all__ = [
    "LATEST_VERSION",
    "SUPPORTED_VERSIONS",
    "Action",
    "Ask",
    "ClientConfig",
    "ClientSession",
    "CloseInput",
    "ConnectError",
    "ConnectionClosed",
    "ClientEvent",
    "ConnectionTerminated",
    "Context",
    "DiscardReason",
    "ErrorData",
    "Event",
    "FailureReason",
    "InitializeCompleted",
    "InitializeFailed",
    "InputRequired",
    "InterruptProcess",
    "KillProcess",
    "Link",
    "HttpError",
    "InsufficientScope",
    "InvalidSkillEntry",
    "LocalProtocolError",
    "MCPServer",
    "McpSansioError",
    "MessageDiscarded",
    "MessageTooLarge",
    "NotificationReceived",
    "PaginationError",
    "PeerErrorReceived",
    "Phase",
    "ProgressReceived",
    "ProxyError",
    "RemoteProtocolError",
    "RequestCancelled",
    "RequestError",
    "RequestFailed",
    "RequestId",
    "RequestTimeout",
    "ResponseReceived",
    "SendQueueFull",
    "ServerConfig",
    "ServerRequestReceived",
    "ServerSession",
    "SessionExpired",
    "SessionFront",
    "SkillDigestMismatch",
    "SkillError",
    "SkillFileNotListed",
    "SkillFrontmatterMismatch",
    "SkillSizeMismatch",
    "SkillVerificationError",
    "SocketFailure",
    "SocketStage",
    "StderrLog",
    "StderrTail",
    "StdioClient",
    "StdioServer",
    "TerminateProcess",
    "ToolError",
    "Unauthorized",
    "UnsupportedProtocolVersion",
]
