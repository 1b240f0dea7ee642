"""Pins of the public API's types: mypy checks every ``assert_type``; pytest runs them too.

A change to a public signature shows up here as a mypy error, so it is a decision,
not an accident.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, assert_type

import msgspec

import mcp_sansio
from mcp_sansio import (
    LATEST_VERSION,
    SUPPORTED_VERSIONS,
    Action,
    ClientConfig,
    ClientEvent,
    ConnectError,
    ConnectionClosed,
    DiscardReason,
    FailureReason,
    InitializeFailed,
    McpSansioError,
    MessageDiscarded,
    Phase,
    RequestFailed,
    RequestId,
    ResponseReceived,
    SendQueueFull,
    SocketFailure,
    SocketStage,
    StderrLog,
    StderrTail,
    StdioClient,
    jsonrpc,
)
from mcp_sansio.framing import LineBuffer
from mcp_sansio.handlers import client_capabilities, coerce_result, roots_result
from mcp_sansio.types import (
    ClientCapabilities,
    ContentBlock,
    ImageContent,
    Implementation,
    ListRootsResult,
    PromptReference,
    ServerCapabilities,
    ToolUseContent,
)
from mcp_sansio.versions import VersionRules, rules_for

_INIT = (b'{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","serverInfo":{"name":"s",'
         b'"version":"1"},"capabilities":{"tools":{},"resources":{"subscribe":true},"prompts":{},'
         b'"completions":{},"logging":{}}}}\n')


def test_stdio_client_signatures() -> None:
    client = StdioClient(ClientConfig(), ClientCapabilities())
    assert_type(client.config, ClientConfig)
    assert_type(client.phase, Phase)
    assert_type(client.initialize(now=0.0), None)
    assert_type(client.data_to_send(), bytes)
    assert_type(client.receive_data(_INIT, 0.0), None)
    assert_type(client.next_event(), ClientEvent | None)
    assert_type(client.next_action(), Action | None)
    assert_type(client.next_deadline(), float | None)
    assert_type(client.protocol_version, str | None)
    assert_type(client.server_info, Implementation | None)
    assert_type(client.server_capabilities, ServerCapabilities | None)
    assert_type(client.instructions, str | None)
    assert_type(client.rules, VersionRules | None)
    assert_type(client.call_tool("t", {"a": 1}, now=0.0, timeout=1.0), int)
    assert_type(client.list_tools(now=0.0), int)
    assert_type(client.list_resources(now=0.0, cursor="c", all_pages=False), int)
    assert_type(client.list_resource_templates(now=0.0), int)
    assert_type(client.list_prompts(now=0.0), int)
    assert_type(client.read_resource("u", now=0.0), int)
    assert_type(client.subscribe_resource("u", now=0.0), int)
    assert_type(client.unsubscribe_resource("u", now=0.0), int)
    assert_type(client.get_prompt("p", {"k": "v"}, now=0.0), int)
    assert_type(client.complete(PromptReference(name="p"), "a", "v", now=0.0), int)
    assert_type(client.set_logging_level("info", now=0.0), int)
    assert_type(client.ping(now=0.0), int)
    assert_type(client.request("vendor/x", {"q": 1}, now=0.0), int)
    assert_type(client.notify("notifications/roots/list_changed", now=0.0), None)
    assert_type(client.pending_requests(), list[RequestId])
    assert_type(client.cancel(2, now=0.0, reason="stop"), None)
    assert_type(client.handle_timeout(1.0), None)
    assert_type(client.process_exited(0, 1.0), None)
    assert_type(client.close(now=1.0), None)


def test_event_and_failure_types() -> None:
    failed = RequestFailed(request_id=1, method="m", reason=FailureReason.TIMEOUT, message="late")
    assert_type(failed.request_id, int | str)
    assert_type(failed.to_exception(returncode=1, stderr_tail=""), McpSansioError)
    init = InitializeFailed(reason=FailureReason.TIMEOUT, message="late")
    assert_type(init.to_exception(), McpSansioError)
    assert_type(init.received, tuple[str, ...])
    answer = ResponseReceived(request_id="a", method="m", result=ListRootsResult(), raw=msgspec.Raw(b"{}"))
    assert_type(answer.result, msgspec.Struct)
    assert_type(answer.raw, msgspec.Raw)
    discarded = MessageDiscarded(reason=DiscardReason.NOT_JSON, detail="", excerpt=b"")
    assert_type(discarded.excerpt, bytes)


def test_tagged_wire_types_have_a_literal_type() -> None:
    block: ContentBlock = ImageContent(data="AA==", mime_type="image/png")
    assert_type(block.type, Literal["text", "image", "audio", "resource_link", "resource"])
    if block.type == "image":
        assert_type(block, ImageContent)
    assert_type(PromptReference(name="p").type, Literal["ref/prompt"])
    assert_type(ToolUseContent(id="u", name="n", input={}).type, Literal["tool_use"])


def test_layer_helpers_signatures() -> None:
    assert_type(LATEST_VERSION, str)
    assert_type(SUPPORTED_VERSIONS, tuple[str, ...])
    assert_type(rules_for(LATEST_VERSION), VersionRules | None)
    lines = LineBuffer(10)
    assert_type(lines.feed(b"a\n"), list[bytes])
    assert_type(lines.close(), list[bytes])
    assert_type(lines.overflow, int | None)
    tail = StderrTail(10)
    assert_type(tail.feed(b"x\n"), None)
    assert_type(tail.text(), str)
    log = StderrLog(ClientConfig())
    assert_type(log.feed(b"x\n", 0.0), list[str])
    assert_type(log.close(1.0), list[str])
    assert_type(jsonrpc.decode(b"{}"), jsonrpc.Envelope | list[jsonrpc.Envelope])
    assert_type(jsonrpc.classify(jsonrpc.Envelope()), jsonrpc.Kind)
    assert_type(jsonrpc.encode_request(1, "ping", None), bytes)
    assert_type(jsonrpc.encode_notification("n", None), bytes)
    assert_type(jsonrpc.encode_result(1, {}), bytes)
    assert_type(jsonrpc.encode_error(None, jsonrpc.PARSE_ERROR, "m"), bytes)
    assert_type(client_capabilities(sampling=True, elicitation=False, roots=False), ClientCapabilities)
    assert_type(coerce_result("roots/list", {"roots": []}), msgspec.Struct | Mapping[str, object])
    assert_type(roots_result([{"uri": "file:///a"}]), ListRootsResult)


def test_public_names_are_exported() -> None:
    assert {"StdioClient", "ServerSession", "ClientConfig", "Phase", "StderrTail"} <= set(mcp_sansio.__all__)


def test_connection_failure_types() -> None:
    failure = SocketFailure(stage=SocketStage.CONNECT, cause="Connection refused", errno=111)
    assert_type(failure.stage, SocketStage)
    assert_type(failure.errno, int | None)
    error = ConnectError("no", host="h", port=1, cause="Connection refused", errno=111)
    assert_type(error.host, str)
    assert_type(error.port, int)
    assert_type(error.errno, int | None)
    assert isinstance(error, ConnectionClosed) and isinstance(SendQueueFull("x"), ConnectionClosed)
    assert_type(ClientConfig().max_send_queue_bytes, int)
    assert {"ConnectError", "SendQueueFull", "SocketFailure", "SocketStage"} <= set(mcp_sansio.__all__)



def test_server_authorization_types() -> None:
    from mcp_sansio.server import (
        AuthSettings,
        Context,
        Principal,
        RequestInfo,
        TokenRejected,
        TokenVerdict,
        TokenVerificationRequired,
        TokenVerifier,
        VerifierUnavailable,
    )
    from mcp_sansio_authz import IntrospectionVerifier, JwtVerifier

    def handler(ctx: Context, info: RequestInfo) -> None:
        assert_type(ctx.principal, Principal | None)
        assert_type(info.principal, Principal | None)

    principal = Principal(subject="a", scopes=("mcp",))
    assert_type(principal.identity, str)
    assert_type(principal.scopes, tuple[str, ...])
    assert_type(principal.expires_at, float | None)
    verdict: TokenVerdict = TokenRejected(reason=mcp_sansio.server.RejectReason.EXPIRED)
    assert isinstance(verdict, Principal | TokenRejected | VerifierUnavailable)
    assert_type(TokenVerificationRequired(ticket=1, token="t").token, str)
    jwt_verifier: TokenVerifier = JwtVerifier(jwks_url="https://as/jwks", issuer="https://as",
                                              audience="https://rs")
    introspection: TokenVerifier = IntrospectionVerifier(endpoint="https://as/i", client_id="c",
                                                         client_secret="s", audience="https://rs")
    settings = AuthSettings(resource="https://rs/mcp", authorization_servers=("https://as",),
                            verifier=jwt_verifier)
    assert_type(settings.required_scopes, tuple[str, ...])
    assert callable(handler) and introspection is not None


def test_driver_calls_return_their_methods_result_type() -> None:
    """mypy knows each typed call's result from the one method table, with no cast."""
    from mcp_sansio.skills import GET_SKILL, LIST_SKILLS, Skill
    from mcp_sansio.types import (
        CALL_TOOL,
        RESULT_TYPES,
        RESULTS,
        CallToolResult,
        CompleteResult,
        GetPromptResult,
        MethodResult,
        Prompt,
        ReadResourceResult,
        Resource,
        ResourceTemplate,
        Tool,
    )
    from mcp_sansio_asyncio import AsyncClient
    from mcp_sansio_sync import Client

    async def awaited(client: AsyncClient) -> None:  # checked by mypy, never run
        assert_type(await client.call_tool("t", {"a": 1}), CallToolResult)
        assert_type(await client.list_tools(), list[Tool])
        assert_type(await client.list_resources(), list[Resource])
        assert_type(await client.list_resource_templates(), list[ResourceTemplate])
        assert_type(await client.read_resource("u"), ReadResourceResult)
        assert_type(await client.list_prompts(), list[Prompt])
        assert_type(await client.get_prompt("p"), GetPromptResult)
        assert_type(await client.complete(PromptReference(name="p"), "a", "v"), CompleteResult)
        assert_type(await client.list_skills(), list[Skill])
        assert_type(await client.get_skill("u"), Skill)

    def blocking(client: Client) -> None:  # checked by mypy, never run
        assert_type(client.call_tool("t"), CallToolResult)
        assert_type(client.read_resource("u"), ReadResourceResult)

    assert callable(awaited) and callable(blocking)
    assert_type(CALL_TOOL, MethodResult[CallToolResult])
    assert_type(CALL_TOOL.of(CallToolResult()), CallToolResult)
    assert_type(LIST_SKILLS.method, str)
    assert GET_SKILL.method == "skills/get"
    assert all(RESULT_TYPES[method] is kind.type for method, kind in RESULTS.items())


def test_every_drivers_connect_websocket_yields_its_connection_class() -> None:
    """``connect_websocket`` is written once (``websocket_connector``) yet typed per driver:
    mypy sees each driver's own connection class, with its ``url`` and the client calls."""
    import mcp_sansio_anyio
    import mcp_sansio_asyncio
    import mcp_sansio_sync
    from mcp_sansio.types import CallToolResult

    async def asyncio_client() -> None:  # checked by mypy, never run
        async with mcp_sansio_asyncio.connect_websocket("ws://h/mcp", ping_interval=5.0) as client:
            assert_type(client, mcp_sansio_asyncio.WebSocketConnection)
            assert_type(client.url, str)
            assert_type(client.subprotocol, str | None)
            assert_type(await client.call_tool("t"), CallToolResult)

    async def anyio_client() -> None:  # checked by mypy, never run
        async with mcp_sansio_anyio.connect_websocket("ws://h/mcp") as client:
            assert_type(client, mcp_sansio_anyio.WebSocketConnection)

    def blocking_client() -> None:  # checked by mypy, never run
        with mcp_sansio_sync.connect_websocket(url="ws://h/mcp", headers={"x": "1"}) as client:
            assert_type(client, mcp_sansio_sync.WebSocketConnection)
            assert_type(client.call_tool("t"), CallToolResult)

    assert callable(asyncio_client) and callable(anyio_client) and callable(blocking_client)
    for driver in (mcp_sansio_asyncio, mcp_sansio_anyio, mcp_sansio_sync):
        connect = driver.connect_websocket
        assert connect.__module__ == f"{driver.__name__}.websocket"
        assert connect.__doc__ is not None and "ws://" in connect.__doc__
