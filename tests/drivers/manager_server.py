"""A small stdio MCP server for the server-manager tests, in plain JSON-RPC (no SDK).

Tools: ``echo`` (its ``message``), ``big`` (``size`` characters of text), ``grow`` (adds the
tool ``extra`` and sends ``notifications/tools/list_changed`` before answering), and
``authorize``, which fails with -32042 (URL elicitation required) on its first
``--elicit-failures N`` calls. ``--init-delay S`` sleeps before answering ``initialize``;
``--log FILE`` appends ``{"event": "start" | "ready", "at": <monotonic clock>, "pid"}`` lines, so
a test can tell how many servers were starting at once.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

METHOD_NOT_FOUND = -32601
URL_ELICITATION_REQUIRED = -32042


class Server:
    """Answers one client on stdin/stdout."""

    def __init__(self, options: argparse.Namespace) -> None:
        self.options = options
        self.tools = ["echo", "big", "grow", "authorize"]
        self.elicit_failures = options.elicit_failures

    def log(self, event: str) -> None:
        if self.options.log:
            with open(self.options.log, "a", encoding="utf-8") as file:
                file.write(json.dumps({"event": event, "at": time.monotonic(), "pid": os.getpid()}) + "\n")

    def send(self, message: dict[str, object]) -> None:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()

    def run(self) -> None:
        self.log("start")
        for line in sys.stdin:
            message = json.loads(line)
            if "id" in message and "method" in message:
                self.answer(message["id"], message["method"], message.get("params") or {})

    def answer(self, request_id: object, method: str, params: dict[str, object]) -> None:
        if method == "initialize":
            time.sleep(self.options.init_delay)
            self.log("ready")
            result: dict[str, object] = {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {"listChanged": True}},
                "serverInfo": {"name": "manager-test-server", "version": "1.0"},
            }
        elif method == "tools/list":
            result = {"tools": [{"name": name, "inputSchema": {"type": "object"}} for name in self.tools]}
        elif method == "tools/call":
            self.call(request_id, params)
            return
        elif method == "ping":
            result = {}
        else:
            error = {"code": METHOD_NOT_FOUND, "message": f"method not found: {method}"}
            self.send({"jsonrpc": "2.0", "id": request_id, "error": error})
            return
        self.send({"jsonrpc": "2.0", "id": request_id, "result": result})

    def call(self, request_id: object, params: dict[str, object]) -> None:
        name = params.get("name")
        arguments = params.get("arguments") or {}
        assert isinstance(arguments, dict)
        if name == "authorize" and self.elicit_failures > 0:
            self.elicit_failures -= 1
            elicitation = {"mode": "url", "elicitationId": "e1", "url": "https://example.com/auth",
                           "message": "Sign in to continue"}
            error = {"code": URL_ELICITATION_REQUIRED, "message": "URL elicitation required",
                     "data": {"elicitations": [elicitation]}}
            self.send({"jsonrpc": "2.0", "id": request_id, "error": error})
            return
        if name == "grow":
            self.tools.append("extra")
            self.send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        text = {"echo": str(arguments.get("message", "")), "big": "x" * int(arguments.get("size", 0)),
                "grow": "grown", "authorize": "authorized"}.get(str(name), "")
        result = {"content": [{"type": "text", "text": text}], "isError": False}
        self.send({"jsonrpc": "2.0", "id": request_id, "result": result})


def main() -> None:
    """Parse the options and serve until stdin closes."""
    parser = argparse.ArgumentParser(description="A small stdio MCP server for the manager tests.")
    parser.add_argument("--init-delay", type=float, default=0.0)
    parser.add_argument("--log", default="")
    parser.add_argument("--elicit-failures", type=int, default=0)
    Server(parser.parse_args()).run()


if __name__ == "__main__":
    main()
