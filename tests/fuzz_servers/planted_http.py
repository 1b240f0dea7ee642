"""The planted-bug server of ``planted.py`` over Streamable HTTP (JSON responses), with
sessions, plus two HTTP-only bugs.

Usage: ``python planted_http.py BUG PORT [auth]``; the endpoint is
``http://127.0.0.1:PORT/mcp``. With ``auth`` every request needs ``Bearer token-a`` or
``Bearer token-b`` (two principals; anything else gets 401 naming the protected resource
metadata, which is served), and a session belongs to the token that opened it.
Bugs: those of ``planted.py`` that apply over HTTP (``deep``: the process dies; ``code``;
``cancel``: the server stops answering anything), ``version`` (an invalid
``MCP-Protocol-Version`` is accepted instead of refused with 400), ``session`` (a deleted
session keeps working instead of getting 404), ``origin`` (a foreign ``Origin`` is served
instead of refused with 403), ``sessionid`` (session ids count up: guessable), and with
``auth``: ``anytoken`` (any bearer token is accepted), ``nometa`` (401 without
``resource_metadata``, and no metadata served), ``shared`` (one principal's session works
with another's token); ``none``. Plain standard library.
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
AUTH = len(sys.argv) > 3 and sys.argv[3] == "auth"
TOKENS = ("Bearer token-a", "Bearer token-b")
VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26")
SESSIONS: dict[str, str] = {}  # session id -> the token that opened it
STALLED = threading.Event()
COUNTER = iter(range(1, 1 << 30))
LOOPBACK = ("127.0.0.1", "localhost", "[::1]")
PORT = int(sys.argv[2]) if len(sys.argv) > 2 else 0


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

    def _refused(self) -> bool:
        """Origin and authorization checks; True when the request was answered with an error."""
        origin = self.headers.get("Origin")
        host = (origin or "").partition("://")[2].rsplit(":", 1)[0]
        if BUG != "origin" and origin is not None and host not in LOOPBACK:
            self._reply(403, {"jsonrpc": "2.0", "error": {"code": -32600, "message": "Forbidden origin"}})
            return True
        token = self.headers.get("Authorization", "")
        if AUTH and not (token in TOKENS or (BUG == "anytoken" and token.startswith("Bearer "))):
            port = PORT
            meta = f'resource_metadata="http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp"'
            # RFC 6750's JSON error body beside the challenge, as the SDK's server and ours send it.
            body = {"error": "invalid_token", "error_description": "an access token is needed"}
            self._reply(401, body, {"WWW-Authenticate": "Bearer" if BUG == "nometa" else f"Bearer {meta}"})
            return True
        return False

    def _session(self) -> str | None:
        """The request's session, if it is live and (with auth) its token's."""
        session = self.headers.get("Mcp-Session-Id", "")
        owner = SESSIONS.get(session)
        if owner is None or (AUTH and BUG != "shared" and owner != self.headers.get("Authorization")):
            return None
        return session

    def do_GET(self) -> None:
        """No server-initiated stream; the protected resource metadata with ``auth``."""
        if AUTH and BUG != "nometa" and self.path.startswith("/.well-known/oauth-protected-resource"):
            port = PORT
            self._reply(200, {"resource": f"http://127.0.0.1:{port}/mcp", "authorization_servers": []})
            return
        if self._refused():
            return
        self._reply(405)

    def do_DELETE(self) -> None:
        """End the session (unless the bug is ``session``)."""
        if self._refused():
            return
        session = self._session()
        if session is None:
            self._reply(404)
            return
        if BUG != "session":
            SESSIONS.pop(session, None)
        self._reply(200)

    def do_POST(self) -> None:
        """One message in, one JSON response (or 202) out."""
        if STALLED.is_set():
            threading.Event().wait()  # the planted hang: nothing is answered any more
        size = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(size)
        if self._refused():
            return
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
            session = f"session-{next(COUNTER)}" if BUG == "sessionid" else uuid.uuid4().hex
            SESSIONS[session] = self.headers.get("Authorization", "")
            headers["Mcp-Session-Id"] = session
        else:
            if self._session() is None:
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
    ThreadingHTTPServer(("127.0.0.1", PORT), Handler).serve_forever()


if __name__ == "__main__":
    main()
