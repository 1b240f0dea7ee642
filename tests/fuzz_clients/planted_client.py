"""A tiny stdio MCP client with one planted defect, chosen by the first argument; it starts
the server ``MCP_FUZZ_SERVER_ARGV`` names, initializes, lists tools, calls ``echo``.

Defects: ``utf8`` (an invalid UTF-8 line kills it with an uncaught exception), ``wait`` (no
timeout: it waits for an answer for ever), ``version`` (it goes on after a protocol version
it does not support), ``line`` (no line length limit: it keeps a line that never ends),
``none`` (no defect: timeouts, a line limit, bad lines skipped, versions checked).
Plain Python, no SDK, so each defect is exactly what it says.
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import time

BUG = sys.argv[1] if len(sys.argv) > 1 else "none"
KNOWN = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
MAX_LINE = 1 << 20


class Failed(Exception):
    """The session failed (timeout, bad version, server gone)."""


class Client:
    """Newline-delimited JSON-RPC over a child's stdio."""

    def __init__(self, argv: list[str], timeout: float) -> None:
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert self.proc.stdout is not None
        os.set_blocking(self.proc.stdout.fileno(), False)
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.proc.stdout, selectors.EVENT_READ)
        self.buffer = bytearray()
        self.timeout = timeout
        self.next_id = 0

    def request(self, method: str, params: dict[str, object]) -> dict[str, object]:
        """Send one request and wait for its answer."""
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()
        deadline = time.monotonic() + (1e9 if BUG == "wait" else self.timeout)
        while time.monotonic() < deadline:
            for line in self._lines(deadline):
                answer = self._decode(line)
                if isinstance(answer, dict) and answer.get("id") == self.next_id and "method" not in answer:
                    if "error" in answer:
                        raise Failed(f"{method}: {answer['error']}")
                    result = answer.get("result")
                    return result if isinstance(result, dict) else {}
        raise Failed(f"{method}: no answer within {self.timeout:g} s")

    def _decode(self, line: bytes) -> object:
        if BUG == "utf8":
            return json.loads(line.decode("utf-8"))  # the planted crash: an uncaught UnicodeDecodeError
        try:
            return json.loads(line.decode("utf-8"))
        except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError: a bad line is skipped
            return None

    def _lines(self, deadline: float) -> list[bytes]:
        if not self.selector.select(max(0.0, min(0.1, deadline - time.monotonic()))):
            return []
        assert self.proc.stdout is not None
        chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
        if not chunk:
            raise Failed("the server closed its stdout")
        self.buffer += chunk
        if BUG != "line" and len(self.buffer) > MAX_LINE and b"\n" not in self.buffer:
            raise Failed(f"a line longer than {MAX_LINE} bytes")
        if b"\n" not in chunk:
            return []
        *lines, rest = self.buffer.split(b"\n")
        self.buffer = bytearray(rest)
        return [bytes(line) for line in lines]

    def close(self) -> None:
        """End the server."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.kill()
        self.proc.wait()


def main() -> None:
    """One session's script."""
    argv = json.loads(os.environ["MCP_FUZZ_SERVER_ARGV"])
    client = Client(argv, float(os.environ.get("MCP_FUZZ_CLIENT_TIMEOUT", "5")))
    try:
        info = {"name": f"planted-{BUG}", "version": "1"}
        result = client.request(
            "initialize", {"protocolVersion": KNOWN[0], "capabilities": {}, "clientInfo": info}
        )
        if BUG != "version" and result.get("protocolVersion") not in KNOWN:
            raise Failed(f"unsupported protocol version {result.get('protocolVersion')!r}")
        assert client.proc.stdin is not None
        client.proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        client.proc.stdin.flush()
        client.request("tools/list", {})
        client.request("tools/call", {"name": "echo", "arguments": {"text": "hi"}})
    finally:
        client.close()
    print("ok")


if __name__ == "__main__":
    try:
        main()
    except Failed as exc:
        print(f"error: Failed: {exc}", file=sys.stderr)
        sys.exit(1)
