"""Many handshake-era sessions waiting for their clients' answers (an elicitation each): each
question times out at its own deadline, an answered one never does, and the server's next
deadline is found without asking every waiting session (bench_sessions.py --waiting)."""

from __future__ import annotations

import json

from mcp_sansio.server import AnswerFailed, AnswerReceived, Ask, HandlerCallReceived, MCPServer, ServerConfig
from mcp_sansio.server.http import HttpConfig, HttpServer

ASKABLE = {"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
           "clientInfo": {"name": "c", "version": "1"}}
FORM = {"type": "object", "properties": {}}


def _post(message: dict[str, object], session: str | None = None) -> bytes:
    body = json.dumps(message)
    head = ["POST /mcp HTTP/1.1", "host: 127.0.0.1", "content-type: application/json",
            "accept: application/json, text/event-stream", f"content-length: {len(body)}"]
    if session is not None:
        head += [f"mcp-session-id: {session}", "mcp-protocol-version: 2025-11-25"]
    return ("\r\n".join(head) + "\r\n\r\n" + body).encode()


def _waiting(server: HttpServer, now: float) -> tuple[int, str, int]:
    """A new session (on a connection of its own) whose tool call asked a question at
    ``now``; its connection, session id and question's id."""
    conn = server.connection_made(now)
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": ASKABLE}
    server.receive_data(conn, _post(initialize), now)
    head = server.data_to_send(conn).split(b"\r\n\r\n")[0].decode().split("\r\n")
    sid = next(line.split(": ")[1] for line in head if line.lower().startswith("mcp-session-id"))
    server.receive_data(conn, _post({"jsonrpc": "2.0", "method": "notifications/initialized"}, sid), now)
    server.data_to_send(conn)
    server.receive_data(conn, _post({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                     "params": {"name": "form", "arguments": {}}}, sid), now)
    event = server.next_event()
    while not isinstance(event, HandlerCallReceived):  # ClientInitialized before it
        event = server.next_event()
    server.ask(event.call, [Ask.elicit("Your name?", FORM)], now=now)
    sse = server.data_to_send(conn).decode()
    question = json.loads(next(line[6:] for line in sse.split("\n") if '"elicitation/create"' in line))
    return conn, sid, int(question["id"])


def test_each_waiting_session_times_out_at_its_own_deadline_and_an_answered_one_never() -> None:
    app = MCPServer("s", config=ServerConfig(request_timeout=10.0))
    app.add_tool(lambda: "never called", name="form")
    server = HttpServer(app, secret=b"s" * 32, entropy=b"e" * 32, config=HttpConfig.loopback())
    waiting = [_waiting(server, float(t)) for t in range(5)]  # questions due at 10, 11, ... 14
    _, sid, rid = waiting[1]
    conn = server.connection_made(2.0)  # its stream holds the first: the answer comes on another
    server.receive_data(conn, _post({"jsonrpc": "2.0", "id": rid, "result": {"action": "decline"}}, sid), 2.0)
    assert isinstance(server.next_event(), AnswerReceived)
    assert server.next_event() is None
    assert server.next_deadline() == 10.0
    timed_out = []
    for now in [10.0, 11.0, 11.5, 12.0, 13.0, 14.0]:
        if now in (10.0, 12.0, 13.0, 14.0):  # a question is due: the server must wake by then
            assert (deadline := server.next_deadline()) is not None and deadline <= now
        server.handle_timeout(now)
        while (event := server.next_event()) is not None:
            assert isinstance(event, AnswerFailed)
            timed_out.append(now)
    assert timed_out == [10.0, 12.0, 13.0, 14.0]  # not 11.0: that one was answered
    deadline = server.next_deadline()
    assert deadline is None or deadline >= 60.0  # only the connections' idle timeouts are left
