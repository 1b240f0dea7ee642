"""Large responses: their result is decoded straight from its slice of the message, and
the session then behaves exactly as through the general two-stage path.

``receive_message`` takes that path for ``bytes`` of 1.5 KB and more; a ``memoryview`` of
the same bytes always goes through the general path, which makes the reference here.
"""

from __future__ import annotations

import itertools
import json

import pytest
from helpers import drain_events, ready_client
from modern_helpers import modern_client

from mcp_sansio import ResponseReceived, StdioClient, jsonrpc
from mcp_sansio.types import CallToolResult, TextContent

BIG = "x" * 2000  # comfortably above the size from which the slice is tried


def _call(client: StdioClient) -> int:
    rid = client.call_tool("big", {}, now=0.0)
    client.data_to_send()
    return rid


@pytest.mark.parametrize(
    ("data", "span"),
    [
        (b'{"jsonrpc":"2.0","id":7,"result":{"a":1}}', (7, 33, 40)),
        (b'{"jsonrpc":"2.0","id":1234,"result":{}}', (1234, 36, 38)),
        (b'{"result":{"a":1},"jsonrpc":"2.0","id":7}', (7, 10, 17)),
        # The result-first tail is the last one: the same text inside the result is data.
        (b'{"result":{"t":"},\\"jsonrpc\\":\\"2.0\\",\\"id\\":9}"},"jsonrpc":"2.0","id":8}',
         (8, 10, 49)),
    ],
)
def test_result_span_finds_the_result_object_of_both_compact_layouts(
    data: bytes, span: tuple[int, int, int]
) -> None:
    assert jsonrpc.result_span(data) == span
    rid, start, end = span
    assert json.loads(data)["result"] == json.loads(data[start:end])
    assert json.loads(data)["id"] == rid


@pytest.mark.parametrize(
    "data",
    [
        b'{"jsonrpc":"2.0","method":"notifications/progress","params":{}}',
        b'{"jsonrpc":"2.0","id":7,"error":{"code":1,"message":"m"}}',
        b'{"jsonrpc":"2.0","id":07,"result":{}}',  # leading zero: not JSON
        b'{"jsonrpc":"2.0","id":0,"result":{}}',
        b'{"jsonrpc":"2.0","id":-1,"result":{}}',
        b'{"jsonrpc":"2.0","id":"7","result":{}}',
        b'{"jsonrpc":"2.0","id":7 ,"result":{}}',
        b'{"jsonrpc":"2.0","id":7,"result":[]}',  # not an object
        b'{"jsonrpc":"2.0","id":7,"result":{} }',  # whitespace: the slice must end the object
        b'{"jsonrpc":"2.0","id":7,"result":{}',
        b'{"result":{},"jsonrpc":"2.0","id":7,"x":1}',
        b'{"result":{},"jsonrpc":"2.0","id":7 }',
        b'{"result":{},"jsonrpc":"2.0","id":"7"}',
        b'{"result":{}}',
    ],
)
def test_result_span_leaves_any_other_frame_to_the_general_path(data: bytes) -> None:
    assert jsonrpc.result_span(data) is None


def test_a_large_reply_read_from_stdout_is_a_typed_result_with_its_raw_json() -> None:
    client = ready_client()
    rid = _call(client)
    result = json.dumps({"content": [{"type": "text", "text": BIG}], "extra": [1, 2]},
                        separators=(",", ":")).encode()
    client.receive_data(b'{"result":' + result + b',"jsonrpc":"2.0","id":%d}\n' % rid, 0.0)
    [event] = drain_events(client)
    assert isinstance(event, ResponseReceived)
    assert (event.request_id, event.method) == (rid, "tools/call")
    assert event.result == CallToolResult(content=[TextContent(text=BIG)])
    assert bytes(event.raw) == result  # unknown members stay in the raw JSON
    assert client.pending_requests() == []
    assert client.next_deadline() is None


# Pieces of a large response, each a way the frame or the result can be right or wrong.
_RESULTS = {
    "text": b'{"content":[{"type":"text","text":"%s"}]}' % BIG.encode(),
    "marker inside": b'{"content":[{"type":"text","text":"},\\"jsonrpc\\":\\"2.0\\",\\"id\\":2}%s"}]}'
                     % BIG.encode(),
    "invalid result": b'{"content":{"text":"%s"}}' % BIG.encode(),
    "not JSON": b'{"content":[{"type":"text","text":"%s}]}' % BIG.encode(),
    "bad UTF-8": b'{"content":[{"type":"text","text":"\xff%s"}]}' % BIG.encode(),
    "two objects": b'{"content":[]},{"x":"%s"}' % BIG.encode(),
    "input_required": b'{"resultType":"input_required","inputRequests":{},"requestState":"%s"}'
                      % BIG.encode(),
}
# "late": 1 was the handshake's id, answered long ago.
_IDS = {"pending": b"%d", "unknown": b"999", "late": b"1", "leading zero": b"0%d", "string": b'"%d"'}


def _message(layout: str, rid: bytes, result: bytes, tail: bytes) -> bytes:
    if layout == "id first":
        return b'{"jsonrpc":"2.0","id":' + rid + b',"result":' + result + tail + b"}"
    return b'{"result":' + result + tail + b',"jsonrpc":"2.0","id":' + rid + b"}"


@pytest.mark.parametrize("era", ["legacy", "modern"])
@pytest.mark.parametrize("method", ["tools/call", "tools/list", "ping"])
def test_a_large_message_has_the_same_effect_as_through_the_general_path(method: str, era: str) -> None:
    """Every combination of frame, id, result and trailing member, for each request."""
    for layout, rid, result, tail in itertools.product(
        ["id first", "result first"], sorted(_IDS), sorted(_RESULTS),
        [b"", b',"error":{"code":1,"message":"m"}', b',"result":{}', b" "],
    ):
        outcomes = []
        for general in (False, True):
            client = ready_client() if era == "legacy" else modern_client()
            if method == "tools/call":
                request_id = _call(client)
            else:
                request_id = client.request(method, now=0.0, all_pages=method == "tools/list")
                client.data_to_send()
            data = _message(layout, _IDS[rid].replace(b"%d", b"%d" % request_id), _RESULTS[result], tail)
            client.session.receive_message(memoryview(data) if general else data, 0.0)
            outcomes.append((drain_events(client), client.pending_requests(), client.data_to_send()))
        assert outcomes[0] == outcomes[1], (layout, rid, result, tail)
