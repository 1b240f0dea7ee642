"""The floor of the server benchmark over stdio: a hand-written loop that decodes each line
with msgspec and answers it (``initialize`` and ``tools/call add``), and nothing else: what
the same work costs with no MCP library at all."""

from __future__ import annotations

import os
import sys

import msgspec


class _Params(msgspec.Struct):
    arguments: dict[str, float] = {}


class _Request(msgspec.Struct):
    method: str
    id: int | str | None = None
    params: _Params | None = None


def main() -> None:
    decode = msgspec.json.Decoder(_Request).decode
    encode = msgspec.json.encode
    fd_in, fd_out = sys.stdin.fileno(), sys.stdout.fileno()
    buffer = b""
    while chunk := os.read(fd_in, 65536):
        *lines, buffer = (buffer + chunk).split(b"\n")
        out = []
        for line in lines:
            request = decode(line)
            if request.id is None:
                continue
            if request.method == "initialize":
                result: object = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                                  "serverInfo": {"name": "floor", "version": "1"}}
            else:
                args = request.params.arguments if request.params else {}
                result = {"content": [{"type": "text", "text": repr(args["a"] + args["b"])}]}
            out.append(encode({"jsonrpc": "2.0", "id": request.id, "result": result}) + b"\n")
        os.write(fd_out, b"".join(out))


if __name__ == "__main__":
    main()
