"""Split invariance: a scripted server stream fed in any chunking gives the same outcome as whole.

The stream has two parts: the handshake answer (with early noise), then, after the client
sent a few requests, answers, pages, progress, notifications, server requests and garbage.
"""

from __future__ import annotations

from collections.abc import Sequence

from helpers import ScriptedServer, drain_actions, drain_events
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_sansio import Action, ClientConfig, Event, StdioClient
from mcp_sansio.types import ClientCapabilities, RootsCapability

SERVER = ScriptedServer()
MAX_LINE = 2000
CALL, LIST, PING = 2, 3, 4  # the ids of the requests made after the handshake
NEXT_PAGE = 5

_TOOL = {"name": "t", "inputSchema": {"type": "object"}}
_SAMPLING = {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 5}

EARLY: Sequence[bytes] = (
    b"Server v1.2 starting\n",
    SERVER.notification("notifications/message", {"level": "info", "data": "boot"}),
    SERVER.request("early", "ping"),
    b"\n",
)

BODY: Sequence[bytes] = (
    SERVER.progress(CALL, 1, 10, "working"),
    SERVER.progress(LIST, 0.5),
    SERVER.progress(999, 1),
    SERVER.text_result(CALL, "done"),
    SERVER.result(PING, {}),
    SERVER.error(PING, -32000, "ping failed"),
    SERVER.error(None, -32700, "Parse error"),
    SERVER.result(LIST, {"tools": [_TOOL], "nextCursor": "c1"}),
    SERVER.result(NEXT_PAGE, {"tools": [_TOOL]}),
    SERVER.result(NEXT_PAGE, {"tools": [], "nextCursor": "c1"}),
    SERVER.result(CALL, {"content": "wrong shape"}),
    SERVER.result(12345, {}),
    SERVER.notification("notifications/tools/list_changed"),
    SERVER.notification("notifications/message", {"level": "nope"}),
    SERVER.notification("vendor/event", {"x": 1}),
    SERVER.notification("notifications/cancelled", {"requestId": "s"}),
    SERVER.request("p", "ping"),
    SERVER.request("s", "sampling/createMessage", _SAMPLING),
    SERVER.request(7, "roots/list"),
    SERVER.request(8, "elicitation/create", {"message": "m"}),
    SERVER.request(9, "vendor/method"),
    SERVER.request(10, "sampling/createMessage", {"messages": 1}),
    b"[" + SERVER.result(PING, {}).rstrip() + b"," + SERVER.notification("vendor/b").rstrip() + b"]\n",
    b"[]\n",
    SERVER.text_result(CALL, "crlf").replace(b"\n", b"\r\n"),
    b"\n",
    b"\r\n",
    b"   \n",
    b"INFO: listening\n",
    b"\xff\xfe\xfd\n",
    b'{"jsonrpc":"1.0","id":2,"result":{}}\n',
    b"[1, 2]\n",
    b'{"jsonrpc":"2.0","method":"x","params":' + b"[" * 3000 + b"]" * 3000 + b"}\n",
    b"o" * (MAX_LINE + 50) + b"\n",
    SERVER.notification("vendor/unterminated").rstrip(b"\n"),
)


class _Run:
    """One client fed a stream split at given cuts; what came out of it."""

    def __init__(self, skip: bool, version: str) -> None:
        caps = ClientCapabilities(roots=RootsCapability(), sampling={})
        self.client = StdioClient(ClientConfig(max_line_bytes=MAX_LINE, skip_non_json_lines=skip), caps)
        self.version = version
        self.events: list[Event] = []
        self.actions: list[Action] = []
        self.sent = b""

    def feed(self, data: bytes, cuts: Sequence[int]) -> None:
        start = 0
        for cut in [*sorted(min(c, len(data)) for c in cuts), len(data)]:
            if cut > start:
                self.client.receive_data(data[start:cut], 1.0)
            start = cut
        self.collect()

    def collect(self) -> None:
        self.events += drain_events(self.client)
        self.actions += drain_actions(self.client)
        self.sent += self.client.data_to_send()

    def run(self, early: bytes, early_cuts: Sequence[int], body: bytes, body_cuts: Sequence[int],
            eof: bool) -> tuple[object, ...]:
        client = self.client
        client.initialize(now=0.0)
        self.feed(early + SERVER.initialize_result(version=self.version), early_cuts)
        if client.protocol_version is not None:  # a strict client may have failed on a banner
            client.call_tool("t", {"a": 1}, now=1.0)
            client.list_tools(now=1.0)
            client.ping(now=1.0)
            self.collect()
        self.feed(body, body_cuts)
        if eof:
            client.receive_data(b"", 1.0)
        client.handle_timeout(1000.0)
        self.collect()
        return (self.events, self.actions, self.sent, client.phase, client.pending_requests(),
                client.next_deadline())


def _cuts(data: st.DataObject, length: int) -> list[int]:
    return data.draw(st.lists(st.integers(min_value=0, max_value=length), max_size=12))


@settings(max_examples=150, deadline=None)
@given(
    data=st.data(),
    early=st.lists(st.sampled_from(EARLY), max_size=4),
    body=st.lists(st.sampled_from(BODY), max_size=14),
    skip=st.booleans(),
    version=st.sampled_from(["2025-11-25", "2025-03-26"]),
    eof=st.booleans(),
)
def test_any_chunking_gives_the_same_outcome_as_feeding_whole(
    data: st.DataObject, early: list[bytes], body: list[bytes], skip: bool, version: str, eof: bool
) -> None:
    head, tail = b"".join(early), b"".join(body)
    head_cuts = _cuts(data, len(head) + 300)  # the handshake answer follows the head
    tail_cuts = _cuts(data, len(tail))
    whole = _Run(skip, version).run(head, [], tail, [], eof)
    split = _Run(skip, version).run(head, head_cuts, tail, tail_cuts, eof)
    assert split == whole


@settings(max_examples=40, deadline=None)
@given(
    body=st.lists(st.sampled_from(BODY[:-3]), max_size=8),
    skip=st.booleans(),
    version=st.sampled_from(["2025-11-25", "2025-03-26"]),
)
def test_byte_by_byte_gives_the_same_outcome_as_feeding_whole(
    body: list[bytes], skip: bool, version: str
) -> None:
    tail = b"".join(body)
    whole = _Run(skip, version).run(b"", [], tail, [], True)
    split = _Run(skip, version).run(b"", [], tail, range(len(tail)), True)
    assert split == whole
