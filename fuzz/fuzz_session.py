"""Fuzz target for the stdio client (``StdioClient``: framing, envelopes and the session).

The first byte sets the scene: bit 0 skips non-JSON lines (else they fail the
connection), bit 1 negotiates 2025-03-26 (batches allowed) instead of 2025-11-25, bit 2
leaves the handshake to the input (else it is done and requests 2 to 4 are pending),
bit 3 ends the stream with EOF, and the upper bits pick ``max_line_bytes``. The rest is
what the server writes, fed whole and then byte by byte: both runs must give the same
events, actions, output and state. ``receive_data`` and ``handle_timeout`` document no
exceptions, so anything raised is a bug.

Run with atheris: ``python fuzz/fuzz_session.py fuzz/corpus/session``.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable

from mcp_sansio import ClientConfig, StdioClient
from mcp_sansio.types import ClientCapabilities, RootsCapability

_HANDSHAKE = (
    b'{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"%s","serverInfo":{"name":"f","version":"1"},'
    b'"capabilities":{"tools":{},"resources":{"subscribe":true},"prompts":{},"logging":{}}}}\n'
)
_CAPABILITIES = ClientCapabilities(roots=RootsCapability(), sampling={}, elicitation={})


def _run(flags: int, stream: bytes, chunks: Iterable[bytes]) -> tuple[object, ...]:
    version = b"2025-03-26" if flags & 2 else b"2025-11-25"
    config = ClientConfig(skip_non_json_lines=bool(flags & 1), max_line_bytes=256 + (flags >> 4) * 4096)
    client = StdioClient(config, _CAPABILITIES)
    client.initialize(now=0.0)
    if not flags & 4:
        client.receive_data(_HANDSHAKE % version, 0.0)
        client.call_tool("t", {"a": 1}, now=0.0)  # id 2
        client.list_tools(now=0.0)  # id 3, following pages
        client.ping(now=0.0, timeout=5.0)  # id 4
    events, actions, sent = [], [], [client.data_to_send()]
    for chunk in chunks:
        client.receive_data(chunk, 1.0)
        while (event := client.next_event()) is not None:
            events.append(event)
        while (action := client.next_action()) is not None:
            actions.append(action)
        sent.append(client.data_to_send())
    if flags & 8:
        client.receive_data(b"", 1.0)
    for now in (4.0, 6.0, 31.0, 100.0, 200.0):
        client.handle_timeout(now)
    while (event := client.next_event()) is not None:
        events.append(event)
    while (action := client.next_action()) is not None:
        actions.append(action)
    sent.append(client.data_to_send())
    return events, actions, b"".join(sent), client.phase, client.pending_requests(), client.next_deadline()


def test_one_input(data: bytes) -> None:
    """Check one input; raises AssertionError when chunking changes the outcome."""
    if not data:
        return
    flags, stream = data[0], data[1:]
    whole = _run(flags, stream, [stream] if stream else [])  # b"" would mean EOF
    split = _run(flags, stream, (stream[i : i + 1] for i in range(len(stream))))
    if split != whole:
        raise AssertionError(f"byte by byte:\n{split!r}\nwhole:\n{whole!r}")


if __name__ == "__main__":
    import atheris

    atheris.instrument_all()
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()
