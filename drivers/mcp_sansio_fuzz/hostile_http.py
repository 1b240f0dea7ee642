"""Hostile-server mode over Streamable HTTP: the scenario's server behind a loopback HTTP
endpoint (a thread of the fuzzer's process), its answers sent as SSE events paced as each
:class:`~mcp_sansio.fuzz.hostile.Emit` says.

Every request POST gets ``200 text/event-stream`` with the scenario's bytes as ``data:``
lines (a line sent without its end stays open: the unbounded line); notifications and
responses get 202, GET 405, DELETE 200. ``initialize`` is given an ``Mcp-Session-Id``; in
``session-expiry`` every later request gets 404 (the client must not re-initialize for
ever)."""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from mcp_sansio.fuzz.hostile import Emit, HostileServer

__all__ = ["serve_hostile"]


def _events(emits: list[Emit]) -> Iterator[tuple[float, bytes]]:
    """(pause before, bytes) to write for ``emits``, as SSE."""
    open_line = False
    for emit in emits:
        if emit.delay:
            yield emit.delay, b""
        for number in range(emit.times):
            data = emit.data
            if not open_line:
                data = b"\n".join(b"data: " + line for line in data.split(b"\n") if line)
            whole = data + (b"\n\n" if emit.newline else b"")
            open_line = not emit.newline
            pause = emit.every if number else 0.0
            if emit.drip:
                for start in range(0, len(whole), emit.drip):
                    yield (emit.every if start else pause), whole[start : start + emit.drip]
            else:
                yield pause, whole


@contextlib.contextmanager
def serve_hostile(server: HostileServer, stop: threading.Event) -> Iterator[str]:
    """Serve ``server`` on a free loopback port until the block ends; yields the MCP URL."""
    lock = threading.Lock()
    sessions: set[str] = set()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:  # the base class's names
            """Quiet."""

        def _plain(self, status: int) -> None:
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_GET(self) -> None:
            """No stream of its own."""
            self._plain(405)

        def do_DELETE(self) -> None:
            """Sessions end when asked."""
            self._plain(200)

        def do_POST(self) -> None:
            """One message in; its answer as a paced SSE stream."""
            body = self.rfile.read(int(self.headers.get("Content-Length", "0") or 0))
            with lock:
                server.requests += 1
                expired = server.scenario.name == "session-expiry" and b'"initialize"' not in body
                if expired and self.headers.get("Mcp-Session-Id") in sessions:
                    self._plain(404)
                    return
                emits = server.receive(body)
            if b'"id"' not in body or b'"method"' not in body:
                self._plain(202)
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            if b'"initialize"' in body:
                session = uuid.uuid4().hex
                sessions.add(session)
                self.send_header("Mcp-Session-Id", session)
            self.send_header("Connection", "close")
            self.end_headers()
            try:
                for pause, data in _events(emits):
                    if stop.wait(pause) if pause else stop.is_set():
                        return
                    if data:
                        self.wfile.write(data)
                        self.wfile.flush()
                        with lock:
                            server.sent += len(data)
            except OSError:
                return  # the client hung up
            self.close_connection = True

    class Quiet(ThreadingHTTPServer):
        def handle_error(self, request: object, client_address: object) -> None:
            """A client that hangs up mid-answer is part of the game."""

    httpd = Quiet(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/mcp"
    finally:
        stop.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)
        time.sleep(0)
