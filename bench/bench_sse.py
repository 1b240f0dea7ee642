"""Throughput of :class:`mcp_sansio.sse.SseParser` against httpx-sse and a bare split.

Builds a ~50 MB stream of typical MCP events (``event: message``, ``id: <n>``, one
``data:`` line of 200-2000 bytes of JSON) with LF and with CRLF line ends, feeds it in
64 KiB chunks, and prints MB/s for each parser: the best of a few runs, in process CPU
time so that other load on a shared machine skews it less. httpx-sse is driven
the way its ``iter_sse`` drives it: incremental UTF-8 text, ``SSELineDecoder`` lines,
then ``SSEDecoder.decode`` per line. Run: ``python bench/bench_sse.py``.

SseParser hands each event's data over as the bytes that arrived (MCP decodes them as
JSON next), httpx-sse as text. So that this saves no work the consumer then does, a
second table times each parser followed by ``msgspec.json.decode`` of every event's
data, which is what an MCP client does with it.
"""

from __future__ import annotations

import codecs
import importlib
import importlib.util
import json
import random
import sys
import time
import types
from collections.abc import Callable
from functools import partial

import msgspec

from mcp_sansio.sse import SseParser

STREAM_BYTES = 50 * 1000 * 1000
CHUNK_BYTES = 64 * 1024
RUNS = 5
WORDS = (
    *("the", "tool", "result", "file", "line", "value", "error", "returned", "of", "in", "a"),
    *("{", "}", "[1, 2, 3]", "path/to/src/main.py", "42", "true", "null", "naïve", "ok"),
)


def _load_httpx_sse_decoders() -> types.ModuleType:
    """Import ``httpx_sse._decoders``, even when httpx itself is not installed.

    The package ``__init__`` imports httpx, which the decoders do not need, so on
    failure a bare package object pointing at the installed directory stands in.
    """
    try:
        return importlib.import_module("httpx_sse._decoders")
    except ModuleNotFoundError as exc:
        if exc.name != "httpx":
            raise
    spec = importlib.util.find_spec("httpx_sse")
    if spec is None or spec.submodule_search_locations is None:
        raise ModuleNotFoundError("httpx_sse is not installed", name="httpx_sse")
    package = types.ModuleType("httpx_sse")
    package.__path__ = list(spec.submodule_search_locations)
    sys.modules["httpx_sse"] = package
    return importlib.import_module("httpx_sse._decoders")


def build_stream(line_end: bytes) -> tuple[bytes, int]:
    """A stream of about ``STREAM_BYTES`` bytes and the number of events in it."""
    rng = random.Random(20250618)
    parts: list[bytes] = []
    total = 0
    n = 0
    while total < STREAM_BYTES:
        n += 1
        text = " ".join(rng.choices(WORDS, k=rng.randint(25, 330)))
        payload = json.dumps(
            {"jsonrpc": "2.0", "id": n, "result": {"content": [{"type": "text", "text": text}]}},
            ensure_ascii=False,
        ).encode()
        event = b"".join(
            (b"event: message", line_end, b"id: %d" % n, line_end, b"data: ", payload, line_end, line_end)
        )
        parts.append(event)
        total += len(event)
    return b"".join(parts), n


def chunks_of(stream: bytes) -> list[bytes]:
    """``stream`` cut into network-sized reads."""
    return [stream[i : i + CHUNK_BYTES] for i in range(0, len(stream), CHUNK_BYTES)]


def parse_sansio(chunks: list[bytes], decode_json: bool = False) -> int:
    """Events found by :class:`SseParser` (each one's data decoded as JSON if asked)."""
    parser = SseParser()
    count = 0
    for chunk in chunks:
        events = parser.feed(chunk)
        if decode_json:
            for event in events:
                msgspec.json.decode(event.data)
        count += len(events)
    return count + len(parser.close())


def parse_httpx_sse(chunks: list[bytes], decode_json: bool = False) -> int:
    """Events found by httpx-sse, driven as ``EventSource.iter_sse`` drives it."""
    decoders = _load_httpx_sse_decoders()
    text_decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    line_decoder = decoders.SSELineDecoder()
    sse_decoder = decoders.SSEDecoder()
    count = 0

    def take(line: str) -> None:
        nonlocal count
        event = sse_decoder.decode(line.rstrip("\n"))
        if event is not None:
            count += 1
            if decode_json:
                msgspec.json.decode(event.data)

    for chunk in chunks:
        text = text_decoder.decode(chunk)
        if not text:
            continue
        for line in line_decoder.decode(text):
            take(line)
    for line in line_decoder.flush():
        take(line)
    return count


def split_only(chunks: list[bytes]) -> int:
    """A floor: split each chunk on LF and count the empty pieces; no parsing at all."""
    return sum(chunk.split(b"\n").count(b"") for chunk in chunks)


def best_rate(parse: Callable[[list[bytes]], int], chunks: list[bytes], size: int) -> float:
    """The best throughput of ``parse`` over ``RUNS`` runs, in MB/s."""
    best = float("inf")
    for _ in range(RUNS):
        start = time.process_time()
        parse(chunks)
        best = min(best, time.process_time() - start)
    return size / best / 1e6


def main() -> None:
    """Run every variant and print the table."""
    print(f"Python {sys.version.split()[0]}, {CHUNK_BYTES // 1024} KiB chunks, best of {RUNS}")
    for label, line_end in (("LF", b"\n"), ("CRLF", b"\r\n")):
        stream, events = build_stream(line_end)
        chunks = chunks_of(stream)
        for parse in (parse_sansio, parse_httpx_sse):
            found = parse(chunks)
            if found != events:
                raise SystemExit(f"{parse.__name__} found {found} events, expected {events}")
        ours = best_rate(parse_sansio, chunks, len(stream))
        theirs = best_rate(parse_httpx_sse, chunks, len(stream))
        floor = best_rate(split_only, chunks, len(stream))
        ours_json = best_rate(partial(parse_sansio, decode_json=True), chunks, len(stream))
        theirs_json = best_rate(partial(parse_httpx_sse, decode_json=True), chunks, len(stream))
        print(
            f"{label:>4} {len(stream) / 1e6:.0f} MB, {events} events: "
            f"SseParser {ours:7.1f} MB/s | httpx-sse {theirs:6.1f} MB/s | "
            f"bytes.split {floor:7.1f} MB/s | ratio {ours / theirs:.2f}x"
        )
        print(
            f"{'':>4} + msgspec.json.decode of each event's data: "
            f"SseParser {ours_json:7.1f} MB/s | httpx-sse {theirs_json:6.1f} MB/s | "
            f"ratio {ours_json / theirs_json:.2f}x"
        )


if __name__ == "__main__":
    main()
