"""A minimal, fast MCP stdio server for the benchmarks: plain Python, msgspec, no framework.

It answers ``initialize`` (echoing the client's revision when supported, else 2025-11-25),
``tools/list``, ``tools/call`` for ``echo`` (returns ``arguments.message``) and ``big``
(returns a text of ``arguments.size`` bytes), and ``ping``; notifications get no answer.
It reads stdin in large chunks and writes every answer a chunk produced in one
``os.write``, so per request it costs a few microseconds and is never the bottleneck.
Run: ``python bench/fast_server.py``.
"""

from __future__ import annotations

import contextlib
import os
from typing import Final

import msgspec

SUPPORTED: Final = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
PREFERRED: Final = SUPPORTED[0]
READ_SIZE: Final = 64 * 1024  # the pipe capacity: bigger os.read buffers cost an mmap each
# One line of "file content" repeated to build ``big`` results: ASCII, with a newline
# (an escape in JSON) every 64 bytes, like the text tools usually return.
_BIG_LINE: Final = b"def handler(request): return respond(request.id, payload) # ok\n"

TOOLS: Final = [
    {"name": "echo", "description": "Returns its message.",
     "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}},
                     "required": ["message"]}},
    {"name": "big", "description": "Returns a text of `size` bytes.",
     "inputSchema": {"type": "object", "properties": {"size": {"type": "integer"}},
                     "required": ["size"]}},
]


class Arguments(msgspec.Struct):
    """The arguments of both tools (each uses one field)."""

    message: str = ""
    size: int = 0


class CallParams(msgspec.Struct):
    """``tools/call`` params."""

    name: str = ""
    arguments: Arguments = msgspec.field(default_factory=Arguments)


class InitParams(msgspec.Struct, rename="camel"):
    """``initialize`` params (only the revision matters here)."""

    protocol_version: str = PREFERRED


class Message(msgspec.Struct):
    """Any incoming JSON-RPC message; ``params`` is decoded per method."""

    id: int | str | None = None
    method: str = ""
    params: msgspec.Raw = msgspec.Raw(b"{}")


_decode_message: Final = msgspec.json.Decoder(Message).decode
_decode_call: Final = msgspec.json.Decoder(CallParams).decode
_decode_init: Final = msgspec.json.Decoder(InitParams).decode
_encode: Final = msgspec.json.encode
_big_cache: dict[int, bytes] = {}


def big_text(size: int) -> str:
    """The text ``big`` returns for ``size``: exactly ``size`` ASCII bytes."""
    reps, rest = divmod(size, len(_BIG_LINE))
    return (_BIG_LINE * reps + _BIG_LINE[:rest]).decode()


def text_result(text_json: bytes) -> bytes:
    """A ``CallToolResult`` holding one text block, from the text already JSON-encoded."""
    return b'{"content":[{"type":"text","text":' + text_json + b'}],"isError":false}'


def response(request_id: int | str, result: bytes) -> bytes:
    """One response line for ``request_id`` with an encoded ``result``."""
    return b'{"jsonrpc":"2.0","id":' + _encode(request_id) + b',"result":' + result + b"}\n"


def error(request_id: int | str, code: int, message: str) -> bytes:
    """One error response line."""
    return _encode({"jsonrpc": "2.0", "id": request_id,
                    "error": {"code": code, "message": message}}) + b"\n"


def _big_result(size: int) -> bytes:
    cached = _big_cache.get(size)
    if cached is None:
        cached = _big_cache[size] = text_result(_encode(big_text(size)))
    return cached


def _call_tool(request_id: int | str, params: msgspec.Raw) -> bytes:
    call = _decode_call(params)
    if call.name == "echo":
        return response(request_id, text_result(_encode(call.arguments.message)))
    if call.name == "big":
        return response(request_id, _big_result(call.arguments.size))
    return error(request_id, -32602, f"unknown tool: {call.name}")


def _initialize(request_id: int | str, params: msgspec.Raw) -> bytes:
    asked = _decode_init(params).protocol_version
    result = {
        "protocolVersion": asked if asked in SUPPORTED else PREFERRED,
        "capabilities": {"tools": {}},
        "serverInfo": {"name": "fast-server", "version": "1.0.0"},
    }
    return response(request_id, _encode(result))


_EMPTY_RESULT: Final = b"{}"
_TOOLS_RESULT: Final = _encode({"tools": TOOLS})


def handle(line: bytes) -> bytes:
    """The answer to one request line (``b""`` for notifications and garbage)."""
    try:
        msg = _decode_message(line)
        rid = msg.id
        if rid is None:
            return b""
        method = msg.method
        if method == "tools/call":
            return _call_tool(rid, msg.params)
        if method == "ping":
            return response(rid, _EMPTY_RESULT)
        if method == "tools/list":
            return response(rid, _TOOLS_RESULT)
        if method == "initialize":
            return _initialize(rid, msg.params)
        return error(rid, -32601, f"method not found: {method}")
    except msgspec.DecodeError:
        return b""


def _write_all(data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(1, view):]


def serve() -> None:
    """Answer requests on stdin until EOF."""
    pending = b""
    while data := os.read(0, READ_SIZE):
        lines = (pending + data).split(b"\n") if pending else data.split(b"\n")
        pending = lines.pop()
        out = b"".join([handle(line) for line in lines if line])
        if out:
            _write_all(out)


if __name__ == "__main__":
    with contextlib.suppress(BrokenPipeError, KeyboardInterrupt):
        serve()
