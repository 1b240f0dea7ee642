"""Fuzz target for the stateless era over stdio: the ``server/discover`` probe and MRTR.

The first byte sets the scene: bit 0 picks the MRTR scene (the probe already answered,
``tools/call`` id 2, ``prompts/get`` id 3 and ``subscriptions/listen`` id 4 pending) over
the probe scene (the input answers ``server/discover`` id 1 from the start); bit 1 pins
2026-07-28 instead of ``auto``; bit 2 leaves ``sampling`` undeclared (an input request
for it must fail its request); bit 3 ends the stream with EOF; the upper bits set
``max_input_rounds``. The rest is what the server writes, in phases split at NUL bytes:
after each phase the app answers every request it was asked (an error for ids ending
in ``!``, else a result fitting the method). Each phase is fed whole, then byte by
byte: both runs must give the same events, actions, output and state. Nothing the
harness calls documents an exception for this use, so anything raised is a bug.

Run with atheris: ``python fuzz/fuzz_modern.py fuzz/corpus/modern``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable

from mcp_sansio import ClientConfig, ServerRequestReceived, StdioClient
from mcp_sansio.types import ClientCapabilities, RootsCapability

_DISCOVERED = (
    b'{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","supportedVersions":["2026-07-28"],'
    b'"capabilities":{"tools":{},"prompts":{},"resources":{"subscribe":true},"logging":{}},'
    b'"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"f","version":"1"}}}}\n'
)
_ANSWERS: dict[str, dict[str, object]] = {
    "elicitation/create": {"action": "accept", "content": {"name": "x"}},
    "sampling/createMessage": {"role": "assistant", "content": {"type": "text", "text": "x"}, "model": "m"},
    "roots/list": {"roots": []},
}


def _client(flags: int) -> StdioClient:
    capabilities = ClientCapabilities(roots=RootsCapability(), elicitation={},
                                      sampling=None if flags & 4 else {})
    config = ClientConfig(protocol="2026-07-28" if flags & 2 else "auto", max_input_rounds=flags >> 4)
    client = StdioClient(config, capabilities)
    client.start(now=0.0)
    if flags & 1:
        client.receive_data(_DISCOVERED, 0.0)
        client.call_tool("t", {"a": 1}, now=0.0)  # id 2
        client.get_prompt("p", {"x": "1"}, now=0.0)  # id 3
        client.subscribe_resource("file:///a", now=0.0)  # listen id 4, answered locally as 5
    return client


def _answer(client: StdioClient, events: list[object]) -> None:
    """The app answers what it was asked in ``events``, each request once."""
    answered = set()
    for event in events:
        if not isinstance(event, ServerRequestReceived) or event.request_id in answered:
            continue
        answered.add(event.request_id)
        if str(event.request_id).endswith("!"):
            client.respond_error(event.request_id, -1, "declined", now=0.0)
        else:
            client.respond(event.request_id, _ANSWERS.get(event.method, {}), now=0.0)


def _run(flags: int, phases: list[bytes], split: Callable[[bytes], Iterable[bytes]]) -> tuple[object, ...]:
    client = _client(flags)
    events: list[object] = []
    actions: list[object] = []
    sent = [client.data_to_send()]

    def drain() -> list[object]:
        new: list[object] = []
        while (event := client.next_event()) is not None:
            new.append(event)
        while (action := client.next_action()) is not None:
            actions.append(action)
        sent.append(client.data_to_send())
        events.extend(new)
        return new

    for phase in phases:
        asked: list[object] = []
        for chunk in split(phase):
            client.receive_data(chunk, 1.0)
            asked += drain()
        _answer(client, asked)
        drain()
    if flags & 8:
        client.receive_data(b"", 2.0)
    for now in (3.0, 4.0, 31.0, 61.0, 200.0):
        client.handle_timeout(now)
    drain()
    return (events, actions, b"".join(sent), client.phase, client.era, client.pending_requests(),
            client.next_deadline())


def _whole(phase: bytes) -> list[bytes]:
    return [phase] if phase else []  # b"" would mean EOF


def _bytewise(phase: bytes) -> list[bytes]:
    return [phase[i : i + 1] for i in range(len(phase))]


def test_one_input(data: bytes) -> None:
    """Check one input; raises AssertionError when chunking changes the outcome."""
    if not data:
        return
    flags, phases = data[0], data[1:].split(b"\x00")[:4]
    whole = _run(flags, phases, _whole)
    split = _run(flags, phases, _bytewise)
    if split != whole:
        raise AssertionError(f"byte by byte:\n{split!r}\nwhole:\n{whole!r}")


if __name__ == "__main__":
    import atheris

    atheris.instrument_all()
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()
