"""``jsonrpc.recover_response_id``: the id of an answer that did not decode, read cheaply,
and the session failing that request at once instead of letting it time out."""

from __future__ import annotations

import json

import pytest
from helpers import ScriptedServer, drain_events, ready_client
from hypothesis import example, given
from hypothesis import strategies as st

from mcp_sansio import FailureReason, InitializeFailed, MessageDiscarded, RequestFailed, StdioClient
from mcp_sansio.jsonrpc import recover_response_id

SERVER = ScriptedServer()
DEEP = 100_000

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
ids = st.integers(min_value=-(2**63), max_value=2**63) | st.text(max_size=20)
# Keys that look like the envelope's, inside and outside it.
keys = st.sampled_from(["id", "result", "error", "method", "params", "jsonrpc", "ïd"]) | st.text(max_size=6)


def encode(members: list[tuple[str, object]], *, spaced: bool, ascii_only: bool) -> bytes:
    """``members`` as one JSON object, in that order (keys may repeat)."""
    colon, comma = (": ", ", ") if spaced else (":", ",")
    def dump(value: object) -> str:
        return json.dumps(value, ensure_ascii=ascii_only)

    body = comma.join(dump(key) + colon + dump(value) for key, value in members)
    return ("{" + body + "}").encode()


def truth(data: bytes) -> object:
    """The id an exact reader finds: a response's id (when it has one only), else ``None``."""
    pairs = json.loads(data, object_pairs_hook=lambda pairs: pairs)
    names = [key for key, _ in pairs]
    if names.count("id") != 1 or "method" in names or not {"result", "error"} & set(names):
        return None
    value = dict(pairs).get("id")
    return value if type(value) in (int, str) else None


@given(members=st.lists(st.tuples(keys, json_values), max_size=6), rid=ids, at=st.integers(0, 6),
       spaced=st.booleans(), ascii_only=st.booleans())
@example(members=[("result", [[[[]]]])], rid=7, at=1, spaced=False, ascii_only=True)
@example(members=[("result", {"id": 9})], rid="a\"b\\", at=1, spaced=True, ascii_only=True)
def test_recovered_id_is_the_messages_own_or_none(
    members: list[tuple[str, object]], rid: int | str, at: int, spaced: bool, ascii_only: bool
) -> None:
    members = [*members[:at], ("id", rid), *members[at:]]
    data = encode(members, spaced=spaced, ascii_only=ascii_only)
    found = recover_response_id(data)
    expected = truth(data)
    if len(data) <= 4096:  # all of it is read: exact
        assert found == expected
    else:
        assert found in (None, expected)


@given(data=st.binary(max_size=300) | st.text(alphabet='{}[]",:\\ id0123456789resultmethod').map(str.encode))
def test_any_bytes_give_an_id_or_none_without_raising(data: bytes) -> None:
    assert type(recover_response_id(data)) in (int, str, type(None))


@given(junk=st.text(alphabet='{}[]",:\\ x1', max_size=40))
def test_a_nested_id_is_never_taken_for_the_messages(junk: str) -> None:
    data = b'{"jsonrpc":"2.0","result":{"id":5,"x":"' + json.dumps(junk).encode()[1:-1] + b'"}}'
    assert recover_response_id(data) is None


@pytest.mark.parametrize("data", [
    b'{"jsonrpc":"2.0","id":3,"result":' + b"[" * DEEP + b"]" * DEEP + b"}",
    b'{"result":' + b"[" * DEEP + b"]" * DEEP + b',"jsonrpc":"2.0","id":3}',  # the TypeScript SDK's order
    b'  {"jsonrpc" : "2.0" , "\\u0069d" : 3 , "error" : {"code":"not a number"}}',
    b'{"jsonrpc":"2.0","id":3,"error":{"code":1,"message":"\xff\xfe"}}',
])
def test_each_layout_gives_its_id(data: bytes) -> None:
    assert recover_response_id(data) == 3


@pytest.mark.parametrize("data", [
    b'{"jsonrpc":"2.0","id":3,"method":"sampling/createMessage","params":' + b"[" * DEEP + b"]" * DEEP + b"}",
    b'[debug] {"jsonrpc":"2.0","id":3,"result":{}}',
    b'{"jsonrpc":"2.0","id":3.0,"result":' + b"[" * DEEP,
    b'{"jsonrpc":"2.0","id":[3],"result":' + b"[" * DEEP,
    b'{"jsonrpc":"2.0","x":"' + b"a" * 5000 + b'","id":3,"result":' + b"[" * DEEP,  # past what is read
])
def test_requests_and_what_is_not_read_give_none(data: bytes) -> None:
    assert recover_response_id(data) is None


DEEP_RESULT = b'{"jsonrpc":"2.0","result":' + b"[" * 5000


@pytest.mark.parametrize(("data", "expected"), [
    (DEEP_RESULT + b',"id":"a\\\\\\"b"}', 'a\\"b'),  # escaped quotes and backslashes in a string id
    (DEEP_RESULT + b' , "id" : 7 } \n', 7),
    (DEEP_RESULT, None),  # no end
    (DEEP_RESULT + b" " * 200 + b"}", None),  # no last member in view
    (DEEP_RESULT + b',"id":"' + b"a" * 200 + b'"}', None),  # its start is out of view
    (DEEP_RESULT + b",5:3}", None),
    (DEEP_RESULT + b',"x":3}', None),
    (DEEP_RESULT + b'"id":3}', None),  # no "," before the key
    (DEEP_RESULT + b',"id":}', None),
    (DEEP_RESULT + b',"id"3}', None),
    (b'{"result" 1, "id": 3}', None),  # no ":" after a key
    (b'{"result":1,"id":', None),
    (b'{"result":1,"id":3 x}', None),
    (b'{"result":1,"id":"3', None),
    (b'{"result":1,"id":2,"id":3}', None),  # which one?
])
def test_what_the_end_of_a_message_gives(data: bytes, expected: object) -> None:
    assert recover_response_id(data) == expected


def test_a_deep_answer_fails_its_request_at_once_naming_the_cause() -> None:
    client = ready_client()
    rid = client.call_tool("deep", now=1.0, timeout=60.0)
    other = client.call_tool("other", now=1.0, timeout=60.0)
    deep = b"[" * DEEP + b"]" * DEEP
    client.receive_data(b'{"jsonrpc":"2.0","id":%d,"result":%s}\n' % (rid, deep), 1.5)
    [event] = drain_events(client)
    assert isinstance(event, RequestFailed) and event.request_id == rid
    assert event.reason is FailureReason.INVALID_RESULT
    assert event.message == ("the answer to tools/call could not be decoded: its JSON nests deeper than "
                             "the decoder allows")
    assert client.pending_requests() == [other]


def test_an_answer_with_a_bad_member_fails_its_request() -> None:
    client = ready_client()
    rid = client.call_tool("x", now=1.0)
    client.receive_data(b'{"result":{},"jsonrpc":"2.0","error":{"code":"E1"},"id":%d}\n' % rid, 1.5)
    [event] = drain_events(client)
    assert isinstance(event, RequestFailed) and event.reason is FailureReason.INVALID_RESULT
    assert event.message.startswith(
        "the answer to tools/call could not be decoded: not JSON-RPC: Expected `int`")


def test_an_undecodable_answer_to_nothing_pending_is_still_discarded() -> None:
    client = ready_client()
    client.receive_data(b'{"jsonrpc":"2.0","id":99,"result":' + b"[" * DEEP + b"]" * DEEP + b"}\n", 1.0)
    [event] = drain_events(client)
    assert isinstance(event, MessageDiscarded)


def test_an_undecodable_answer_to_initialize_fails_the_handshake() -> None:
    client = StdioClient()
    client.initialize(now=0.0)
    client.receive_data(b'{"jsonrpc":"2.0","id":1,"result":' + b"[" * DEEP + b"]" * DEEP + b"}\n", 0.5)
    [event] = drain_events(client)
    assert isinstance(event, InitializeFailed) and event.reason is FailureReason.INVALID_RESULT
    assert "initialize could not be decoded" in event.message


def test_an_answer_that_is_not_utf8_fails_its_request() -> None:
    client = ready_client()
    rid = client.call_tool("x", now=1.0)
    client.receive_data(b'{"jsonrpc":"2.0","id":%d,"error":{"code":1,"message":"\xff"}}\n' % rid, 1.5)
    [event] = drain_events(client)
    assert isinstance(event, RequestFailed)
    assert event.message == "the answer to tools/call could not be decoded: it is not valid UTF-8"


@pytest.mark.parametrize("cut", [b'{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"ok',
                                 b'{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"\xc3'])
def test_an_answer_cut_short_is_not_taken_for_a_whole_one(cut: bytes) -> None:
    client = ready_client()
    rid = client.call_tool("x", now=1.0)
    client.receive_data(cut % rid, 1.5)
    client.receive_data(b"", 1.5)  # the server died mid-line: the loss, not the half answer, says why
    client.process_exited(3, now=1.6)
    failures = [event for event in drain_events(client) if isinstance(event, RequestFailed)]
    assert [failure.reason for failure in failures] == [FailureReason.CONNECTION_LOST]
