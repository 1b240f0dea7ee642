"""CONNECT tunnels in the HTTP pool, the HTTP client and the WebSocket client; no sockets.

Each core connects to the proxy, writes the CONNECT itself, reads the proxy's answer and,
for ``https``/``wss``, asks the driver to start TLS on the same connection before its own
bytes. A refusal is a typed failure naming the proxy's status, never its credentials.
"""

from __future__ import annotations

import base64
import itertools

import h11
import pytest
from helpers import broken, drain_actions, drain_events
from http_helpers import ReceivedRequest, ScriptedHttpServer, http_client, init_result
from hypothesis import given
from hypothesis import strategies as st
from wsproto import ConnectionType, WSConnection
from wsproto import events as ws

from mcp_sansio import ClientConfig, ProxyError
from mcp_sansio.connections import CloseConnection, ConnectFailure, OpenConnection, SocketStage, StartTls
from mcp_sansio.errors import LocalProtocolError
from mcp_sansio.events import (
    ConnectionTerminated,
    Event,
    FailureReason,
    InitializeCompleted,
    InitializeFailed,
)
from mcp_sansio.http11 import (
    ExchangeFailed,
    HttpPool,
    HttpRequest,
    PoolEvent,
    Progress,
    ResponseData,
    ResponseEnded,
    ResponseStarted,
)
from mcp_sansio.http_transport import HttpClient
from mcp_sansio.proxy import ProxySettings
from mcp_sansio.urls import parse_url
from mcp_sansio.websocket import WebSocketClient

SECRET = "s3cr3t"
PROXY_URL = f"http://ann:{SECRET}@proxy.corp:3128"
PROXIES = ProxySettings.explicit(PROXY_URL)
BASIC = "Basic " + base64.b64encode(f"ann:{SECRET}".encode()).decode()
TO_PROXY = OpenConnection(connection=1, host="proxy.corp", port=3128, tls=False, server_hostname="proxy.corp")
WHERE = "the proxy proxy.corp:3128 (tunnel to mcp.test:443)"
ESTABLISHED = b"HTTP/1.1 200 Connection established\r\n\r\n"
REFUSED = (b"HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic\r\n"
           b"Content-Length: 0\r\n\r\n")
RESPONSE = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"


def connect_line(target: str) -> bytes:
    return (f"CONNECT {target} HTTP/1.1\r\nhost: {target}\r\nproxy-authorization: {BASIC}\r\n\r\n").encode()


def pool_events(pool: HttpPool) -> list[PoolEvent]:
    out = []
    while (event := pool.next_event()) is not None:
        out.append(event)
    return out


def submitted(url: str = "https://mcp.test/mcp", proxies: ProxySettings | None = PROXIES) -> HttpPool:
    """A pool with one POST to ``url`` submitted."""
    pool = HttpPool(proxies=proxies)
    pool.submit(HttpRequest(exchange=1, method="POST", url=parse_url(url), headers=(), body=b"{}"), 0.0)
    return pool


def tunneled(url: str = "https://mcp.test/mcp") -> HttpPool:
    """A pool whose connection 1 to the proxy is made and whose CONNECT went out."""
    pool = submitted(url)
    assert drain_actions(pool) == [TO_PROXY]
    pool.connection_made(1, 0.0)
    target = parse_url(url)
    assert pool.data_to_send(1) == connect_line(f"{target.host}:{target.port}")
    return pool


def ok() -> list[PoolEvent]:
    return [ResponseStarted(exchange=1, status=200, reason="OK", headers=(("content-length", "5"),)),
            ResponseData(exchange=1, data=b"hello"), ResponseEnded(exchange=1)]


def request_head(data: bytes) -> h11.Request:
    parser = h11.Connection(h11.SERVER)
    parser.receive_data(data)
    event = parser.next_event()
    assert isinstance(event, h11.Request)
    return event


# ------------------------------------------------------------------- the pool


def test_an_https_origin_is_tunneled_then_secured_then_asked_in_origin_form() -> None:
    pool = tunneled()
    assert pool.connections_with_data() == []
    pool.receive_data(1, ESTABLISHED, 1.0)
    assert drain_actions(pool) == [StartTls(connection=1, server_hostname="mcp.test")]
    assert pool.data_to_send(1) == b""  # nothing before TLS
    pool.tls_started(1, 2.0)
    head = request_head(pool.data_to_send(1))
    assert (head.method, head.target) == (b"POST", b"/mcp")
    assert dict(head.headers)[b"host"] == b"mcp.test"
    assert b"proxy-authorization" not in dict(head.headers)
    pool.receive_data(1, RESPONSE, 3.0)
    assert pool_events(pool) == ok()


def test_an_http_origin_is_tunneled_too_and_asked_at_once() -> None:
    pool = tunneled("http://mcp.test:8000/mcp")
    pool.receive_data(1, ESTABLISHED, 1.0)
    assert drain_actions(pool) == []
    assert request_head(pool.data_to_send(1)).target == b"/mcp"


def test_the_origins_answer_in_the_proxys_read_is_the_response() -> None:
    pool = tunneled("http://mcp.test/mcp")
    pool.receive_data(1, ESTABLISHED + RESPONSE, 1.0)
    assert pool_events(pool) == ok()


@given(st.lists(st.integers(min_value=0, max_value=len(ESTABLISHED + RESPONSE)), max_size=5))
def test_a_tunneled_exchange_does_not_depend_on_how_the_bytes_are_split(cuts: list[int]) -> None:
    data = ESTABLISHED + RESPONSE
    pool = tunneled("http://mcp.test/mcp")
    bounds = [0, *sorted(cuts), len(data)]
    for a, b in itertools.pairwise(bounds):
        if b > a:
            pool.receive_data(1, data[a:b], 1.0)
    events = pool_events(pool)
    body = b"".join(e.data for e in events if isinstance(e, ResponseData))
    assert [e for e in events if not isinstance(e, ResponseData)] == [ok()[0], ok()[2]] and body == b"hello"


def test_a_kept_alive_tunnel_is_reused_without_a_second_connect() -> None:
    pool = tunneled()
    pool.receive_data(1, ESTABLISHED, 1.0)
    drain_actions(pool)
    pool.tls_started(1, 1.0)
    pool.data_to_send(1)
    pool.receive_data(1, RESPONSE, 2.0)
    pool_events(pool)
    pool.submit(HttpRequest(exchange=2, method="GET", url=parse_url("https://mcp.test/mcp"), headers=()), 3.0)
    assert drain_actions(pool) == []
    assert request_head(pool.data_to_send(1)).method == b"GET"


def test_a_proxy_refusal_fails_the_exchange_as_unsent_with_the_proxy_status() -> None:
    pool = tunneled()
    pool.receive_data(1, REFUSED, 1.0)
    message = f"{WHERE} refused: HTTP 407 Proxy Authentication Required"
    assert pool_events(pool) == [ExchangeFailed(exchange=1, message=message, sent=False, proxy_status=407)]
    assert drain_actions(pool) == [CloseConnection(connection=1)]


def test_the_proxy_closing_mid_connect_fails_the_exchange_as_unsent_without_a_status() -> None:
    pool = tunneled()
    pool.receive_data(1, b"HTTP/1.1 200 Conn", 1.0)
    pool.receive_data(1, b"", 1.0)
    [failed] = pool_events(pool)
    assert isinstance(failed, ExchangeFailed)
    assert (failed.sent, failed.proxy_status) == (False, None)
    assert "closed the connection before answering CONNECT" in failed.message


def test_a_failed_tls_handshake_fails_the_exchange_as_unsent() -> None:
    pool = tunneled()
    pool.receive_data(1, ESTABLISHED, 1.0)
    drain_actions(pool)
    failure = broken("certificate verify failed", SocketStage.TLS)
    pool.connection_failed(1, failure, 2.0)
    unreachable = ConnectFailure(host="mcp.test", port=443, failure=failure)
    message = "cannot connect to mcp.test:443: the TLS handshake failed: certificate verify failed"
    assert pool_events(pool) == [ExchangeFailed(exchange=1, message=message, sent=False,
                                                connect_failure=unreachable)]


def test_a_refused_proxy_connection_names_the_proxy() -> None:
    pool = submitted()
    assert drain_actions(pool) == [TO_PROXY]
    failure = broken("Connection refused", SocketStage.CONNECT)
    pool.connection_failed(1, failure, 1.0)
    [failed] = pool_events(pool)
    assert isinstance(failed, ExchangeFailed) and not failed.sent
    assert failed.connect_failure == ConnectFailure(host="proxy.corp", port=3128, failure=failure, proxy=True)
    assert failed.message == "cannot connect to the proxy proxy.corp:3128: Connection refused"


def test_closing_the_pool_mid_tunnel_reports_the_request_unsent() -> None:
    pool = tunneled()
    pool.close()
    [failed] = pool_events(pool)
    assert isinstance(failed, ExchangeFailed) and not failed.sent


def test_tls_is_only_started_when_asked_for() -> None:
    pool = tunneled()
    with pytest.raises(LocalProtocolError, match="not starting TLS"):
        pool.tls_started(1, 1.0)
    pool.receive_data(1, ESTABLISHED, 1.0)
    with pytest.raises(LocalProtocolError, match="not connected yet"):
        pool.receive_data(1, b"\x16\x03", 1.0)  # TLS bytes are the driver's until tls_started
    with pytest.raises(LocalProtocolError, match="never opened"):
        pool.tls_started(7, 1.0)
    pool.cancel(1, 2.0)
    pool.tls_started(1, 2.0)  # closed meanwhile: ignored


def test_no_proxy_and_loopback_targets_connect_directly() -> None:
    environ = {"HTTPS_PROXY": PROXY_URL, "NO_PROXY": ".internal"}
    for url, host in (("https://api.internal/mcp", "api.internal"), ("https://127.0.0.1/mcp", "127.0.0.1")):
        pool = submitted(url, ProxySettings.from_environ(environ))
        assert drain_actions(pool) == [OpenConnection(connection=1, host=host, port=443, tls=True,
                                                      server_hostname=host)]


# ------------------------------------------------------------ the HTTP client


class ProxiedServer(ScriptedHttpServer):
    """The scripted server behind a CONNECT proxy: each connection's first write is the
    CONNECT, answered with the next of ``answers`` (200 once they run out)."""

    def __init__(self, client: HttpClient, answers: list[bytes]) -> None:
        super().__init__(client)
        self.answers = answers
        self.connects: list[bytes] = []
        self.secured: list[StartTls] = []
        self._tunneling: set[int] = set()
        self._now = 0.0

    def _perform(self, action: object, now: float) -> None:
        self._now = now
        if isinstance(action, StartTls):
            self.secured.append(action)
            self.client.tls_started(action.connection, now)
            return
        if isinstance(action, OpenConnection):
            self._tunneling.add(action.connection)
        super()._perform(action, now)

    def _read(self, connection: int, data: bytes) -> None:
        if connection not in self._tunneling:
            super()._read(connection, data)
            return
        self._tunneling.discard(connection)
        self.connects.append(data)
        answer = self.answers.pop(0) if self.answers else ESTABLISHED
        self.client.receive_data(connection, answer, self._now)


def proxied_client(answers: list[bytes]) -> tuple[HttpClient, ProxiedServer]:
    client = http_client("https://mcp.test/mcp", proxies=PROXIES, config=ClientConfig(open_get_stream=True))
    return client, ProxiedServer(client, answers)


def test_an_http_client_speaks_to_its_server_through_the_tunnel() -> None:
    client, server = proxied_client([])
    client.connect(now=0.0)
    (init,) = server.pump(now=0.0)
    assert server.opened == [TO_PROXY]
    assert server.connects == [connect_line("mcp.test:443")]
    assert server.secured == [StartTls(connection=1, server_hostname="mcp.test")]
    assert init.rpc_method == "initialize" and init.header("host") == "mcp.test"
    assert init.header("proxy-authorization") is None
    server.reply_json(init, init_result(), now=0.0)
    assert any(isinstance(e, InitializeCompleted) for e in drain_events(client))


def test_a_proxy_refusing_the_tunnel_fails_initialize_with_a_proxy_error_at_once() -> None:
    client, server = proxied_client([REFUSED])
    client.connect(now=0.0)
    assert server.pump(now=0.0) == []
    [failed, *_] = drain_events(client)
    assert isinstance(failed, InitializeFailed)
    assert (failed.reason, failed.status) == (FailureReason.PROXY_ERROR, 407)
    error = failed.to_exception()
    assert isinstance(error, ProxyError) and error.status == 407
    assert "proxy.corp:3128" in str(error) and "407" in str(error)
    assert SECRET not in str(error) and BASIC not in repr(failed) and SECRET not in repr(failed)
    assert len(server.opened) == 1  # a deliberate answer: not retried
    assert client.next_deadline() is None


def test_a_refused_get_stream_is_retried_like_any_broken_get_stream() -> None:
    client, server = proxied_client([])
    client.connect(now=0.0)
    (init,) = server.pump(now=0.0)
    server.answers.append(REFUSED)  # the GET stream's connection (the POST's is busy)
    server.reply_json(init, init_result(), now=0.0, headers={"Mcp-Session-Id": "s-1"})
    posts: list[ReceivedRequest] = [r for r in server.requests if r.method == "POST"][1:]
    assert [r.rpc_method for r in posts] == ["notifications/initialized"]
    assert len(server.opened) == 2 and server.answers == []
    events: list[Event] = drain_events(client)
    assert not any(isinstance(e, ConnectionTerminated) for e in events)
    deadline = client.next_deadline()
    assert deadline is not None  # the GET stream's retry
    server.accept(posts[0], now=0.0)
    client.handle_timeout(deadline)
    server.pump(now=deadline)
    assert [r.method for r in server.requests][-1] == "GET"


# ------------------------------------------------------- the WebSocket client


def ws_client(url: str = "wss://mcp.test/ws") -> WebSocketClient:
    client = WebSocketClient(url, proxies=PROXIES)
    client.connect(now=0.0)
    assert drain_actions(client) == [TO_PROXY]
    client.connection_made(1, 0.0)
    return client


def test_a_websocket_is_tunneled_secured_then_upgraded() -> None:
    client = ws_client()
    assert client.data_to_send(1) == connect_line("mcp.test:443")
    client.receive_data(1, ESTABLISHED[:10], 1.0)
    assert drain_actions(client) == []
    client.receive_data(1, ESTABLISHED[10:], 1.0)
    assert drain_actions(client) == [StartTls(connection=1, server_hostname="mcp.test")]
    assert client.data_to_send(1) == b""
    with pytest.raises(LocalProtocolError, match="not connected yet"):
        client.receive_data(1, b"\x16\x03", 1.0)
    client.tls_started(1, 2.0)
    server = WSConnection(ConnectionType.SERVER)
    server.receive_data(client.data_to_send(1))
    [upgrade] = server.events()
    assert isinstance(upgrade, ws.Request) and upgrade.host == "mcp.test"
    client.receive_data(1, server.send(ws.AcceptConnection(subprotocol="mcp")), 3.0)
    server.receive_data(client.data_to_send(1))
    [initialize] = server.events()
    assert isinstance(initialize, ws.TextMessage) and '"initialize"' in initialize.data


def test_a_plain_websocket_upgrades_at_once_and_reads_what_followed_the_proxys_answer() -> None:
    client = ws_client("ws://mcp.test/ws")
    client.data_to_send(1)
    client.receive_data(1, ESTABLISHED, 1.0)
    assert drain_actions(client) == []
    assert request_head(client.data_to_send(1)).target == b"/ws"
    client = ws_client("ws://mcp.test/ws")
    client.data_to_send(1)
    client.receive_data(1, ESTABLISHED + b"HTTP/1.1 500 Oops\r\nContent-Length: 0\r\n\r\n", 1.0)
    assert drain_actions(client) == [CloseConnection(connection=1)]
    [failed, _] = drain_events(client)
    assert isinstance(failed, InitializeFailed) and failed.status == 500


def test_a_proxy_refusing_a_websocket_tunnel_fails_initialize_with_a_proxy_error() -> None:
    client = ws_client()
    client.receive_data(1, REFUSED, 1.0)
    [failed, terminated] = drain_events(client)
    assert isinstance(failed, InitializeFailed)
    assert (failed.reason, failed.status) == (FailureReason.PROXY_ERROR, 407)
    assert isinstance(failed.to_exception(), ProxyError)
    assert isinstance(terminated, ConnectionTerminated) and SECRET not in terminated.message
    assert drain_actions(client) == [CloseConnection(connection=1)]
    client.tls_started(1, 2.0)  # closed: ignored


def test_a_proxy_closing_a_websocket_tunnel_is_a_lost_connection() -> None:
    client = ws_client()
    client.receive_data(1, b"", 1.0)
    [failed, _] = drain_events(client)
    assert isinstance(failed, InitializeFailed) and failed.reason is FailureReason.CONNECTION_LOST
    assert "closed the connection before answering CONNECT" in failed.message


def test_a_websocket_starts_tls_only_when_asked_and_times_out_while_tunneling() -> None:
    client = ws_client()
    with pytest.raises(LocalProtocolError, match="not starting TLS"):
        client.tls_started(1, 1.0)
    client.handle_timeout(ClientConfig().initialize_timeout)
    [failed, _] = drain_events(client)
    assert isinstance(failed, InitializeFailed) and failed.reason is FailureReason.TIMEOUT


def test_a_websocket_refused_by_the_proxy_host_names_the_proxy() -> None:
    client = WebSocketClient("wss://mcp.test/ws", proxies=PROXIES)
    client.connect(now=0.0)
    drain_actions(client)
    client.connection_failed(1, broken("Connection refused", SocketStage.CONNECT), 0.5)
    [failed, _] = drain_events(client)
    assert isinstance(failed, InitializeFailed) and failed.reason is FailureReason.CONNECT_FAILED
    assert failed.message == "cannot connect to the proxy proxy.corp:3128: Connection refused"


def test_a_failed_tls_handshake_in_a_websocket_tunnel_names_the_server() -> None:
    client = ws_client()
    client.data_to_send(1)
    client.receive_data(1, ESTABLISHED, 1.0)
    drain_actions(client)
    client.connection_failed(1, broken("certificate verify failed", SocketStage.TLS), 2.0)
    [failed, _] = drain_events(client)
    assert isinstance(failed, InitializeFailed) and failed.reason is FailureReason.CONNECT_FAILED
    assert failed.message == ("cannot connect to mcp.test:443: the TLS handshake failed:"
                              " certificate verify failed")


def test_progress_tells_a_tunnel_from_its_tls_handshake() -> None:
    pool = tunneled()
    assert pool.progress(1) is Progress.TUNNELING
    pool.receive_data(1, ESTABLISHED, 1.0)
    assert pool.progress(1) is Progress.SECURING
