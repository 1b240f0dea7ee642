"""A tiny stdio MCP server with one planted bug, chosen by the first argument.

Bugs: ``deep`` (crashes on an argument nested deeper than 100 levels), ``cancel`` (stops
reading after a ``notifications/cancelled``: a hang), ``code`` (answers unknown methods
with -32603 instead of -32601), ``leak`` (keeps 1 MiB per ``tools/call``), ``child``
(starts a process that outlives it), ``badversion`` (answers ``initialize`` with a version
no revision has), ``unlisted`` (calls of tools it never listed succeed), ``cursor`` (its
``tools/list`` hands out the same ``nextCursor`` for ever), ``cycle`` (two cursors that
lead to each other), ``wrongid`` (answers integer ids as strings, ``initialize`` aside),
``notify`` (answers ``notifications/cancelled`` with a null-id result), ``twobugs``
(``wrongid`` and ``notify`` at once: two causes, one rule), ``drop`` (never answers unknown
methods), ``none`` (no bug: the fuzzer must find nothing).
Plain Python, no SDK, so each bug is exactly what it says.
"""

from __future__ import annotations

import json
import subprocess
import sys

BUG = sys.argv[1] if len(sys.argv) > 1 else "none"
LEAK: list[bytes] = []
TOOLS = [
    {
        "name": "echo",
        "description": "Echo the text back.",
        "inputSchema": {
            "type": "object",
            "properties": {"text": {"type": "string", "maxLength": 64}},
            "required": ["text"],
            "additionalProperties": False,
        },
    }
]


def depth(value: object) -> int:
    """How deeply ``value`` nests (recursively: the planted crash when too deep)."""
    if isinstance(value, list):
        return 1 + max((depth(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((depth(v) for v in value.values()), default=0)
    return 0


def call(args: object) -> dict[str, object]:
    """The echo tool, validating its arguments as the schema says."""
    if BUG == "deep" and depth(args) > 100:
        raise SystemExit(3)  # the planted crash
    if BUG == "leak":
        LEAK.append(b"x" * (1 << 20))
    ok = (
        isinstance(args, dict)
        and set(args) == {"text"}
        and isinstance(args["text"], str)
        and len(args["text"]) <= 64
    )
    if not ok:
        return {"content": [{"type": "text", "text": "invalid arguments"}], "isError": True}
    return {"content": [{"type": "text", "text": args["text"]}]}  # type: ignore[index]


def answer(message: dict[str, object]) -> dict[str, object] | None:
    """The response to one request, or None for a notification."""
    method, rid = message.get("method"), message.get("id")
    params = message.get("params") if isinstance(message.get("params"), dict) else {}
    assert isinstance(params, dict)
    if "id" not in message or "method" not in message:
        return None  # a notification, or a response (we sent no request)
    if not isinstance(rid, int | str) or isinstance(rid, bool) or message.get("jsonrpc") != "2.0":
        return {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Invalid Request"}}
    if method == "initialize":
        version = params.get("protocolVersion")
        known = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
        if BUG == "badversion":
            version = "2024-13-45"  # the planted version no revision has
        result: object = {
            "protocolVersion": version if version in known or BUG == "badversion" else known[0],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": f"planted-{BUG}", "version": "1"},
        }
    elif method == "ping":
        result = {}
    elif method == "tools/list":
        page: dict[str, object] = {"tools": TOOLS}
        if BUG == "cursor":
            page["nextCursor"] = "page-2"
        elif BUG == "cycle":
            page["nextCursor"] = "page-b" if params.get("cursor") == "page-a" else "page-a"
        result = page
    elif method == "tools/call":
        if BUG == "unlisted" and params.get("name") != "echo":
            return {"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": "ok"}]}}
        if params.get("name") != "echo":
            return {"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": "Unknown tool"}}
        result = call(params.get("arguments"))
    elif BUG == "drop":
        return None  # the planted silence: unknown methods are never answered
    else:
        code = -32603 if BUG == "code" else -32601
        return {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": f"no method {method}"}}
    if BUG in ("wrongid", "twobugs") and method != "initialize" and isinstance(rid, int):
        rid = str(rid)  # the planted id of the wrong type
    return {"jsonrpc": "2.0", "id": rid, "result": result}


def main() -> None:
    """Serve stdin/stdout until EOF."""
    if BUG == "child":
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=False)
    for line in sys.stdin.buffer:
        try:
            message = json.loads(line)
        except (ValueError, RecursionError):
            reply: object = {
                "jsonrpc": "2.0",
                "id": None,
                "error": {"code": -32700, "message": "Parse error"},
            }
        else:
            if not isinstance(message, dict):
                reply = {
                    "jsonrpc": "2.0",
                    "id": None,
                    "error": {"code": -32600, "message": "Invalid Request"},
                }
            else:
                if BUG == "cancel" and message.get("method") == "notifications/cancelled":
                    while True:
                        sys.stdin.buffer.read(1)  # the planted hang: never answers again
                reply = answer(message)
                if BUG in ("notify", "twobugs") and message.get("method") == "notifications/cancelled":
                    reply = {"jsonrpc": "2.0", "id": None, "result": {}}  # the planted answer
        if reply is not None:
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
