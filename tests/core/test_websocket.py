"""WebSocketClient against a server scripted with wsproto in server mode; no sockets.

Our frames are masked with random keys (wsproto draws them), so what the client writes
is read back through the scripted server rather than compared as bytes. Time is a float
the tests move by hand; the Hypothesis test checks that the events do not depend on how
the server's bytes are split into reads.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from helpers import FIRST_REQUEST_ID, REFUSED, Json, ScriptedServer, broken, drain_actions, drain_events
from hypothesis import given
from hypothesis import strategies as st
from wsproto import ConnectionType, WSConnection
from wsproto import events as ws
from wsproto.utilities import generate_accept_token

from mcp_sansio import ClientConfig
from mcp_sansio.connections import CloseConnection, OpenConnection, SocketStage
from mcp_sansio.errors import (
    ConnectError,
    ConnectionClosed,
    HttpError,
    LocalProtocolError,
    SendQueueFull,
    Unauthorized,
)
from mcp_sansio.events import (
    Action,
    AuthorizationRequired,
    ConnectionTerminated,
    DiscardReason,
    Event,
    FailureReason,
    InitializeCompleted,
    InitializeFailed,
    MessageDiscarded,
    NotificationReceived,
    RequestFailed,
    ResponseReceived,
)
from mcp_sansio.session import Phase
from mcp_sansio.types import CallToolResult, TextContent
from mcp_sansio.urls import Url
from mcp_sansio.websocket import WebSocketClient, parse_ws_url

URL = "ws://example.com:8080/mcp?x=1"
CONN = 1
SERVER = ScriptedServer()
CLOSED = CloseConnection(connection=CONN)


class Peer:
    """The server end of the connection: wsproto in server mode, plus raw-byte helpers."""

    def __init__(self) -> None:
        self.ws = WSConnection(ConnectionType.SERVER)
        self._partial = ""

    def read(self, client: WebSocketClient) -> list[ws.Event]:
        """Everything the client wrote since the last read, as wsproto events."""
        self.ws.receive_data(client.data_to_send(CONN))
        return list(self.ws.events())

    def accept(self, client: WebSocketClient, subprotocol: str | None = "mcp") -> bytes:
        """Read the upgrade request and answer 101."""
        [request] = self.read(client)
        assert isinstance(request, ws.Request)
        return self.ws.send(ws.AcceptConnection(subprotocol=subprotocol))

    def messages(self, client: WebSocketClient) -> list[Json]:
        """The JSON messages the client sent since the last read (text frames reassembled)."""
        out: list[Json] = []
        for event in self.read(client):
            assert isinstance(event, ws.TextMessage), event
            self._partial += event.data
            if event.message_finished:
                out.append(json.loads(self._partial))
                self._partial = ""
        return out

    def send(self, event: ws.Event) -> bytes:
        """The bytes of one frame (or close) from the server."""
        return self.ws.send(event)

    def text(self, line: bytes) -> bytes:
        """One text frame holding a :class:`ScriptedServer` line (newline dropped)."""
        return self.ws.send(ws.TextMessage(data=line.rstrip(b"\n").decode()))


def raw_text_frame(payload: bytes) -> bytes:
    """An unmasked text frame of any payload, valid UTF-8 or not (payload under 64 KiB)."""
    size = len(payload)
    return (bytes([0x81, size]) if size < 126 else b"\x81\x7e" + size.to_bytes(2, "big")) + payload


def connected(url: str = URL, **kwargs: Any) -> WebSocketClient:
    """A client whose TCP connection is up; the upgrade request waits in ``data_to_send``."""
    client = WebSocketClient(url, **kwargs)
    client.connect(now=0.0)
    assert drain_actions(client) == [OpenConnection(connection=CONN, host="example.com", port=8080,
                                                    tls=False, server_hostname="example.com")]
    client.connection_made(CONN, 0.0)
    return client


def opened(**kwargs: Any) -> tuple[WebSocketClient, Peer]:
    """A client past the upgrade; the ``initialize`` frame has been read."""
    client = connected(**kwargs)
    peer = Peer()
    client.receive_data(CONN, peer.accept(client), 0.0)
    [init] = peer.messages(client)
    assert init["method"] == "initialize"
    return client, peer


def ready(**kwargs: Any) -> tuple[WebSocketClient, Peer]:
    """A client past the MCP handshake at ``now=0.0``, queues drained."""
    client, peer = opened(**kwargs)
    client.receive_data(CONN, peer.text(SERVER.initialize_result()), 0.0)
    [event] = drain_events(client)
    assert isinstance(event, InitializeCompleted)
    assert [m["method"] for m in peer.messages(client)] == ["notifications/initialized"]
    return client, peer


def refused(response: bytes, **kwargs: Any) -> WebSocketClient:
    """A client whose upgrade the server answered with ``response``."""
    client = connected(**kwargs)
    client.data_to_send(CONN)
    client.receive_data(CONN, response, 1.0)
    return client


def failures(events: list[Event]) -> list[tuple[type[Event], FailureReason]]:
    """The kind and reason of each failure event, in order."""
    return [(type(e), e.reason) for e in events if isinstance(e, RequestFailed | InitializeFailed
                                                               | ConnectionTerminated)]


# ------------------------------------------------------------------- URLs


def test_ws_and_wss_urls_map_to_the_upgrade_requests_url() -> None:
    assert parse_ws_url("WS://Example.com/mcp") == Url(scheme="http", host="example.com", port=80,
                                                       target="/mcp")
    assert parse_ws_url("wss://example.com") == Url(scheme="https", host="example.com", port=443,
                                                    target="/")


@pytest.mark.parametrize("url", ["http://example.com/mcp", "example.com", "ftp://x/", "ws:"])
def test_other_urls_are_refused(url: str) -> None:
    with pytest.raises(LocalProtocolError, match="invalid"):
        WebSocketClient(url)


def test_wss_opens_a_tls_connection_on_port_443() -> None:
    client = WebSocketClient("wss://example.com/mcp")
    client.connect(now=0.0)
    assert drain_actions(client) == [OpenConnection(connection=CONN, host="example.com", port=443, tls=True,
                                                    server_hostname="example.com")]
    assert client.url == "wss://example.com/mcp"


# -------------------------------------------------------------- handshake


def test_upgrade_request_carries_host_target_subprotocol_and_headers() -> None:
    client = connected(headers={"Authorization": "Bearer t0k"})
    [event] = Peer().read(client)
    assert isinstance(event, ws.Request)
    assert (event.host, event.target, event.subprotocols) == ("example.com:8080", "/mcp?x=1", ["mcp"])
    headers = dict(event.extra_headers)
    assert headers[b"authorization"] == b"Bearer t0k"
    assert headers[b"user-agent"] == b"mcp-sansio/0.1.0"


def test_a_user_agent_of_the_caller_replaces_ours() -> None:
    client = connected(headers={"User-Agent": "host-app/2"})
    [event] = Peer().read(client)
    assert isinstance(event, ws.Request)
    assert [v for k, v in event.extra_headers if k == b"user-agent"] == [b"host-app/2"]


@pytest.mark.parametrize("name", ["Host", "sec-websocket-protocol", "Connection"])
def test_headers_the_handshake_sets_are_refused(name: str) -> None:
    with pytest.raises(LocalProtocolError, match="sets the"):
        WebSocketClient(URL, headers={name: "x"})


@pytest.mark.parametrize(("name", "value"), [("bad name", "x"), ("x-ok", "a\r\nb"), ("x-ok", "caf\u00e9")])
def test_malformed_headers_are_refused(name: str, value: str) -> None:
    with pytest.raises(LocalProtocolError, match="invalid HTTP header"):
        WebSocketClient(URL, headers={name: value})


@pytest.mark.parametrize("kwargs", [{"max_message_bytes": 0}, {"ping_interval": 0.0},
                                    {"ping_interval": 1.0, "ping_timeout": -1.0}])
def test_limits_must_be_positive(kwargs: dict[str, Any]) -> None:
    with pytest.raises(LocalProtocolError, match="must be positive"):
        WebSocketClient(URL, **kwargs)


def test_nothing_but_the_upgrade_goes_out_before_the_101() -> None:
    client = connected()
    peer = Peer()
    assert len(peer.read(client)) == 1  # the Request alone: initialize waits
    assert client.connections_with_data() == []
    assert client.phase is Phase.INITIALIZING


def test_initialize_goes_out_in_a_text_frame_once_the_upgrade_completes() -> None:
    client = connected()
    peer = Peer()
    client.receive_data(CONN, peer.accept(client), 1.0)
    assert client.subprotocol == "mcp"
    assert client.connections_with_data() == [CONN]
    [init] = peer.messages(client)
    assert (init["id"], init["method"]) == (1, "initialize")


def test_initialize_result_in_a_text_frame_makes_the_session_ready() -> None:
    client, peer = opened()
    client.receive_data(CONN, peer.text(SERVER.initialize_result()), 1.0)
    [event] = drain_events(client)
    assert isinstance(event, InitializeCompleted)
    assert client.phase is Phase.READY
    assert peer.messages(client) == [{"jsonrpc": "2.0", "method": "notifications/initialized"}]


def test_frames_right_behind_the_101_are_read() -> None:
    client = connected()
    peer = Peer()
    client.receive_data(CONN, peer.accept(client) + peer.text(SERVER.initialize_result()), 1.0)
    assert [type(e) for e in drain_events(client)] == [InitializeCompleted]


def test_a_server_that_names_no_subprotocol_is_accepted() -> None:
    client = connected()
    peer = Peer()
    client.receive_data(CONN, peer.accept(client, subprotocol=None), 1.0)
    assert client.subprotocol is None
    assert [m["method"] for m in peer.messages(client)] == ["initialize"]


@pytest.mark.parametrize(
    ("response", "detail"),
    [
        (b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
         b"Sec-WebSocket-Accept: bm9wZQ==\r\n\r\n", "Bad accept token"),
        (b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n\r\n", "Upgrade: websocket"),
        (b"HTTP/1.1 nonsense\r\n\r\n", "Bad HTTP message"),
    ],
)
def test_a_broken_upgrade_answer_fails_initialize_with_protocol_error(response: bytes, detail: str) -> None:
    client = refused(response)
    events = drain_events(client)
    assert failures(events) == [(InitializeFailed, FailureReason.PROTOCOL_ERROR),
                                (ConnectionTerminated, FailureReason.PROTOCOL_ERROR)]
    assert isinstance(events[0], InitializeFailed) and detail in events[0].message
    assert drain_actions(client) == [CLOSED]
    assert client.finished


def test_a_subprotocol_we_did_not_offer_fails_the_handshake() -> None:
    client = connected()
    peer = Peer()
    [request] = peer.read(client)
    assert isinstance(request, ws.Request)
    key = dict(request.extra_headers)[b"sec-websocket-key"]
    response = (b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                b"Sec-WebSocket-Accept: %s\r\nSec-WebSocket-Protocol: other\r\n\r\n"
                % generate_accept_token(key))
    client.receive_data(CONN, response, 1.0)
    [failed, _] = drain_events(client)
    assert isinstance(failed, InitializeFailed) and "unrecognized subprotocol other" in failed.message


@pytest.mark.parametrize("step", [1000, 100_000])
def test_an_upgrade_answer_head_over_16_kib_fails_the_handshake(step: int) -> None:
    head = b"HTTP/1.1 101 Switching Protocols\r\nX-Filler: " + b"a" * 16_400 + b"\r\n\r\n"
    client = refused(head[:step])
    for start in range(step, len(head), step):
        client.receive_data(CONN, head[start : start + step], 1.0)
    failed, _ = drain_events(client)
    assert isinstance(failed, InitializeFailed) and failed.reason is FailureReason.PROTOCOL_ERROR
    assert "head over 16384 bytes" in failed.message
    assert drain_actions(client) == [CLOSED]


# ---------------------------------------------------------------- refusals


def test_a_refusal_fails_initialize_with_the_status_and_body() -> None:
    client = refused(b"HTTP/1.1 404 Not Found\r\nContent-Length: 13\r\n\r\nno  such\npath")
    failed, terminated = drain_events(client)
    assert failed == InitializeFailed(reason=FailureReason.HTTP_ERROR, status=404,
                                      message="HTTP 404 from ws://example.com:8080/mcp?x=1: no such path",
                                      detail={"body": "no  such\npath"})
    error = failed.to_exception()
    assert isinstance(error, HttpError) and error.status == 404
    assert isinstance(terminated, ConnectionTerminated)
    assert drain_actions(client) == [CLOSED]
    assert client.phase is Phase.CLOSED and client.finished


def test_a_refusal_without_body_has_a_message_without_excerpt() -> None:
    client = refused(b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n")
    failed, _ = drain_events(client)
    assert isinstance(failed, InitializeFailed)
    assert failed.message == "HTTP 500 from ws://example.com:8080/mcp?x=1"


def test_an_informational_answer_other_than_101_is_a_refusal() -> None:
    client = refused(b"HTTP/1.1 100 Continue\r\n\r\n")
    failed, _ = drain_events(client)
    assert isinstance(failed, InitializeFailed) and (failed.reason, failed.status) == (
        FailureReason.HTTP_ERROR, 100)


def test_a_long_refusal_body_is_reported_once_its_start_arrived() -> None:
    client = refused(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 100000\r\n\r\n" + b"x" * 3000)
    failed, _ = drain_events(client)
    assert isinstance(failed, InitializeFailed) and failed.detail == {"body": "x" * 300}
    assert drain_actions(client) == [CLOSED]


def test_a_refusal_body_cut_by_eof_is_reported_with_what_came() -> None:
    client = refused(b"HTTP/1.1 502 Bad Gateway\r\n\r\nupstream")
    assert drain_events(client) == []  # the body runs to EOF
    client.receive_data(CONN, b"", 2.0)
    failed, _ = drain_events(client)
    assert isinstance(failed, InitializeFailed) and failed.detail == {"body": "upstream"}


def test_a_malformed_refusal_body_is_reported_with_what_came() -> None:
    client = refused(b"HTTP/1.1 400 Bad Request\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nbad!\r\nzz\r\n")
    failed, _ = drain_events(client)
    assert isinstance(failed, InitializeFailed) and failed.detail == {"body": "bad!"}


def test_a_refusal_body_that_never_ends_is_reported_at_the_deadline() -> None:
    client = refused(b"HTTP/1.1 500 Oops\r\nContent-Length: 50\r\n\r\npartial")
    assert drain_events(client) == []
    assert client.next_deadline() == 30.0
    client.handle_timeout(30.0)
    failed, _ = drain_events(client)
    assert isinstance(failed, InitializeFailed) and failed.reason is FailureReason.HTTP_ERROR
    assert failed.detail == {"body": "partial"}


def test_401_becomes_authorization_required_with_the_bearer_challenge() -> None:
    client = refused(b'HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm="x"\r\n'
                     b'WWW-Authenticate: Bearer resource_metadata="https://a.example/prm"\r\n'
                     b"Content-Length: 0\r\n\r\n")
    required, failed, terminated = drain_events(client)
    params = {"resource_metadata": "https://a.example/prm"}
    assert required == AuthorizationRequired(status=401, scheme="bearer", params=params)
    assert failed == InitializeFailed(reason=FailureReason.AUTHORIZATION_REQUIRED, status=401, detail=params,
                                      message="the server requires authorization (HTTP 401)")
    assert isinstance(terminated, ConnectionTerminated)
    assert terminated.reason is FailureReason.AUTHORIZATION_REQUIRED
    error = failed.to_exception()
    assert isinstance(error, Unauthorized) and error.params == params


def test_403_with_another_scheme_reports_that_scheme() -> None:
    client = refused(b'HTTP/1.1 403 Forbidden\r\nWWW-Authenticate: Basic realm="x"\r\n'
                     b"Content-Length: 0\r\n\r\n")
    required, failed, _ = drain_events(client)
    assert required == AuthorizationRequired(status=403, scheme="basic", params={"realm": "x"})
    assert isinstance(failed, InitializeFailed) and failed.status == 403


def test_403_without_a_challenge_has_no_scheme() -> None:
    client = refused(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
    required, _, _ = drain_events(client)
    assert required == AuthorizationRequired(status=403, scheme="", params={})


# ------------------------------------------------------------- the link up


def test_tool_result_in_a_text_frame_answers_the_call() -> None:
    client, peer = ready()
    rid = client.call_tool("echo", {"text": "hi"}, now=1.0)
    [call] = peer.messages(client)
    assert (call["id"], call["params"]) == (FIRST_REQUEST_ID, {"name": "echo", "arguments": {"text": "hi"},
                                                               "_meta": {"progressToken": rid}})
    client.receive_data(CONN, peer.text(SERVER.text_result(rid, "hi")), 2.0)
    [event] = drain_events(client)
    assert isinstance(event, ResponseReceived)
    assert event.result == CallToolResult(content=[TextContent(text="hi")])


def test_a_fragmented_message_is_reassembled() -> None:
    client, peer = ready()
    rid = client.call_tool("echo", now=1.0)
    text = SERVER.text_result(rid, "é" * 10).decode()
    wire = b"".join(peer.send(ws.TextMessage(data=text[i : i + 7], message_finished=i + 7 >= len(text)))
                    for i in range(0, len(text), 7))
    client.receive_data(CONN, wire, 2.0)
    [event] = drain_events(client)
    assert isinstance(event, ResponseReceived)
    assert event.result == CallToolResult(content=[TextContent(text="é" * 10)])


def test_a_binary_message_is_discarded() -> None:
    client, peer = ready()
    wire = peer.send(ws.BytesMessage(data=b"\x00" * 150, message_finished=False))
    wire += peer.send(ws.BytesMessage(data=b"\x01" * 3000))
    client.receive_data(CONN, wire, 1.0)
    [event] = drain_events(client)
    assert isinstance(event, MessageDiscarded)
    assert event == MessageDiscarded(
        reason=DiscardReason.NOT_JSON, detail="a binary message: MCP messages are JSON in text frames",
        excerpt=b"\x00" * 150 + b"\x01" * 50, warning=event.warning)
    assert event.warning is not None and event.warning.endswith("... (more such messages are only counted)")
    client.receive_data(CONN, peer.send(ws.BytesMessage(data=b"{}")), 1.0)
    [again] = drain_events(client)
    assert isinstance(again, MessageDiscarded) and again.excerpt == b"{}"


def test_an_answer_too_deep_to_decode_fails_its_request_at_once() -> None:
    client, peer = ready()
    rid = client.call_tool("echo", now=1.0)
    deep = "[" * 100_000 + "]" * 100_000
    answer = f'{{"jsonrpc":"2.0","id":{rid},"result":{deep}}}'
    client.receive_data(CONN, peer.send(ws.TextMessage(data=answer)), 2.0)
    [event] = drain_events(client)
    assert isinstance(event, RequestFailed) and event.reason is FailureReason.INVALID_RESULT
    assert event.message.endswith("could not be decoded: its JSON nests deeper than the decoder allows")


def test_a_text_message_that_is_not_json_is_discarded() -> None:
    client, peer = ready()
    client.receive_data(CONN, peer.send(ws.TextMessage(data="hello")), 1.0)
    [event] = drain_events(client)
    assert isinstance(event, MessageDiscarded) and event.reason is DiscardReason.NOT_JSON


def test_a_ping_is_answered_with_a_pong() -> None:
    client, peer = ready()
    client.receive_data(CONN, peer.send(ws.Ping(payload=b"are you there")), 1.0)
    assert peer.read(client) == [ws.Pong(payload=b"are you there")]
    assert drain_events(client) == []


def test_a_flood_of_pings_gets_one_pong_for_the_latest_per_write() -> None:
    client, peer = ready()
    flood = b"".join(peer.send(ws.Ping(payload=b"%d" % n)) for n in range(10_000))
    client.receive_data(CONN, flood, 1.0)
    assert client.connections_with_data() == [CONN]
    assert peer.read(client) == [ws.Pong(payload=b"9999")]
    assert client.connections_with_data() == []


def test_a_pong_owed_goes_out_before_what_was_queued() -> None:
    client, peer = ready()
    client.receive_data(CONN, peer.send(ws.Ping(payload=b"p")), 1.0)
    rid = client.ping(now=1.0)
    events = peer.read(client)
    assert events[0] == ws.Pong(payload=b"p")
    assert isinstance(events[1], ws.TextMessage) and f'"id":{rid}' in events[1].data


def test_no_pong_follows_our_close_frame() -> None:
    client, peer = ready()
    client.receive_data(CONN, peer.send(ws.Ping(payload=b"p")), 1.0)
    client.close(now=1.0)
    assert peer.read(client) == [ws.CloseConnection(code=1000, reason="")]


def test_a_server_that_stops_reading_is_dropped_once_the_send_queue_is_full() -> None:
    client, _ = ready(config=ClientConfig(max_send_queue_bytes=1000))
    first = client.call_tool("echo", {"text": "x" * 600}, now=1.0)
    second = client.call_tool("echo", {"text": "y" * 600}, now=1.0)  # the first was never written
    events = drain_events(client)
    assert [(e.request_id, e.reason) for e in events if isinstance(e, RequestFailed)] == [
        (first, FailureReason.SEND_QUEUE_FULL), (second, FailureReason.SEND_QUEUE_FULL)]
    assert isinstance(events[0], RequestFailed)
    error = events[0].to_exception()
    assert isinstance(error, SendQueueFull) and isinstance(error, ConnectionClosed)
    assert "the server stopped reading" in str(error) and "max_send_queue_bytes (1000)" in str(error)
    assert drain_actions(client) == [CLOSED]  # no Close frame: it would never be read


def test_one_message_over_the_send_queue_bound_goes_into_an_empty_queue() -> None:
    client, peer = ready(config=ClientConfig(max_send_queue_bytes=100))
    client.call_tool("echo", {"text": "x" * 600}, now=1.0)
    assert len(peer.messages(client)) == 1  # written: the queue is empty again
    client.call_tool("echo", {"text": "y" * 600}, now=1.0)
    assert drain_events(client) == [] and len(peer.messages(client)) == 1


def test_a_keepalive_ping_that_finds_the_send_queue_full_drops_the_connection_once() -> None:
    client, _ = ready(ping_interval=20.0, config=ClientConfig(max_send_queue_bytes=1000))
    client.call_tool("echo", {"text": "x" * 990}, now=1.0)  # never written
    client.handle_timeout(20.0)
    assert failures(drain_events(client))[-1] == (ConnectionTerminated, FailureReason.SEND_QUEUE_FULL)
    assert drain_actions(client) == [CLOSED]
    assert client.next_deadline() is None


def test_server_requests_are_answered_in_text_frames() -> None:
    client, peer = ready()
    client.receive_data(CONN, peer.text(SERVER.request("s1", "ping")), 1.0)
    assert peer.messages(client) == [{"jsonrpc": "2.0", "id": "s1", "result": {}}]


# ---------------------------------------------------------------- keepalive


def test_no_keepalive_ping_is_sent_by_default() -> None:
    client, _ = ready()
    assert client.next_deadline() is None


def test_keepalive_pings_after_the_interval_and_again_after_the_pong() -> None:
    client, peer = ready(ping_interval=20.0, ping_timeout=5.0)
    assert client.next_deadline() == 20.0
    client.handle_timeout(19.0)
    assert client.connections_with_data() == []
    client.handle_timeout(20.0)
    [ping] = peer.read(client)
    assert ping == ws.Ping(payload=b"1")
    assert client.next_deadline() == 25.0
    client.receive_data(CONN, peer.send(ws.Pong(payload=b"stale")), 21.0)  # not ours: ignored
    assert client.next_deadline() == 25.0
    client.receive_data(CONN, peer.send(ping.response()), 22.0)
    assert client.next_deadline() == 42.0
    client.handle_timeout(42.0)
    assert peer.read(client) == [ws.Ping(payload=b"2")]


def test_an_unsolicited_pong_changes_nothing() -> None:
    client, peer = ready(ping_interval=20.0)
    client.receive_data(CONN, peer.send(ws.Pong(payload=b"1")), 1.0)
    assert client.next_deadline() == 20.0


def test_an_overdue_pong_fails_the_connection() -> None:
    client, _ = ready(ping_interval=20.0)
    rid = client.call_tool("slow", now=10.0, timeout=100.0)
    client.handle_timeout(20.0)
    assert client.next_deadline() == 40.0  # ping_timeout defaults to the interval
    client.handle_timeout(40.0)
    events = drain_events(client)
    assert failures(events) == [(RequestFailed, FailureReason.CONNECTION_LOST),
                                (ConnectionTerminated, FailureReason.CONNECTION_LOST)]
    assert isinstance(events[0], RequestFailed) and events[0].request_id == rid
    assert "did not answer a ping within 20 s" in events[0].message
    assert drain_actions(client) == [CLOSED]
    assert client.next_deadline() is None


# ------------------------------------------------------------------ closing


def test_close_runs_the_closing_handshake() -> None:
    client, peer = ready()
    rid = client.call_tool("slow", now=1.0)
    peer.messages(client)
    client.close(now=2.0)
    events = drain_events(client)
    assert failures(events) == [(RequestFailed, FailureReason.CONNECTION_LOST),
                                (ConnectionTerminated, FailureReason.CONNECTION_LOST)]
    assert isinstance(events[0], RequestFailed) and events[0].request_id == rid
    assert peer.read(client) == [ws.CloseConnection(code=1000, reason="")]
    assert drain_actions(client) == [] and not client.finished
    assert client.next_deadline() == 4.0  # close_timeout
    client.receive_data(CONN, peer.send(ws.CloseConnection(code=1000)), 3.0)
    assert drain_actions(client) == []  # the server closes TCP first
    client.receive_data(CONN, b"", 3.5)
    assert drain_actions(client) == [CLOSED]
    assert client.finished and client.next_deadline() is None


def test_what_arrives_while_closing_is_ignored() -> None:
    client, peer = ready()
    wire = peer.text(SERVER.notification("notifications/x")) + peer.send(ws.BytesMessage(data=b"b"))
    wire += peer.send(ws.Ping(payload=b"p"))
    client.close(now=1.0)
    drain_events(client)
    client.data_to_send(CONN)
    client.receive_data(CONN, wire, 1.5)
    assert drain_events(client) == [] and client.connections_with_data() == []


def test_the_closing_handshake_is_bounded_by_close_timeout() -> None:
    client, _ = ready(config=ClientConfig(close_timeout=5.0))
    client.close(now=1.0)
    client.handle_timeout(5.9)
    assert drain_actions(client) == []
    client.handle_timeout(6.0)
    assert drain_actions(client) == [CLOSED]
    assert client.finished


def test_a_server_that_never_closes_tcp_is_dropped_at_close_timeout() -> None:
    client, peer = ready()
    client.close(now=1.0)
    client.receive_data(CONN, peer.send(ws.CloseConnection(code=1000)), 1.5)
    client.receive_data(CONN, b"late", 1.6)  # after both Close frames: not read
    client.close(now=1.7)  # closing already: a no-op
    client.handle_timeout(3.0)
    assert drain_actions(client) == [CLOSED]


def test_eof_right_after_our_close_frame_ends_the_connection() -> None:
    client, _ = ready()
    client.close(now=1.0)
    client.receive_data(CONN, b"", 1.5)
    assert drain_actions(client) == [CLOSED]


def test_garbage_after_our_close_frame_ends_the_connection() -> None:
    client, _ = ready()
    client.close(now=1.0)
    client.data_to_send(CONN)
    client.receive_data(CONN, b"\x8f\x00", 1.5)  # an unknown opcode
    assert drain_actions(client) == [CLOSED]


def test_a_close_from_the_server_is_answered_and_fails_pending_requests() -> None:
    client, peer = ready()
    rid = client.call_tool("slow", now=1.0)
    peer.messages(client)
    client.receive_data(CONN, peer.send(ws.CloseConnection(code=1001, reason="going away")), 2.0)
    failed, terminated = drain_events(client)
    assert failed == RequestFailed(request_id=rid, method="tools/call", reason=FailureReason.CONNECTION_LOST,
                                   message="the server closed the WebSocket (code 1001: going away)")
    assert isinstance(terminated, ConnectionTerminated)
    assert peer.read(client) == [ws.CloseConnection(code=1001, reason="going away")]  # echoed
    assert client.next_deadline() == 4.0
    client.receive_data(CONN, b"", 2.5)
    assert drain_actions(client) == [CLOSED]


def test_bytes_behind_the_servers_close_frame_are_not_read() -> None:
    client, peer = ready()
    client.receive_data(CONN, peer.send(ws.CloseConnection(code=1000)) + b"\x8f\x00garbage", 2.0)
    assert drain_actions(client) == []  # still waiting for the server to close TCP
    client.receive_data(CONN, b"more", 2.5)
    client.receive_data(CONN, b"", 3.0)
    assert drain_actions(client) == [CLOSED]


def test_a_close_without_reason_is_described_by_its_code() -> None:
    client, peer = ready()
    client.receive_data(CONN, peer.send(ws.CloseConnection(code=1000)), 2.0)
    [terminated] = drain_events(client)
    assert isinstance(terminated, ConnectionTerminated)
    assert terminated.message == "the server closed the WebSocket (code 1000)"


def test_close_before_connect_opens_nothing() -> None:
    client = WebSocketClient(URL)
    client.close(now=0.0)
    assert drain_actions(client) == [] and client.finished
    assert [type(e) for e in drain_events(client)] == [ConnectionTerminated]
    with pytest.raises(LocalProtocolError, match="connection is done"):
        client.connect(now=1.0)


def test_close_during_the_upgrade_aborts_the_connection() -> None:
    client = connected()
    client.close(now=1.0)
    assert failures(drain_events(client)) == [(InitializeFailed, FailureReason.CONNECTION_LOST),
                                              (ConnectionTerminated, FailureReason.CONNECTION_LOST)]
    assert drain_actions(client) == [CLOSED]
    client.connection_failed(CONN, broken("reset"), 1.5)  # the driver learned late: ignored
    client.receive_data(CONN, b"x", 1.5)
    client.connection_made(CONN, 1.5)
    assert drain_actions(client) == []


# --------------------------------------------------------------- failures


def test_a_message_over_max_message_bytes_fails_the_connection_with_1009() -> None:
    client, peer = ready(max_message_bytes=1000)
    rid = client.call_tool("big", now=1.0)
    peer.messages(client)
    wire = peer.send(ws.TextMessage(data="x" * 600, message_finished=False))
    wire += peer.send(ws.TextMessage(data="y" * 401)) + peer.send(ws.Ping())
    client.receive_data(CONN, wire, 2.0)
    events = drain_events(client)
    assert failures(events) == [(RequestFailed, FailureReason.MESSAGE_TOO_LARGE),
                                (ConnectionTerminated, FailureReason.MESSAGE_TOO_LARGE)]
    assert isinstance(events[0], RequestFailed) and events[0].request_id == rid
    assert "max_message_bytes (1000)" in str(events[0].to_exception())
    assert peer.read(client) == [ws.CloseConnection(code=1009, reason="")]  # no pong: it was moot
    assert drain_actions(client) == [CLOSED]


def test_a_message_of_exactly_max_message_bytes_is_accepted() -> None:
    text = '{"jsonrpc":"2.0","method":"notifications/x","params":{"a":"%s"}}' % ("\u00e9" * 200)
    client, peer = ready(max_message_bytes=len(text.encode()))
    client.receive_data(CONN, peer.send(ws.TextMessage(data=text)), 1.0)
    [event] = drain_events(client)
    assert isinstance(event, NotificationReceived)


@pytest.mark.parametrize(("bad_at", "reason"), [(900, FailureReason.PROTOCOL_ERROR),
                                             (1100, FailureReason.MESSAGE_TOO_LARGE)])
@pytest.mark.parametrize("step", [1, 7, 100_000])
def test_oversize_and_invalid_utf8_report_whichever_comes_first(bad_at: int, reason: FailureReason,
                                                                step: int) -> None:
    client, _ = ready(max_message_bytes=1000)
    payload = "é".encode() * 300 + b"x" * (bad_at - 600) + b"\xff" + b"y" * 300
    wire = raw_text_frame(payload)
    for start in range(0, len(wire), step):
        client.receive_data(CONN, wire[start : start + step], 1.0)
    assert failures(drain_events(client)) == [(ConnectionTerminated, reason)]


def test_max_message_bytes_defaults_to_max_response_bytes() -> None:
    client, peer = ready(config=ClientConfig(max_response_bytes=300))
    client.receive_data(CONN, peer.send(ws.TextMessage(data="1" * 301)), 1.0)
    assert failures(drain_events(client)) == [(ConnectionTerminated, FailureReason.MESSAGE_TOO_LARGE)]


@pytest.mark.parametrize(
    ("frame", "code", "detail"),
    [(b"\x81\x02\xff\xfe", 1007, "protocol: invalid UTF-8"), (b"\x81\x81abcdx", 1002, "masked frame")],
)
def test_a_protocol_violation_fails_the_connection_with_its_close_code(frame: bytes, code: int,
                                                                       detail: str) -> None:
    client, peer = ready()
    rid = client.call_tool("echo", now=1.0)
    peer.messages(client)
    client.receive_data(CONN, frame, 2.0)
    failed, _ = drain_events(client)
    assert isinstance(failed, RequestFailed) and failed.request_id == rid
    assert failed.reason is FailureReason.PROTOCOL_ERROR and detail in failed.message
    assert [e.code for e in peer.read(client) if isinstance(e, ws.CloseConnection)] == [code]
    assert drain_actions(client) == [CLOSED]


def test_eof_while_open_fails_every_pending_request_with_connection_lost() -> None:
    client, _ = ready()
    first = client.call_tool("slow", now=1.0)
    second = client.ping(now=1.0)
    client.receive_data(CONN, b"", 2.0)
    events = drain_events(client)
    assert [(e.request_id, e.reason) for e in events if isinstance(e, RequestFailed)] == [
        (first, FailureReason.CONNECTION_LOST), (second, FailureReason.CONNECTION_LOST)]
    assert isinstance(events[-1], ConnectionTerminated)
    assert "without a WebSocket Close frame" in events[-1].message
    assert drain_actions(client) == [CLOSED]
    assert client.finished


def test_a_broken_connection_fails_pending_requests() -> None:
    client, _ = ready()
    rid = client.call_tool("slow", now=1.0)
    client.connection_failed(CONN, broken("Connection reset by peer"), 2.0)
    failed, _ = drain_events(client)
    assert failed == RequestFailed(
        request_id=rid, method="tools/call", reason=FailureReason.CONNECTION_LOST,
        message="the WebSocket connection to ws://example.com:8080/mcp?x=1 failed: Connection reset by peer")
    assert drain_actions(client) == [CLOSED]


def test_a_refused_tcp_connection_fails_initialize() -> None:
    client = WebSocketClient(URL)
    client.connect(now=0.0)
    drain_actions(client)
    client.connection_failed(CONN, REFUSED, 0.5)
    failed, _ = drain_events(client)
    assert isinstance(failed, InitializeFailed) and failed.reason is FailureReason.CONNECT_FAILED
    assert failed.message == "cannot connect to example.com:8080: Connection refused"
    error = failed.to_exception()
    assert isinstance(error, ConnectError)
    assert (error.host, error.port, error.cause) == ("example.com", 8080, "Connection refused")
    assert error.errno == 111
    assert drain_actions(client) == [CLOSED]


def test_a_failed_name_lookup_fails_initialize_naming_host_and_port() -> None:
    client = WebSocketClient(URL)
    client.connect(now=0.0)
    drain_actions(client)
    client.connection_failed(CONN, broken("Name or service not known", SocketStage.RESOLVE), 0.5)
    failed, _ = drain_events(client)
    assert isinstance(failed, InitializeFailed) and failed.reason is FailureReason.CONNECT_FAILED
    assert failed.message == ("cannot connect to example.com:8080: the name lookup failed:"
                              " Name or service not known")


def test_eof_during_the_upgrade_fails_initialize() -> None:
    client = connected()
    client.receive_data(CONN, b"", 1.0)
    failed, _ = drain_events(client)
    assert isinstance(failed, InitializeFailed)
    assert failed.message == "the server closed the connection during the WebSocket handshake"


@pytest.mark.parametrize("made", [False, True])
def test_the_connection_must_open_within_initialize_timeout(made: bool) -> None:
    client = WebSocketClient(URL, config=ClientConfig(initialize_timeout=5.0))
    client.connect(now=0.0)
    drain_actions(client)
    if made:
        client.connection_made(CONN, 1.0)
    assert client.next_deadline() == 5.0
    client.handle_timeout(5.0)
    failed, _ = drain_events(client)
    stalled = ("the server did not answer the upgrade request" if made
               else "the connection (TCP, and TLS for wss) did not open")
    assert failed == InitializeFailed(reason=FailureReason.TIMEOUT,
                                      message="could not open the WebSocket to ws://example.com:8080/mcp?x=1"
                                              f" within 5.0 s (initialize_timeout 5 s): {stalled}")
    assert drain_actions(client) == [CLOSED]


def test_initialize_unanswered_on_an_open_connection_times_out_in_the_session() -> None:
    client, _ = opened()
    client.handle_timeout(30.0)
    [failed] = drain_events(client)
    assert isinstance(failed, InitializeFailed) and failed.reason is FailureReason.TIMEOUT
    assert "initialize went unanswered for 30.0 s" in failed.message
    assert drain_actions(client) == []  # the driver closes


# ---------------------------------------------------------------- misuse


def test_connection_ids_other_than_the_opened_one_are_refused() -> None:
    client = WebSocketClient(URL)
    with pytest.raises(LocalProtocolError, match="never opened"):
        client.data_to_send(CONN)  # nothing opened yet
    client.connect(now=0.0)
    with pytest.raises(LocalProtocolError, match="never opened"):
        client.receive_data(2, b"x", 0.0)
    with pytest.raises(LocalProtocolError, match="not connected yet"):
        client.receive_data(CONN, b"x", 0.0)
    client.connection_made(CONN, 0.0)
    with pytest.raises(LocalProtocolError, match="already connected"):
        client.connection_made(CONN, 0.0)
    with pytest.raises(LocalProtocolError, match="connection is upgrading"):
        client.connect(now=0.0)


# ------------------------------------------------------- split invariance


def _script(peer: Peer, items: list[int]) -> bytes:
    """Server bytes for ``items``: each picks a kind of frame; the initialize result first."""
    wire = peer.text(SERVER.initialize_result())
    for n, kind in enumerate(items):
        if kind == 0:
            wire += peer.text(SERVER.notification("notifications/message", {"level": "info", "data": n}))
        elif kind == 1:
            text = SERVER.progress(99, n).decode().strip()
            wire += peer.send(ws.TextMessage(data=text[:5], message_finished=False))
            wire += peer.send(ws.TextMessage(data=text[5:]))
        elif kind == 2:
            wire += peer.send(ws.BytesMessage(data=bytes(range(n + 1))))
        elif kind == 3:
            wire += peer.send(ws.Ping(payload=b"%d" % n))
        elif kind == 4:
            wire += peer.send(ws.TextMessage(data="é" * (n + 3)))  # not JSON
        elif kind == 5:
            wire += peer.send(ws.TextMessage(data="x" * 500))  # over the limit
        else:  # over the limit, and invalid UTF-8 before or after the limit
            wire += raw_text_frame("é".encode() * 100 + b"a" * (n * 97 % 400) + b"\xfe" + b"z" * 300)
    return wire


Outcome = tuple[list[Event], list[Action], list[ws.Event]]


def _run(items: list[int], cuts: list[int] | None, closing: bool) -> Outcome:
    """Feed the script cut at ``cuts`` (``None``: byte by byte): events, actions, what we sent."""
    client = connected(max_message_bytes=400)
    peer = Peer()
    wire = peer.accept(client) + _script(peer, items)
    if closing:
        wire += peer.send(ws.CloseConnection(code=1000))
    points = range(len(wire)) if cuts is None else (c % (len(wire) + 1) for c in cuts)
    for start, end in itertools.pairwise(sorted({0, len(wire), *points})):
        client.receive_data(CONN, wire[start:end], 1.0)
    sent = [e for e in peer.read(client) if not isinstance(e, ws.Request)]
    return drain_events(client), drain_actions(client), sent


@given(st.lists(st.integers(0, 6), max_size=8), st.lists(st.integers(0, 10_000), max_size=12), st.booleans())
def test_events_do_not_depend_on_how_the_bytes_are_split(items: list[int], cuts: list[int],
                                                          closing: bool) -> None:
    whole = _run(items, [], closing)
    assert _run(items, cuts, closing) == whole
    assert _run(items, None, closing) == whole
