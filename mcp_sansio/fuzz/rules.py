"""The oracles' rules: a stable short name, how strong the requirement is, and the
sentence of the specification it enforces (quoted, with its section).

Sections are those of the 2025-11-25 revision unless a rule is era-specific; the same
sentences stand in 2025-03-26 and 2025-06-18. ``ROBUSTNESS`` rules (memory, leftover
processes) have no MCP sentence behind them: they are reported with what they measure.
"""

from __future__ import annotations

from typing import Final

import msgspec

__all__ = ["RULES", "Finding", "Rule"]


class Rule(msgspec.Struct, frozen=True, kw_only=True):
    """One oracle: ``name`` (stable, for grouping and CI), ``level`` (``MUST``,
    ``SHOULD`` or ``ROBUSTNESS``) and ``spec`` (the sentence it enforces, with its
    section)."""

    name: str
    level: str
    spec: str


class Finding(msgspec.Struct, frozen=True, kw_only=True):
    """One thing the peer did wrong. ``step`` is the index of the step whose answer (or
    silence) broke the rule, or ``None`` for whole-run rules. ``cause`` names what broke it
    when one rule can break in several ways (an id of the wrong type, a response to a
    notification): findings with different causes are kept apart, so fixing one never
    reveals another that had been folded under it."""

    rule: str
    method: str | None
    message: str
    step: int | None = None
    cause: str = ""
    conclusive: bool = True  # False: silence judged on a learnt wait shorter than the step's timeout

    def key(self) -> tuple[str, str | None, str]:
        """What findings are grouped and deduplicated by: the rule, the method and the cause."""
        return self.rule, self.method, self.cause


_JSONRPC = "JSON-RPC 2.0 §4"
_BASIC = "MCP 2025-11-25 basic/index (Messages)"


def _rule(name: str, level: str, spec: str) -> Rule:
    return Rule(name=name, level=level, spec=spec)


RULES: Final = {
    rule.name: rule
    for rule in (
        _rule(
            "server-crashed",
            "MUST",
            f'{_JSONRPC}: "When a rpc call is made, the Server MUST reply with a Response, except for '
            'in the case of Notifications." (the server exited before answering)',
        ),
        _rule(
            "no-response",
            "MUST",
            f'{_JSONRPC}: "When a rpc call is made, the Server MUST reply with a Response, except for '
            'in the case of Notifications." (no answer within the deadline)',
        ),
        _rule(
            "ping-unanswered",
            "MUST",
            'MCP 2025-11-25 basic/utilities/ping (Behavior Requirements): "The receiver MUST respond '
            'promptly with an empty response"',
        ),
        _rule(
            "duplicate-response",
            "MUST",
            f'{_JSONRPC}: "the Server MUST reply with a Response" (one Response per request; a second '
            "answer to the same id)",
        ),
        _rule(
            "unknown-response-id",
            "MUST",
            f'{_BASIC}: "Result responses MUST include the same ID as the request they correspond to."',
        ),
        _rule(
            "malformed-message",
            "MUST",
            f'{_BASIC}: "All messages between MCP clients and servers MUST follow the JSON-RPC 2.0 '
            'specification"; "Error responses MUST include an error field with a code and message."',
        ),
        _rule(
            "stdout-not-mcp",
            "MUST",
            'MCP 2025-11-25 basic/transports (stdio): "The server MUST NOT write anything to its '
            'stdout that is not a valid MCP message."',
        ),
        _rule(
            "result-schema",
            "MUST",
            f'{_BASIC}: "All messages between MCP clients and servers MUST follow the JSON-RPC 2.0 '
            "specification\" with the payloads of the revision's schema (schema.json, generated from "
            "schema.ts, the source of truth)",
        ),
        _rule(
            "invalid-request-accepted",
            "MUST",
            f'{_BASIC} (Requests): "Requests MUST include a string or integer ID." "Unlike base '
            'JSON-RPC, the ID MUST NOT be null." (a message that is no valid request got a result)',
        ),
        _rule(
            "method-not-found-code",
            "SHOULD",
            'JSON-RPC 2.0 §5.1: "-32601 Method not found: The method does not exist / is not '
            'available." (an unknown method got a result, or another code)',
        ),
        _rule(
            "accepted-invalid-arguments",
            "MUST",
            'MCP 2025-11-25 server/tools (Security Considerations): "Servers MUST: Validate all tool '
            'inputs" (arguments that break inputSchema got a successful result)',
        ),
        _rule(
            "invalid-arguments-code",
            "SHOULD",
            "MCP 2025-11-25 server/tools (Error Handling): malformed requests are protocol errors and "
            "input validation errors are tool execution errors (isError: true); JSON-RPC 2.0 §5.1: "
            '"-32602 Invalid params" (another error code answered invalid arguments)',
        ),
        _rule(
            "structured-content",
            "MUST",
            'MCP 2025-11-25 server/tools (Output Schema): "Servers MUST provide structured results '
            'that conform to this schema."',
        ),
        _rule(
            "tool-input-schema",
            "MUST",
            'MCP 2025-11-25 server/tools (Tool): inputSchema "MUST be a valid JSON Schema object"; '
            'basic/index (JSON Schema Usage): "Schemas MUST be valid according to their declared or '
            'default dialect"',
        ),
        _rule(
            "tool-name",
            "SHOULD",
            'MCP 2025-11-25 server/tools (Tool Names): "Tool names SHOULD be between 1 and 128 '
            'characters in length (inclusive)." "The following SHOULD be the only allowed '
            "characters: uppercase and lowercase ASCII letters (A-Z, a-z), digits (0-9), underscore "
            '(_), hyphen (-), and dot (.)" "Tool names SHOULD be unique within a server."',
        ),
        _rule(
            "answered-cancelled",
            "SHOULD",
            'MCP 2025-11-25 basic/utilities/cancellation: "Receivers of cancellation notifications '
            'SHOULD: ... Not send a response for the cancelled request"',
        ),
        _rule(
            "progress-token",
            "MUST",
            'MCP 2025-11-25 basic/utilities/progress: "Progress notifications MUST only reference '
            "tokens that: Were provided in an active request; Are associated with an in-progress "
            'operation"; "Progress notifications MUST stop after completion"',
        ),
        _rule(
            "capability-not-negotiated",
            "MUST",
            'MCP 2025-11-25 basic/lifecycle (Operation): "Both parties MUST: ... Only use '
            "capabilities that were successfully negotiated\" (a server request the client's "
            "capabilities did not allow)",
        ),
        _rule(
            "request-before-initialized",
            "SHOULD",
            'MCP 2025-11-25 basic/lifecycle: "The server SHOULD NOT send requests other than pings '
            'and logging before receiving the initialized notification."',
        ),
        _rule(
            "version-negotiation",
            "MUST",
            'MCP 2025-11-25 basic/lifecycle (Version Negotiation): "If the server supports the '
            "requested protocol version, it MUST respond with the same version. Otherwise, the server "
            'MUST respond with another protocol version it supports." (it echoed a version that does '
            "not exist)",
        ),
        _rule(
            "unknown-version",
            "MUST",
            'MCP 2025-11-25 basic/lifecycle (Version Negotiation): "If the server supports the '
            "requested protocol version, it MUST respond with the same version. Otherwise, the server "
            'MUST respond with another protocol version it supports." (it answered with a version that '
            "the client did not request and no revision has)",
        ),
        _rule(
            "unknown-tool-accepted",
            "MUST",
            'MCP 2025-11-25 server/tools (Error Handling): "Protocol Errors: Standard JSON-RPC errors '
            'for issues like: Unknown tools" (the example answers code -32602 "Unknown tool"); a tool '
            "the server never listed got a successful result",
        ),
        _rule(
            "cursor-loop",
            "SHOULD",
            'MCP 2025-11-25 server/utilities/pagination: "The cursor is an opaque string token, '
            'representing a position in the result set"; "An optional nextCursor field if more results '
            'exist"; "Servers SHOULD: Provide stable cursors" (a nextCursor that was already followed: '
            "the listing never ends)",
        ),
        _rule(
            "invalid-cursor-code",
            "SHOULD",
            'MCP 2025-11-25 server/utilities/pagination: "Invalid cursors SHOULD result in an error '
            'with code -32602 (Invalid params)."',
        ),
        _rule(
            "http-status",
            "MUST",
            'MCP 2025-11-25 basic/transports (Streamable HTTP): "If the server cannot accept the '
            'input, it MUST return an HTTP error status code"; "If the server receives a request with '
            'an invalid or unsupported MCP-Protocol-Version, it MUST respond with 400 Bad Request."; '
            '2026-07-28 basic/transports/streamable-http (Server Validation): "Servers MUST reject requests '
            "with a 400 Bad Request HTTP status and JSON-RPC error code -32020 (HeaderMismatch) if any "
            'validation fails." (and 202 Accepted for an accepted notification)',
        ),
        _rule(
            "origin-not-validated",
            "MUST",
            'MCP 2025-11-25 basic/transports (Security Warning): "Servers MUST validate the Origin '
            'header on all incoming connections to prevent DNS rebinding attacks"; "If the Origin header '
            'is present and invalid, servers MUST respond with HTTP 403 Forbidden." (a request from a '
            "foreign web origin was served)",
        ),
        _rule(
            "session-id",
            "MUST",
            'MCP 2025-11-25 basic/transports (Session Management): "The session ID MUST only contain '
            'visible ASCII characters (ranging from 0x21 to 0x7E)."; basic/security_best_practices '
            '(Session Hijacking): "MCP servers MUST use secure, non-deterministic session IDs." "Avoid '
            'predictable or sequential session identifiers that could be guessed by an attacker."',
        ),
        _rule(
            "session-not-bound",
            "SHOULD",
            'MCP 2025-11-25 basic/security_best_practices (Session Hijacking): "MCP servers that '
            'implement authorization MUST verify all inbound requests. MCP Servers MUST NOT use sessions '
            'for authentication." "MCP servers SHOULD bind session IDs to user-specific information." '
            "(another principal's token worked with this session's id)",
        ),
        _rule(
            "auth-status",
            "MUST",
            'MCP 2025-06-18 and 2025-11-25 basic/authorization (Error Handling): "Invalid or expired '
            'tokens MUST receive a HTTP 401 response." (401 Unauthorized: "Authorization required or '
            'token invalid")',
        ),
        _rule(
            "auth-discovery",
            "MUST",
            'MCP 2025-11-25 basic/authorization (Protected Resource Metadata Discovery Requirements): '
            '"MCP servers MUST implement one of the following discovery mechanisms": the resource '
            "metadata URL in the WWW-Authenticate header under resource_metadata on 401 responses, or "
            "metadata at the RFC 9728 well-known URI (2025-06-18: \"MCP servers MUST use the HTTP header "
            'WWW-Authenticate when returning a 401 Unauthorized")',
        ),
        _rule(
            "session-reuse",
            "MUST",
            'MCP 2025-11-25 basic/transports (Session Management): "The server MAY terminate the '
            "session at any time, after which it MUST respond to requests containing that session ID "
            'with HTTP 404 Not Found."',
        ),
        _rule(
            "input-required",
            "MUST",
            'MCP 2026-07-28 basic/patterns/mrtr (Server Requirements): "Servers MUST include at least one '
            'of inputRequests or requestState in every InputRequiredResult response." "Servers MUST NOT '
            'send an inputRequests that the client has not declared support for in its capabilities."',
        ),
        _rule(
            "client-crashed",
            "ROBUSTNESS",
            "no MCP sentence: the hostile server broke the protocol on purpose (basic/transports: "
            '"JSON-RPC messages MUST be UTF-8 encoded"; basic/index: "All messages ... MUST follow the '
            'JSON-RPC 2.0 specification"); a client reports that as an error, it does not die of it',
        ),
        _rule(
            "client-hung",
            "SHOULD",
            'MCP 2025-11-25 basic/lifecycle (Timeouts): "Implementations SHOULD establish timeouts for '
            'all sent requests, to prevent hung connections and resource exhaustion." "implementations '
            'SHOULD always enforce a maximum timeout, regardless of progress notifications, to limit '
            'the impact of a misbehaving client or server."',
        ),
        _rule(
            "client-wedged",
            "ROBUSTNESS",
            'no MCP sentence binds the client here (the server broke basic/transports: "JSON-RPC '
            'messages MUST be UTF-8 encoded", "The server MUST NOT write anything to its stdout that is '
            'not a valid MCP message"): one bad line must cost that line, not the valid answer after it',
        ),
        _rule(
            "client-memory",
            "ROBUSTNESS",
            'no MCP sentence beyond basic/lifecycle (Timeouts): "to prevent hung connections and resource '
            'exhaustion": the client\'s resident memory grew past the bound on what a hostile server sent '
            "(one unterminated line: it held 8 MiB or more of it, still reading, when it stopped)",
        ),
        _rule(
            "client-untyped-error",
            "ROBUSTNESS",
            "no MCP sentence: the client failed with an exception group (a task group's wrapper) instead "
            "of one typed error its caller can catch",
        ),
        _rule(
            "client-kept-unsupported-version",
            "SHOULD",
            'MCP 2025-11-25 basic/lifecycle (Version Negotiation): "If the client does not support the '
            'version in the server\'s response, it SHOULD disconnect."',
        ),
        _rule(
            "client-reinit-loop",
            "ROBUSTNESS",
            'MCP 2025-11-25 basic/transports (Session Management): "When a client receives HTTP 404 in '
            'response to a request containing an MCP-Session-Id, it MUST start a new session" - once; a '
            "server whose every new session expires at once must not keep the client initializing for ever",
        ),
        _rule(
            "client-endless-pagination",
            "ROBUSTNESS",
            'MCP 2025-11-25 server/utilities/pagination: "Clients SHOULD: Treat a missing nextCursor as '
            'the end of results" (a cursor that keeps coming back has no end: the client must bound it)',
        ),
        _rule(
            "memory-growth",
            "ROBUSTNESS",
            "no MCP sentence: the server's resident memory grew past the bound while it was fuzzed "
            '(cancellation.mdx asks receivers to "Free associated resources")',
        ),
        _rule(
            "leftover-process",
            "ROBUSTNESS",
            "no MCP sentence: processes the server started outlived it (basic/lifecycle, Shutdown: "
            "the client closes stdin and ends the server; what it started should end with it)",
        ),
    )
}
