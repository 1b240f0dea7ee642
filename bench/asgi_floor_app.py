"""The floor of the ASGI rows of the server benchmark: a bare ASGI app doing the same job as
``h11_floor_server.py`` under the same uvicorn, so the ratio shows what MCP adds there.

``python bench/asgi_floor_app.py PORT [json|sse]``.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import msgspec
import uvicorn

_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.decode
SSE = len(sys.argv) > 2 and sys.argv[2] == "sse"


async def app(scope: MutableMapping[str, Any], receive: Callable[[], Awaitable[MutableMapping[str, Any]]],
              send: Callable[[MutableMapping[str, Any]], Awaitable[None]]) -> None:
    if scope["type"] != "http":
        return
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    request = _decode(body)
    headers = []
    if "id" not in request:
        await send({"type": "http.response.start", "status": 202, "headers": [(b"content-length", b"0")]})
        await send({"type": "http.response.body", "body": b""})
        return
    if request["method"] == "initialize":
        headers.append((b"mcp-session-id", b"floor"))
        result: dict[str, object] = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                                     "serverInfo": {"name": "floor", "version": "1"}}
    else:
        arguments = request["params"]["arguments"]
        text = "a" * arguments["size"] if request["params"]["name"] == "text" else repr(
            arguments["a"] + arguments["b"])
        result = {"content": [{"type": "text", "text": text}]}
    data = _encode({"jsonrpc": "2.0", "id": request["id"], "result": result})
    if SSE:
        data = b"event: message\ndata: " + data + b"\n\n"
    kind = b"text/event-stream" if SSE else b"application/json"
    headers += [(b"content-type", kind), (b"content-length", str(len(data)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": data})


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
