"""A hand-written stdio MCP server that misbehaves on purpose, one way per mode.

It speaks newline-delimited JSON-RPC without the SDK, answers ``initialize``
correctly (protocol ``2025-11-25``, capabilities ``{"tools": {}}``), lists one
tool, ``poke``, and answers ``ping``. The misbehaviour, mostly on ``tools/call``:

- ``banner``: non-JSON lines at start-up and before every message it sends.
- ``bad-utf8``: a line of invalid UTF-8 before the answer.
- ``long-line``: the answer is one line of over 40 MiB.
- ``unknown-id``: a response to an id never used (999999999), then the answer.
- ``die-mid-response``: half the answer line, ``fatal: boom`` on stderr, exit 3.
- ``stall``: never answers.
- ``ignore-sigterm``: ignores SIGTERM and SIGINT and keeps running after stdin EOF.
- ``flood-stderr``: starts writing 200 MiB to stderr (64 KiB writes, in a thread),
  then answers; it never waits for the flood, so a client that does not drain
  stderr still gets its answer.
- ``flood-stderr-unbroken``: the same, 50 MiB with no newline at all.
- ``slow-start SECONDS``: sleeps that long before answering ``initialize``.
- ``progress SECONDS``: reports progress on ``tools/call`` every 50 ms and answers after
  SECONDS (``inf``: never).
- ``deep-answer``: the answer to ``tools/call`` nests 100,000 arrays deep (valid JSON that
  no decoder with a depth limit reads).
- ``duplicates``: lists ``poke`` twice (the second described otherwise) and ``other``
  once, and declares prompts: ``greet`` twice.
- ``notify N``: answers ``tools/call`` after N ``notifications/message`` (``data`` 0 to N-1),
  written at once.
- ``escapes``: every string it supplies carries terminal control sequences (see
  ``ESCAPES``): names, descriptions, instructions, a resource, a prompt, a log message and
  the result of ``poke``, its stderr; ``prompts/list`` fails; ``tools/call`` of ``fail``
  answers with an error whose message has them too.
- ``crash-after N``: answers N requests (``initialize`` included); the next
  request makes it exit with status 1, unanswered.

In every mode each ``notifications/cancelled`` received is logged to stderr
and appended as a JSON line to the file named by ``HOSTILE_LOG``, if set.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time

PROTOCOL_VERSION = "2025-11-25"
UNKNOWN_ID = 999_999_999
LONG_LINE_BYTES = 40 * 2**20
FLOOD_BYTES = 200 * 2**20
UNBROKEN_FLOOD_BYTES = 50 * 2**20
FLOOD_CHUNK_BYTES = 64 * 2**10
METHOD_NOT_FOUND = -32601

Message = dict[str, object]
# Clear the screen, retitle the window, erase with a carriage return, a NUL, a bell, a C1
# CSI, a right-to-left override, and a newline that would start a fake table row.
ESCAPES = "\x1b[2J\x1b]0;owned\x07\rX\x00\x9b31m\u202e\nfake  row"


def write(data: bytes) -> None:
    """Write ``data`` to stdout at once."""
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


def encode(message: Message) -> bytes:
    """Frame ``message`` as one JSON line."""
    return json.dumps(message).encode() + b"\n"


def text_result(text: str) -> Message:
    """A ``CallToolResult`` holding one text block."""
    return {"content": [{"type": "text", "text": text}], "isError": False}


def flood_stderr(total: int = FLOOD_BYTES, end: bytes = b"\n") -> None:
    """Write ``total`` bytes to fd 2 in lines ending with ``end`` (``b"e"``: no line ends),
    with raw writes (no Python lock held while blocked)."""
    chunk = b"e" * (FLOOD_CHUNK_BYTES - 1) + end
    for _ in range(total // FLOOD_CHUNK_BYTES):
        view = memoryview(chunk)
        while view:
            view = view[os.write(2, view) :]


class HostileServer:
    """Answers requests from stdin, misbehaving as ``mode`` says."""

    def __init__(self, mode: str, seconds: float = 0.0, requests: int = 0) -> None:
        self.mode = mode
        self.seconds = seconds
        self.max_requests = requests
        self.requests_seen = 0
        self.last_params: object = None

    def run(self) -> None:
        """Serve until stdin reaches EOF (or forever, in ``ignore-sigterm``)."""
        if self.mode == "banner":
            write(b"hostile MCP server 1.0 starting\n*** this line is not JSON ***\n")
        if self.mode == "ignore-sigterm":
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        for line in sys.stdin.buffer:
            try:
                message = json.loads(line)
            except ValueError:
                print(f"hostile: ignoring a non-JSON line {line[:80]!r}", file=sys.stderr)
                continue
            if isinstance(message, dict):
                self.handle(message)
        while self.mode == "ignore-sigterm":
            time.sleep(3600)

    def handle(self, message: Message) -> None:
        """Dispatch one message from the client."""
        method = message.get("method")
        if not isinstance(method, str):
            return  # a response to something we never sent: ignore it
        if "id" not in message:
            if method == "notifications/cancelled":
                self.log_cancellation(message)
            return
        request_id = message["id"]
        self.last_params = message.get("params")
        self.requests_seen += 1
        if self.mode == "crash-after" and self.requests_seen > self.max_requests:
            print(f"hostile: crashing after {self.max_requests} requests", file=sys.stderr)
            sys.exit(1)
        if self.mode == "escapes" and self.escapes(request_id, method):
            return
        if method == "initialize":
            if self.mode == "slow-start":
                time.sleep(self.seconds)
            capabilities: Message = {"tools": {}}
            if self.mode == "duplicates":
                capabilities["prompts"] = {}
            self.reply(
                request_id,
                {
                    "protocolVersion": PROTOCOL_VERSION,
                    "capabilities": capabilities,
                    "serverInfo": {"name": "hostile", "version": "1.0"},
                },
            )
        elif method == "tools/list":
            tool = {
                "name": "poke",
                "description": "Provoke the server",
                "inputSchema": {"type": "object"},
            }
            tools = [tool]
            if self.mode == "duplicates":
                tools = [tool, {**tool, "description": "the second poke"}, {**tool, "name": "other"}]
            self.reply(request_id, {"tools": tools})
        elif method == "prompts/list" and self.mode == "duplicates":
            prompt = {"name": "greet", "description": "first"}
            self.reply(request_id, {"prompts": [prompt, {**prompt, "description": "second"}]})
        elif method == "tools/call":
            self.call_tool(request_id)
        elif method == "ping":
            self.reply(request_id, {})
        else:
            error = {"code": METHOD_NOT_FOUND, "message": f"method not found: {method}"}
            self.send({"jsonrpc": "2.0", "id": request_id, "error": error})

    def call_tool(self, request_id: object) -> None:
        """Answer ``tools/call``, misbehaving as the mode says."""
        match self.mode:
            case "stall":
                return
            case "progress":
                threading.Thread(target=self.progress_then_answer, args=(request_id,), daemon=True).start()
                return
            case "bad-utf8":
                write(b"\xff\xfe not UTF-8 \xc3\x28\n")
            case "unknown-id":
                self.reply(UNKNOWN_ID, text_result("nobody asked"))
            case "notify":
                write(b"".join(encode({"jsonrpc": "2.0", "method": "notifications/message",
                                       "params": {"level": "info", "data": index}})
                               for index in range(self.max_requests)))
            case "deep-answer":
                deep = "[" * 100_000 + "]" * 100_000
                write(f'{{"jsonrpc":"2.0","id":{json.dumps(request_id)},"result":{deep}}}\n'.encode())
                return
            case "long-line":
                self.reply(request_id, text_result("x" * LONG_LINE_BYTES))
                return
            case "die-mid-response":
                line = encode({"jsonrpc": "2.0", "id": request_id, "result": text_result("ok")})
                write(line[: len(line) // 2])
                print("fatal: boom", file=sys.stderr, flush=True)
                sys.exit(3)
            case "flood-stderr":
                threading.Thread(target=flood_stderr, daemon=True).start()
            case "flood-stderr-unbroken":
                threading.Thread(target=flood_stderr, args=(UNBROKEN_FLOOD_BYTES, b"e"), daemon=True).start()
        self.reply(request_id, text_result("ok"))

    def escapes(self, request_id: object, method: str) -> bool:
        """Answer ``method`` in ``escapes`` mode; ``False`` leaves it to the usual answers."""
        if method == "initialize":
            print(f"stderr {ESCAPES}", file=sys.stderr, flush=True)
            self.reply(request_id, {
                "protocolVersion": PROTOCOL_VERSION, "instructions": f"instructions {ESCAPES}",
                "capabilities": {"tools": {}, "resources": {}, "prompts": {}, "logging": {}},
                "serverInfo": {"name": f"name {ESCAPES}", "title": f"title {ESCAPES}", "version": ESCAPES}})
        elif method == "tools/list":
            self.reply(request_id, {"tools": [
                {"name": "poke", "description": f"description {ESCAPES}", "inputSchema": {"type": "object"}},
                {"name": f"tool {ESCAPES}", "inputSchema": {"type": "object"}}]})
        elif method == "resources/list":
            self.reply(request_id, {"resources": [{"uri": f"file:///{ESCAPES}", "name": f"res {ESCAPES}"}]})
        elif method == "resources/templates/list":
            self.reply(request_id, {"resourceTemplates": [{"uriTemplate": f"t://{{x}}{ESCAPES}",
                                                           "name": f"template {ESCAPES}"}]})
        elif method == "resources/read":
            self.reply(request_id, {"contents": [{"uri": "file:///a", "text": f"text {ESCAPES}"},
                                                 {"uri": "file:///b", "mimeType": f"mime {ESCAPES}",
                                                  "blob": "AAAA"}]})
        elif method == "prompts/list":
            self.send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32603,
                                                                     "message": f"prompts broke {ESCAPES}"}})
        elif method == "tools/call" and "fail" in json.dumps(self.last_params):
            self.send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32000,
                                                                     "message": f"failed {ESCAPES}"}})
        elif method == "tools/call":
            self.send({"jsonrpc": "2.0", "method": "notifications/message",
                       "params": {"level": "error", "logger": f"logger {ESCAPES}", "data": f"log {ESCAPES}"}})
            self.reply(request_id, text_result(f"result {ESCAPES}"))
        elif method == "logging/setLevel":
            self.reply(request_id, {})
        else:
            return False
        return True

    def progress_then_answer(self, request_id: object) -> None:
        """Report progress every 50 ms; answer once ``seconds`` have passed."""
        start = time.monotonic()
        step = 0
        try:
            while time.monotonic() - start < self.seconds:
                step += 1
                self.send({"jsonrpc": "2.0", "method": "notifications/progress",
                           "params": {"progressToken": request_id, "progress": step}})
                time.sleep(0.05)
            self.reply(request_id, text_result("ok"))
        except OSError:  # the client went away
            return

    def reply(self, request_id: object, result: Message) -> None:
        """Send a success response."""
        self.send({"jsonrpc": "2.0", "id": request_id, "result": result})

    def send(self, message: Message) -> None:
        """Send one message, after a banner line in ``banner`` mode."""
        if self.mode == "banner":
            write(b"[hostile] about to answer\n")
        write(encode(message))

    def log_cancellation(self, message: Message) -> None:
        """Record a ``notifications/cancelled`` on stderr and in ``$HOSTILE_LOG``."""
        record = json.dumps(message.get("params"))
        print(f"hostile: cancelled {record}", file=sys.stderr, flush=True)
        if log_path := os.environ.get("HOSTILE_LOG"):
            with open(log_path, "a", encoding="utf-8") as log:
                log.write(record + "\n")


def parse_args(argv: list[str]) -> HostileServer:
    """Build the server the command line asks for."""
    parser = argparse.ArgumentParser(description="A stdio MCP server that misbehaves on purpose.")
    modes = parser.add_subparsers(dest="mode", required=True)
    for mode in (
        "banner",
        "bad-utf8",
        "long-line",
        "unknown-id",
        "die-mid-response",
        "stall",
        "ignore-sigterm",
        "flood-stderr",
        "flood-stderr-unbroken",
        "deep-answer",
        "duplicates",
        "escapes",
    ):
        modes.add_parser(mode)
    modes.add_parser("slow-start").add_argument("seconds", type=float)
    modes.add_parser("progress").add_argument("seconds", type=float)
    modes.add_parser("crash-after").add_argument("requests", type=int)
    modes.add_parser("notify").add_argument("requests", type=int)
    options = parser.parse_args(argv)
    return HostileServer(
        options.mode,
        seconds=getattr(options, "seconds", 0.0),
        requests=getattr(options, "requests", 0),
    )


def main() -> None:
    """Run the server; exit quietly if the client hangs up while we write."""
    server = parse_args(sys.argv[1:])
    try:
        server.run()
    except BrokenPipeError:
        # Python would complain again when flushing stdout at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)


if __name__ == "__main__":
    main()
