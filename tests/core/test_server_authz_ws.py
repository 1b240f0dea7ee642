"""Authorization for the WebSocket server in the core: the upgrade request carries the bearer
token (401 before the upgrade without one), the verdict is the driver's, and the connection
closes with 1008 when its token expires. A wsproto client; no sockets."""

from __future__ import annotations

import json

from server_helpers import ENTROPY, SECRET
from wsproto import ConnectionType, WSConnection
from wsproto import events as ws

from mcp_sansio.server import AuthSettings, MCPServer, Principal, TokenVerificationRequired
from mcp_sansio.server.websocket import WebSocketConfig, WebSocketServer

RESOURCE = "https://mcp.example.com/mcp"
TOKEN = "d3MtdG9rZW4"


class _Never:
    def verify(self, token: str) -> Principal:  # never called: the test hands verdicts in
        raise AssertionError


def _server() -> WebSocketServer:
    auth = AuthSettings(resource=RESOURCE, authorization_servers=("https://as.example.com",),
                        verifier=_Never(), required_scopes=("mcp",))
    app = MCPServer("s", auth=auth)
    return WebSocketServer(app, secret=SECRET, entropy=ENTROPY, config=WebSocketConfig.loopback())


def _upgrade(server: WebSocketServer, headers: list[tuple[bytes, bytes]]) -> tuple[int, WSConnection]:
    client = WSConnection(ConnectionType.CLIENT)
    conn = server.connection_made(0.0)
    server.receive_data(conn, client.send(ws.Request(host="127.0.0.1", target="/", subprotocols=["mcp"],
                                                     extra_headers=headers)), 0.0)
    return conn, client


def _events(server: WebSocketServer, conn: int, client: WSConnection) -> list[ws.Event]:
    data = server.data_to_send(conn)
    if data:  # b"" would be the end of the stream
        client.receive_data(data)
    return list(client.events())


def test_an_upgrade_without_a_token_is_refused_with_the_challenge() -> None:
    server = _server()
    conn, client = _upgrade(server, [])
    rejected, body, *_ = _events(server, conn, client)
    assert isinstance(rejected, ws.RejectConnection) and rejected.status_code == 401
    assert dict(rejected.headers)[b"www-authenticate"] == (
        b'Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", '
        b'scope="mcp"')
    assert isinstance(body, ws.RejectData) and json.loads(body.data)["error"] == "invalid_token"


def test_an_upgrade_waits_for_the_verdict_then_the_session_knows_the_principal() -> None:
    server = _server()
    conn, client = _upgrade(server, [(b"authorization", f"Bearer {TOKEN}".encode())])
    assert _events(server, conn, client) == []  # held
    ticket = server.next_event()
    assert isinstance(ticket, TokenVerificationRequired) and TOKEN not in repr(ticket)
    alice = Principal(subject="alice", scopes=("mcp",), expires_at=100.0)
    server.token_verified(ticket.ticket, alice, now=1.0)
    (accepted,) = _events(server, conn, client)
    assert isinstance(accepted, ws.AcceptConnection) and accepted.subprotocol == "mcp"
    assert server.next_deadline() == 100.0  # the token's expiry (wall offset 0)
    server.handle_timeout(100.0)
    (closed,) = _events(server, conn, client)
    assert isinstance(closed, ws.CloseConnection) and closed.code == 1008
    assert closed.reason == "the access token expired"


def test_an_upgrade_with_a_token_lacking_scopes_is_403() -> None:
    server = _server()
    conn, client = _upgrade(server, [(b"authorization", f"Bearer {TOKEN}".encode())])
    ticket = server.next_event()
    assert isinstance(ticket, TokenVerificationRequired)
    server.token_verified(ticket.ticket, Principal(subject="alice", scopes=()), now=1.0)
    rejected, *_ = _events(server, conn, client)
    assert isinstance(rejected, ws.RejectConnection) and rejected.status_code == 403
    assert b'error="insufficient_scope"' in dict(rejected.headers)[b"www-authenticate"]


def test_a_connection_lost_while_verifying_is_forgotten() -> None:
    server = _server()
    conn, _ = _upgrade(server, [(b"authorization", f"Bearer {TOKEN}".encode())])
    ticket = server.next_event()
    assert isinstance(ticket, TokenVerificationRequired)
    server.connection_lost(conn, 1.0)
    server.token_verified(ticket.ticket, Principal(subject="alice", scopes=("mcp",)), now=2.0)
    assert server.connections_with_data() == []


def test_an_upgrade_whose_verdict_never_comes_is_503_and_a_refused_token_401() -> None:
    from mcp_sansio.server import RejectReason, TokenRejected

    server = _server()
    slow, slow_client = _upgrade(server, [(b"authorization", b"Bearer c2xvdw")])
    bad, bad_client = _upgrade(server, [(b"authorization", f"Bearer {TOKEN}".encode())])
    first, second = server.next_event(), server.next_event()
    assert isinstance(first, TokenVerificationRequired) and isinstance(second, TokenVerificationRequired)
    server.token_verified(second.ticket, TokenRejected(reason=RejectReason.EXPIRED), now=1.0)
    rejected, *_ = _events(server, bad, bad_client)
    assert isinstance(rejected, ws.RejectConnection) and rejected.status_code == 401
    assert server.next_deadline() == 30.0  # verify_timeout from the upgrade at 0.0
    server.handle_timeout(30.0)
    late, *_ = _events(server, slow, slow_client)
    assert isinstance(late, ws.RejectConnection) and late.status_code == 503
    server.token_verified(first.ticket, Principal(subject="a", scopes=("mcp",)), now=31.0)  # ignored


def test_a_server_without_auth_ignores_verdicts() -> None:
    server = WebSocketServer(MCPServer("s"), secret=SECRET, entropy=ENTROPY)
    server.token_verified(1, Principal(subject="a"), now=0.0)
    assert server.next_event() is None and server.next_deadline() is None


def test_a_token_without_expiry_keeps_the_connection_and_its_messages_are_served() -> None:
    server = _server()
    conn, client = _upgrade(server, [(b"authorization", f"Bearer {TOKEN}".encode())])
    ticket = server.next_event()
    assert isinstance(ticket, TokenVerificationRequired)
    server.token_verified(ticket.ticket, Principal(subject="alice", scopes=("mcp",)), now=1.0)
    (accepted,) = _events(server, conn, client)
    assert isinstance(accepted, ws.AcceptConnection) and server.next_deadline() is None
    ping = client.send(ws.TextMessage(data='{"jsonrpc":"2.0","id":1,"method":"ping"}'))
    server.receive_data(conn, ping, 2.0)
    (answer,) = _events(server, conn, client)
    assert isinstance(answer, ws.TextMessage) and json.loads(answer.data) == {"jsonrpc": "2.0", "id": 1,
                                                                              "result": {}}


def test_without_auth_an_upgrade_needs_no_token() -> None:
    config = WebSocketConfig.loopback()
    server = WebSocketServer(MCPServer("s"), secret=SECRET, entropy=ENTROPY, config=config)
    conn, client = _upgrade(server, [])
    (accepted,) = _events(server, conn, client)
    assert isinstance(accepted, ws.AcceptConnection) and server.next_event() is None
