"""The two floors of the stdio benchmark: the least a client can do per call.

The asyncio floor is a bare ``SubprocessProtocol`` that writes each request line and
resolves a future by id; the blocking floor is ``os.write`` + ``selectors`` + ``os.read``.
Both frame lines and decode each response with one typed msgspec pass, and nothing else:
no validation, no timeouts, no notifications, no shutdown ladder.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import selectors
import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Final, cast

import msgspec

# The pipe's capacity: asking os.read for more allocates (and on Linux maps and unmaps)
# a bigger buffer on every read, which costs more than the extra reads it saves.
READ_SIZE: Final = 64 * 1024

Call = Callable[[str, dict[str, object]], Awaitable[str]]
SyncCall = Callable[[str, dict[str, object]], str]


class _Text(msgspec.Struct):
    text: str = ""


class _Result(msgspec.Struct):
    content: list[_Text] = []


class Response(msgspec.Struct):
    """A response, decoded in one typed pass (the bench server sends no errors)."""

    id: int
    result: _Result


class _Request(msgspec.Struct):
    jsonrpc: str
    id: int
    method: str
    params: dict[str, object]


decode_response: Final = msgspec.json.Decoder(Response).decode
_encode: Final = msgspec.json.Encoder().encode
_INIT_PARAMS: Final[dict[str, object]] = {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "floor", "version": "0"},
}
_INITIALIZED: Final = b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'


class LineSplitter:
    """Newline framing: whole lines out, a partial one held as a list of chunks (joined
    once, so a 10 MB line costs one copy rather than one per read)."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []

    def feed(self, data: bytes) -> list[bytes]:
        """The lines ``data`` completed (possibly including empty ones)."""
        if b"\n" not in data:
            self._parts.append(data)
            return []
        if self._parts:
            self._parts.append(data)
            data = b"".join(self._parts)
            self._parts.clear()
        lines = data.split(b"\n")
        rest = lines.pop()
        if rest:
            self._parts.append(rest)
        return lines


def _request_line(rid: int, method: str, params: dict[str, object]) -> bytes:
    return _encode(_Request("2.0", rid, method, params)) + b"\n"


class _FloorProtocol(asyncio.SubprocessProtocol):
    """Resolves the future of each response's id straight from ``pipe_data_received``."""

    def __init__(self, exited: asyncio.Future[None]) -> None:
        self.waiters: dict[int, asyncio.Future[Response]] = {}
        self._lines = LineSplitter()
        self._exited = exited

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        if fd != 1:
            return
        waiters = self.waiters
        for line in self._lines.feed(data):
            if line:
                response = decode_response(line)
                waiters.pop(response.id).set_result(response)

    def process_exited(self) -> None:
        self._exited.set_result(None)


@contextlib.asynccontextmanager
async def floor_client(command: str, args: list[str]) -> AsyncIterator[Call]:
    """Start the server and yield ``call(name, arguments) -> text`` over the asyncio floor."""
    loop = asyncio.get_running_loop()
    exited: asyncio.Future[None] = loop.create_future()
    transport, protocol = await loop.subprocess_exec(
        lambda: _FloorProtocol(exited), command, *args,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=None,
    )
    stdin = cast(asyncio.WriteTransport, transport.get_pipe_transport(0))
    waiters = protocol.waiters
    next_id = 0

    async def request(method: str, params: dict[str, object]) -> Response:
        nonlocal next_id
        next_id += 1
        future: asyncio.Future[Response] = loop.create_future()
        waiters[next_id] = future
        stdin.write(_request_line(next_id, method, params))
        return await future

    async def call(name: str, arguments: dict[str, object]) -> str:
        response = await request("tools/call", {"name": name, "arguments": arguments})
        return response.result.content[0].text

    try:
        await request("initialize", _INIT_PARAMS)
        stdin.write(_INITIALIZED)
        yield call
    finally:
        stdin.close()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(exited, 5)
        transport.close()


@contextlib.contextmanager
def blocking_floor_client(command: str, args: list[str]) -> Iterator[SyncCall]:
    """Start the server and yield a blocking ``call(name, arguments) -> text``."""
    proc = subprocess.Popen([command, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    stdin, stdout = proc.stdin, proc.stdout
    if stdin is None or stdout is None:
        raise RuntimeError("Popen gave no pipes")
    in_fd, out_fd = stdin.fileno(), stdout.fileno()
    selector = selectors.DefaultSelector()
    selector.register(out_fd, selectors.EVENT_READ)
    lines = LineSplitter()
    answers: dict[int, Response] = {}
    next_id = 0

    def request(method: str, params: dict[str, object]) -> Response:
        nonlocal next_id
        next_id += 1
        rid = next_id
        data = memoryview(_request_line(rid, method, params))
        while data:
            data = data[os.write(in_fd, data):]
        while rid not in answers:
            selector.select()
            chunk = os.read(out_fd, READ_SIZE)
            if not chunk:
                raise ConnectionError("the server closed its stdout")
            for line in lines.feed(chunk):
                if line:
                    response = decode_response(line)
                    answers[response.id] = response
        return answers.pop(rid)

    def call(name: str, arguments: dict[str, object]) -> str:
        return request("tools/call", {"name": name, "arguments": arguments}).result.content[0].text

    try:
        request("initialize", _INIT_PARAMS)
        os.write(in_fd, _INITIALIZED)
        yield call
    finally:
        stdin.close()
        proc.wait(5)
        selector.close()
        stdout.close()
