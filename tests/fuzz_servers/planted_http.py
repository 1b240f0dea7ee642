"""The planted-bug server of ``planted.py`` over Streamable HTTP (JSON responses), with
sessions, plus two HTTP-only bugs.

Usage: ``python planted_http.py BUG PORT``; the endpoint is ``http://127.0.0.1:PORT/mcp``.
Bugs: those of ``planted.py`` that apply over HTTP (``deep``: the process dies; ``code``;
``cancel``: the server stops answering anything), ``version`` (an invalid
``MCP-Protocol-Version`` is accepted instead of refused with 400), ``session`` (a deleted
session keeps working instead of getting 404), ``none``. Plain standard library.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.argv = [sys.argv[0], *sys.argv[1:]]  # planted.py reads the bug from argv[1]

planted = importlib.import_module("planted")  # a sibling script, found once the path is set

BUG = planted.BUG
VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26")
SESSIONS: set[str] = set()
STALLED = threading.Event()


class Handler(BaseHTTPRequestHandler):
    """POST (one JSON-RPC message), GET (no stream: 405) and DELETE (end the session)."""

    def log_message(self, format: str, *args: object) -> None:  # the base class's names
        """Quiet."""

    def _reply(self, status: int, body: object = None, headers: dict[str, str] | None = None) -> None:
        data = b"" if body is None else json.dumps(body).encode()
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        if body is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        """No server-initiated stream."""
        self._reply(405)

    def do_DELETE(self) -> None:
        """End the session (unless the bug is ``session``)."""
        session = self.headers.get("Mcp-Session-Id", "")
        if session not in SESSIONS:
            self._reply(404)
            return
        if BUG != "session":
            SESSIONS.discard(session)
        self._reply(200)

    def do_POST(self) -> None:
        """One message in, one JSON response (or 202) out."""
        if STALLED.is_set():
            threading.Event().wait()  # the planted hang: nothing is answered any more
        size = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(size)
        try:
            message = json.loads(raw)
        except (ValueError, RecursionError):
            self._reply(
                400, {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}
            )
            return
        if not isinstance(message, dict):
            self._reply(400, {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Invalid"}})
            return
        headers: dict[str, str] = {}
        if message.get("method") == "initialize":
            session = uuid.uuid4().hex
            SESSIONS.add(session)
            headers["Mcp-Session-Id"] = session
        else:
            if self.headers.get("Mcp-Session-Id") not in SESSIONS:
                self._reply(404 if self.headers.get("Mcp-Session-Id") else 400)
                return
            version = self.headers.get("MCP-Protocol-Version")
            if BUG != "version" and version is not None and version not in VERSIONS:
                self._reply(400)
                return
        if BUG == "cancel" and message.get("method") == "notifications/cancelled":
            STALLED.set()
        try:
            reply = planted.answer(message)
        except SystemExit:
            os._exit(3)  # the planted crash takes the whole server down
        if reply is None:
            self._reply(202)
        else:
            self._reply(200, reply, headers)


def main() -> None:
    """Serve until killed."""
    port = int(sys.argv[2])
    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


if __name__ == "__main__":
    main()
