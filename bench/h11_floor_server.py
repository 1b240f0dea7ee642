"""The floor of the HTTP server benchmark: a bare h11 server doing the same job with no MCP
library (asyncio protocol, h11 parsing and writing, msgspec decoding and encoding).

``python bench/h11_floor_server.py PORT [json|sse]``: ``initialize`` is answered with a
session id, notifications with 202, ``tools/call`` of ``add`` with the sum as text (and of
``text`` with ``size`` bytes of text), as JSON or as one SSE event. What ``bench_server.py``
measures against it is the cost MCP adds.
"""

from __future__ import annotations

import asyncio
import sys

import h11
import msgspec


class _Message(msgspec.Struct):
    method: str = ""
    id: int | str | None = None
    params: dict[str, object] = {}


_decode = msgspec.json.Decoder(_Message).decode
_encode = msgspec.json.Encoder().encode


class _Floor(asyncio.Protocol):
    def __init__(self, sse: bool) -> None:
        self.sse = sse
        self.conn = h11.Connection(h11.SERVER)
        self.body = bytearray()
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.conn.receive_data(data)
        while True:
            event = self.conn.next_event()
            if event is h11.NEED_DATA or event is h11.PAUSED:
                return
            if isinstance(event, h11.Data):
                self.body += event.data
            elif isinstance(event, h11.EndOfMessage):
                self.answer(_decode(bytes(self.body)))
                self.body.clear()
                self.conn.start_next_cycle()

    def answer(self, message: _Message) -> None:
        headers: list[tuple[str, str]] = []
        if message.id is None:
            self.write(202, headers, b"")
            return
        if message.method == "initialize":
            headers.append(("mcp-session-id", "floor"))
            result: dict[str, object] = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                                         "serverInfo": {"name": "floor", "version": "1"}}
        else:
            arguments = message.params.get("arguments")
            assert isinstance(arguments, dict)
            text = "a" * arguments["size"] if message.params.get("name") == "text" else repr(
                arguments["a"] + arguments["b"])
            result = {"content": [{"type": "text", "text": text}]}
        body = _encode({"jsonrpc": "2.0", "id": message.id, "result": result})
        if self.sse:
            self.write(200, [*headers, ("content-type", "text/event-stream")],
                       b"event: message\ndata: " + body + b"\n\n")
        else:
            self.write(200, [*headers, ("content-type", "application/json")], body)

    def write(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
        assert self.transport is not None
        headers.append(("content-length", str(len(body))))
        out = self.conn.send(h11.Response(status_code=status, headers=headers)) or b""
        if body:
            out += self.conn.send(h11.Data(data=body)) or b""
        out += self.conn.send(h11.EndOfMessage()) or b""
        self.transport.write(out)


async def main(port: int, sse: bool) -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: _Floor(sse), "127.0.0.1", port)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), len(sys.argv) > 2 and sys.argv[2] == "sse"))
