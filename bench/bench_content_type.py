"""Decode cost of tagged content blocks: does the ``type`` attribute slow decoding?

``PYTHONPATH=. python bench/bench_content_type.py [--rounds N]`` decodes a ``CallToolResult``
holding every kind of content block (text, image, audio, resource link, embedded resource;
64 blocks), and a ``CreateMessageResult``-shaped list of sampling blocks, with the core's
module-level decoders, and prints the median time per message over ``N`` rounds (and the
time of ``block.type`` per block, read back). Run it on two commits to compare.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Final

import msgspec

from mcp_sansio.types import CallToolResult, SamplingContent

BLOCKS: Final = [
    {"type": "text", "text": "hello world"},
    {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
    {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"},
    {"type": "resource_link", "uri": "file:///a.txt", "name": "a", "mimeType": "text/plain"},
    {"type": "resource", "resource": {"uri": "file:///b.txt", "text": "b", "mimeType": "text/plain"}},
]
SAMPLING: Final = [
    {"type": "text", "text": "hi"},
    {"type": "tool_use", "id": "u1", "name": "echo", "input": {"m": 1}},
    {"type": "tool_result", "toolUseId": "u1", "content": [{"type": "text", "text": "1"}]},
]
BATCH: Final = 200


def _median_us(decode: msgspec.json.Decoder[object], message: bytes, rounds: int) -> float:
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(BATCH):
            decode.decode(message)
        samples.append((time.perf_counter() - start) / BATCH * 1e6)
    return statistics.median(samples)


def main() -> None:
    """Print the median decode time per message for each workload."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=101)
    rounds = parser.parse_args().rounds
    tool_result = msgspec.json.encode({"content": BLOCKS * 13})
    sampling = msgspec.json.encode(SAMPLING * 20)
    result_decoder: msgspec.json.Decoder[object] = msgspec.json.Decoder(CallToolResult)
    sampling_decoder: msgspec.json.Decoder[object] = msgspec.json.Decoder(list[SamplingContent])
    print(f"CallToolResult, 65 blocks:     {_median_us(result_decoder, tool_result, rounds):8.2f} us")
    print(f"sampling blocks, 60 blocks:    {_median_us(sampling_decoder, sampling, rounds):8.2f} us")
    blocks = msgspec.json.decode(tool_result, type=CallToolResult).content
    start = time.perf_counter()
    for _ in range(BATCH):
        for block in blocks:
            getattr(block, "type", None)
    per_block = (time.perf_counter() - start) / BATCH / len(blocks) * 1e9
    present = "present" if hasattr(blocks[0], "type") else "absent"
    print(f"block.type read:               {per_block:8.1f} ns ({present})")


if __name__ == "__main__":
    main()
