"""Decode cost per response message, against raw ``msgspec.json.decode`` of the same bytes.

``PYTHONPATH=.:drivers python bench/stdio_decode.py IMPL PLAN_JSON`` prints ``{"<size>_us": ...}``: the time
per message of the median batch. Messages are ``tools/call`` responses as ``fast_server.py``
writes them, one text block of each size; they are built untimed, in batches of 32.

- ``raw``: ``msgspec.json.decode(line)`` into dicts, the reference.
- ``floor``: the floors' one typed msgspec pass.
- ``two-stage``: the core's two decodes alone, the envelope (``jsonrpc.decode``, the
  result kept as ``Raw``) and then that ``Raw`` as a ``CallToolResult``: the general path,
  without framing, request table or event.
- ``core``: our ``StdioClient``, ``receive_data(line)`` + ``next_event()``, with the 32
  requests issued (untimed) beforehand so each response matches a pending request.
- ``sdk-transport``: what the SDK's stdio transport does per line (``_parse_line``).
- ``sdk-full``: that, plus the result validation its ``ClientSession`` does.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Callable
from typing import Final, TypedDict, cast

from msgspec.json import encode

from bench.fast_server import big_text, response, text_result

BATCH: Final = 32
# Message kinds: the echo reply of the call workloads and a 64 KiB text.
SIZES: Final = {"small": len("hello world"), "64k": 64 * 1024}

# Decodes one batch of lines; called with the lines and the ids they answer.
BatchFn = Callable[[list[bytes], range], None]
Prepare = Callable[[range], None]


class DecodePlan(TypedDict):
    """Messages per round for each size, and how many rounds."""

    messages: dict[str, int]
    rounds: int


def _lines(ids: range, text: str) -> list[bytes]:
    result = text_result(encode(text))
    return [response(rid, result) for rid in ids]


def _raw() -> tuple[Prepare, BatchFn]:
    from msgspec.json import decode

    def batch(lines: list[bytes], ids: range) -> None:
        for line in lines:
            decode(line)

    return _nothing, batch


def _floor() -> tuple[Prepare, BatchFn]:
    from bench.stdio_floors import decode_response

    def batch(lines: list[bytes], ids: range) -> None:
        for line in lines:
            decode_response(line)

    return _nothing, batch


def _two_stage() -> tuple[Prepare, BatchFn]:
    from msgspec.json import Decoder

    from mcp_sansio import jsonrpc
    from mcp_sansio.types import CallToolResult

    decode_envelope, decode_result = jsonrpc.decode, Decoder(CallToolResult).decode

    def batch(lines: list[bytes], ids: range) -> None:
        for line in lines:  # each line is one response: an envelope whose result is a Raw
            # No narrowing in the timed loop: every line is known to be one response with a result.
            decode_result(decode_envelope(line).result)  # type: ignore[union-attr,arg-type]

    return _nothing, batch


def _core() -> tuple[Prepare, BatchFn]:
    from mcp_sansio import ResponseReceived, StdioClient

    core = StdioClient()
    core.initialize(now=0.0)
    core.data_to_send()
    init = encode({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                   "serverInfo": {"name": "fast-server", "version": "1"}})
    core.receive_data(response(1, init), 0.0)
    while core.next_event() is not None:
        pass
    receive, next_event, call_tool = core.receive_data, core.next_event, core.call_tool
    args: dict[str, object] = {"message": "hello world"}

    def prepare(ids: range) -> None:
        for rid in ids:
            if call_tool("echo", args, now=0.0) != rid:
                raise RuntimeError("unexpected request id")
        core.data_to_send()

    def batch(lines: list[bytes], ids: range) -> None:
        event = None
        for line in lines:
            receive(line, 0.0)
            event = next_event()
        if type(event) is not ResponseReceived:
            raise RuntimeError(f"the core answered {event!r}")

    return prepare, batch


def _sdk(full: bool) -> tuple[Prepare, BatchFn]:
    import mcp_types
    from mcp_types.methods import validate_server_result
    from pydantic import TypeAdapter

    parse = mcp_types.jsonrpc_message_adapter.validate_json
    result_adapter = TypeAdapter(mcp_types.CallToolResult | mcp_types.InputRequiredResult)
    validate_result = result_adapter.validate_python

    def transport(lines: list[bytes], ids: range) -> None:
        for line in lines:
            parse(line.decode().rstrip("\n"), by_name=False)

    def session(lines: list[bytes], ids: range) -> None:
        for line in lines:
            message = cast(mcp_types.JSONRPCResponse, parse(line.decode().rstrip("\n"), by_name=False))
            raw = message.result
            validate_server_result("tools/call", "2025-11-25", raw)
            validate_result(raw, by_name=False)

    return _nothing, session if full else transport


def _nothing(ids: range) -> None:
    pass


IMPLS: Final[dict[str, Callable[[], tuple[Prepare, BatchFn]]]] = {
    "raw": _raw,
    "floor": _floor,
    "two-stage": _two_stage,
    "core": _core,
    "sdk-transport": lambda: _sdk(full=False),
    "sdk-full": lambda: _sdk(full=True),
}


def measure(impl: str, plan: DecodePlan) -> dict[str, float]:
    """Microseconds per message of ``impl`` for each size: the median batch of all rounds
    (a batch is short, so preemption by other processes spoils few of them)."""
    prepare, batch = IMPLS[impl]()
    next_id = 2  # 1 was initialize
    out: dict[str, float] = {}
    for size_name, size in SIZES.items():
        text = big_text(size) if size > 100 else "hello world"
        batches = plan["messages"][size_name] // BATCH
        times: list[float] = []
        for round_no in range(plan["rounds"] + 1):  # round 0 warms up
            for _ in range(batches):
                ids = range(next_id, next_id + BATCH)
                next_id += BATCH
                lines = _lines(ids, text)
                prepare(ids)
                t0 = time.perf_counter()
                batch(lines, ids)
                if round_no:
                    times.append(time.perf_counter() - t0)
        out[f"{size_name}_us"] = statistics.median(times) / BATCH * 1e6
    return out


if __name__ == "__main__":
    print(json.dumps(measure(sys.argv[1], cast(DecodePlan, json.loads(sys.argv[2])))))
