"""A hand-written MCP server over HTTP that misbehaves on purpose, one way per mode.

It serves ``POST /mcp`` with plain ``http.server`` (HTTP/1.1 keep-alive, a thread per
connection): ``initialize`` (protocol ``2025-11-25``, a fresh ``Mcp-Session-Id`` each
time), ``tools/list`` (one tool, ``poke``), ``tools/call`` (``"ok"``) and ``ping``, as
JSON; notifications get 202, ``GET`` 405, ``DELETE`` 200. ``poke`` answers its
``text`` argument if given. With ``HOSTILE_TLS_CERT`` and ``HOSTILE_TLS_KEY`` (PEM files)
set it speaks HTTPS. The misbehaviour:

- ``too-large``: ``tools/call`` is answered with a JSON body of 2 MiB.
- ``garbage``: every request is answered with bytes that are not HTTP, then a close.
- ``stall``: ``tools/call`` is never answered (the connection stays open).
- ``redirect URL``: every request is answered ``307`` to ``URL`` (another origin).
- ``error-500``: ``tools/call`` is answered ``500`` with an HTML page of 20 KB.
- ``forget-session``: the first ``tools/call`` is answered ``404`` with a JSON-RPC
  "Session not found" error, as a server that lost the session would.
- ``unauthorized``: every request is answered ``401`` with a Bearer challenge and no
  resource metadata (a server whose authorization cannot even be discovered).
- ``get-storm``: every ``GET`` is answered at once with an event stream holding only
  ``retry: 0`` and an id, then closed: a client that reconnects without backing off
  floods it.
- ``bad-event-id``: the same, with the ids ``café`` (non-ASCII), ``a<U+0001>b`` (a control
  character), then ``ok-3``, ``ok-4``, ...: none of the first two may come back as
  ``Last-Event-ID``.
- ``plain``: no misbehaviour (the target of ``redirect``).

Every request is appended as a JSON line (method, path, lower-cased headers, JSON-RPC
method) to the file named by ``HOSTILE_LOG``, if set.

Usage: ``python hostile_http.py MODE PORT [URL]``.
"""

from __future__ import annotations

import itertools
import json
import os
import socket
import ssl
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

PROTOCOL_VERSION = "2025-11-25"
TOO_LARGE_BYTES = 2 * 2**20
HTML_BYTES = 20_000
METHOD_NOT_FOUND = -32601

Message = dict[str, object]

LOG_LOCK = threading.Lock()
SESSIONS = itertools.count(1)
GETS = itertools.count(1)
BAD_IDS = {1: "caf\u00e9", 2: "a\u0001b"}
FORGOTTEN = threading.Event()  # forget-session: the one 404 was sent


def log(entry: Message) -> None:
    """Append ``entry`` to ``$HOSTILE_LOG``."""
    path = os.environ.get("HOSTILE_LOG")
    if path:
        with LOG_LOCK, open(path, "a") as out:
            out.write(json.dumps(entry) + "\n")


def result(message: Message, value: object) -> Message:
    """The JSON-RPC response to ``message`` with ``value`` as its result."""
    return {"jsonrpc": "2.0", "id": message.get("id"), "result": value}


def answer(message: Message) -> Message:
    """The well-behaved answer to a request."""
    method = message.get("method")
    if method == "initialize":
        return result(message, {"protocolVersion": PROTOCOL_VERSION, "capabilities": {"tools": {}},
                                "serverInfo": {"name": "hostile-http", "version": "1.0.0"}})
    if method == "tools/list":
        return result(message, {"tools": [{"name": "poke", "inputSchema": {"type": "object"}}]})
    if method == "tools/call":
        params = message.get("params")
        arguments = params.get("arguments") if isinstance(params, dict) else None
        text = arguments.get("text", "ok") if isinstance(arguments, dict) else "ok"
        return result(message, {"content": [{"type": "text", "text": text}], "isError": False})
    if method == "ping":
        return result(message, {})
    return {"jsonrpc": "2.0", "id": message.get("id"),
            "error": {"code": METHOD_NOT_FOUND, "message": f"no method {method}"}}


class Handler(BaseHTTPRequestHandler):
    """One connection; ``server.mode`` says how to misbehave."""

    protocol_version = "HTTP/1.1"
    server: Server

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the test reads ``HOSTILE_LOG``."""

    def do_GET(self) -> None:
        self._record(None)
        if self._misbehave_always():
            return
        if self.server.mode in ("get-storm", "bad-event-id"):
            number = next(GETS)
            bad = self.server.mode == "bad-event-id"
            event_id = BAD_IDS.get(number, f"ok-{number}") if bad else str(number)
            self._send(200, f"id: {event_id}\nretry: 0\n\n".encode(), "text/event-stream")
            self.close_connection = True
            return
        self._send(405, b"", "text/plain")

    def do_DELETE(self) -> None:
        self._record(None)
        if not self._misbehave_always():
            self._send(200, b"", "text/plain")

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        message: Message = json.loads(body)
        self._record(message)
        if self._misbehave_always():
            return
        if "id" not in message:  # a notification or a response
            self._send(202, b"", "text/plain")
            return
        mode, method = self.server.mode, message.get("method")
        if method == "tools/call" and mode == "too-large":
            padding = "x" * TOO_LARGE_BYTES
            self._json(200, result(message, {"content": [{"type": "text", "text": padding}]}))
        elif method == "tools/call" and mode == "stall":
            threading.Event().wait()  # until the process is killed
        elif method == "tools/call" and mode == "error-500":
            page = "<!DOCTYPE html><html><head><title>500 Internal Server Error</title></head><body>"
            page += "<h1>Internal Server Error</h1>" + "<p>Something broke.</p>" * (HTML_BYTES // 22)
            self._send(500, (page + "</body></html>").encode(), "text/html")
        elif method == "tools/call" and mode == "forget-session" and not FORGOTTEN.is_set():
            FORGOTTEN.set()
            self._json(404, {"jsonrpc": "2.0", "id": message["id"],
                             "error": {"code": -32001, "message": "Session not found"}})
        elif method == "initialize":
            self._json(200, answer(message), {"mcp-session-id": f"session-{next(SESSIONS)}"})
        else:
            self._json(200, answer(message))

    def _record(self, message: Message | None) -> None:
        log({"method": self.command, "path": self.path,
             "headers": {name.lower(): value for name, value in self.headers.items()},
             "rpc": None if message is None else message.get("method"),
             "params": None if message is None else message.get("params")})

    def _misbehave_always(self) -> bool:
        """Modes that answer every request the same wrong way; True if this one did."""
        if self.server.mode == "garbage":
            self.wfile.write(b"\x00\x01 this is not HTTP at all \xff\r\n\r\n")
            self.close_connection = True
            return True
        if self.server.mode == "redirect":
            self.send_response(307)
            self.send_header("location", self.server.target)
            self.send_header("content-length", "0")
            self.end_headers()
            return True
        if self.server.mode == "unauthorized":
            self._send(401, b"", "text/plain", {"www-authenticate": 'Bearer realm="mcp"'})
            return True
        return False

    def _json(self, status: int, message: Message, headers: dict[str, str] | None = None) -> None:
        self._send(status, json.dumps(message).encode(), "application/json", headers)

    def _send(self, status: int, body: bytes, ctype: str, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)


class Server(ThreadingHTTPServer):
    """The listening server, with the mode its handlers follow."""

    daemon_threads = True

    def __init__(self, port: int, mode: str, target: str) -> None:
        super().__init__(("127.0.0.1", port), Handler)
        self.mode = mode
        self.target = target
        self.tls: ssl.SSLContext | None = None
        cert, key = os.environ.get("HOSTILE_TLS_CERT"), os.environ.get("HOSTILE_TLS_KEY")
        if cert and key:
            self.tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self.tls.load_cert_chain(cert, key)

    def get_request(self) -> tuple[socket.socket, Any]:
        """Accept; with TLS, the handshake runs in the connection's thread, on its first read."""
        sock, address = super().get_request()
        if self.tls is not None:
            sock = self.tls.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        return sock, address


def main() -> None:
    """Serve until killed."""
    mode, port = sys.argv[1], int(sys.argv[2])
    target = sys.argv[3] if len(sys.argv) > 3 else ""
    Server(port, mode, target).serve_forever()


if __name__ == "__main__":
    main()
