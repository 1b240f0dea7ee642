"""The server role: an application definition, per-connection state machines, transports.

``MCPServer`` is what users write (tools, resources, prompts, completions); a transport
(``StdioServer``, ``HttpServer``, ``WebSocketServer``) owns the ``ServerSession`` objects
that speak MCP in both eras, and a driver runs the handlers the transport's events ask
for. Everything here is pure: bytes and messages in, events and bytes out, time as an
argument (STYLE.md section 1).
"""

from .app import TASKS_EXTENSION, MCPServer
from .authz import (
    AsyncTokenVerifier,
    AuthSettings,
    Principal,
    RejectReason,
    TokenRejected,
    TokenVerdict,
    TokenVerificationRequired,
    TokenVerifier,
    VerifierUnavailable,
)
from .config import CacheScope, ServerConfig
from .context import (
    Answered,
    AnswerPending,
    Ask,
    AskOutcome,
    ClientCapabilityMissing,
    Context,
    Deferred,
    ElicitAsk,
    HandlerRuntime,
    InputRequired,
    RootsAsk,
    SamplingAsk,
    ToolError,
)
from .endpoint import Endpoint, ListKind
from .events import (
    AnswerFailed,
    AnswerReceived,
    CallCancelled,
    CallOutcome,
    ClientInitialized,
    CompletionReceived,
    HandlerCallReceived,
    PromptGetReceived,
    RequestAnswered,
    RequestInfo,
    ResourceReadReceived,
    ResourceSubscribed,
    ResourceUnsubscribed,
    ServerEvent,
    ToolCallReceived,
)
from .registry import (
    RegisteredCompletion,
    RegisteredPrompt,
    RegisteredResource,
    RegisteredTemplate,
    RegisteredTool,
    TaskSupport,
)
from .session import Phase, ServerSession
from .signature import HandlerSignature
from .stdio import StdioServer

__all__ = [
    "TASKS_EXTENSION",
    "AnswerFailed",
    "AnswerPending",
    "AnswerReceived",
    "Answered",
    "Ask",
    "AskOutcome",
    "AsyncTokenVerifier",
    "AuthSettings",
    "CacheScope",
    "CallCancelled",
    "CallOutcome",
    "ClientCapabilityMissing",
    "ClientInitialized",
    "CompletionReceived",
    "Context",
    "Deferred",
    "ElicitAsk",
    "Endpoint",
    "HandlerCallReceived",
    "HandlerRuntime",
    "HandlerSignature",
    "InputRequired",
    "ListKind",
    "MCPServer",
    "Phase",
    "Principal",
    "PromptGetReceived",
    "RegisteredCompletion",
    "RegisteredPrompt",
    "RegisteredResource",
    "RegisteredTemplate",
    "RegisteredTool",
    "RejectReason",
    "RequestAnswered",
    "RequestInfo",
    "ResourceReadReceived",
    "ResourceSubscribed",
    "ResourceUnsubscribed",
    "RootsAsk",
    "SamplingAsk",
    "ServerConfig",
    "ServerEvent",
    "ServerSession",
    "StdioServer",
    "TaskSupport",
    "TokenRejected",
    "TokenVerdict",
    "TokenVerificationRequired",
    "TokenVerifier",
    "ToolCallReceived",
    "ToolError",
    "VerifierUnavailable",
]
