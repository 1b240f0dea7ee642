"""JSON-RPC envelopes: stage-one decoding, classification of every shape, exact encodings."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_sansio import LocalProtocolError, jsonrpc
from mcp_sansio.jsonrpc import Envelope, Kind


def _one(data: bytes) -> Envelope:
    decoded = jsonrpc.decode(data)
    assert isinstance(decoded, Envelope)
    return decoded


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        (b'{"jsonrpc":"2.0","id":1,"method":"ping"}', Kind.REQUEST),
        (b'{"jsonrpc":"2.0","id":"a","method":"ping","params":{}}', Kind.REQUEST),
        (b'{"jsonrpc":"2.0","method":"notifications/x"}', Kind.NOTIFICATION),
        (b'{"jsonrpc":"2.0","id":1,"result":{}}', Kind.RESULT),
        (b'{"jsonrpc":"2.0","id":"s","result":null}', Kind.RESULT),
        (b'{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"m"}}', Kind.ERROR),
        (b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"m"}}', Kind.ERROR),
        (b'{"jsonrpc":"2.0","error":{"code":-32700,"message":"m"}}', Kind.ERROR),
    ],
)
def test_classify_valid_shapes(text: bytes, kind: Kind) -> None:
    assert jsonrpc.classify(_one(text)) is kind


@pytest.mark.parametrize(
    "text",
    [
        b'{"id":1,"method":"ping"}',  # no jsonrpc member
        b'{"jsonrpc":"1.0","id":1,"method":"ping"}',
        b'{"jsonrpc":"2.0","id":null,"method":"ping"}',  # a request with a null id
        b'{"jsonrpc":"2.0","id":1,"method":"ping","result":{}}',
        b'{"jsonrpc":"2.0","method":"x","error":{"code":1,"message":"m"}}',
        b'{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"m"}}',
        b'{"jsonrpc":"2.0","result":{}}',  # a result without an id
        b'{"jsonrpc":"2.0","id":null,"result":{}}',
        b'{"jsonrpc":"2.0","id":1}',  # neither method, result nor error
        b"{}",
    ],
)
def test_classify_invalid_combinations(text: bytes) -> None:
    assert jsonrpc.classify(_one(text)) is Kind.INVALID


def test_params_and_result_stay_raw_bytes() -> None:
    env = _one(b'{"jsonrpc":"2.0","id":1,"method":"x","params":{"b": [1, 2],"a":"\\u00e9"}}')
    assert isinstance(env.params, msgspec.Raw)
    assert bytes(env.params) == b'{"b": [1, 2],"a":"\\u00e9"}'
    result = _one(b'{"jsonrpc":"2.0","id":1,"result":[true ,null]}').result
    assert isinstance(result, msgspec.Raw)
    assert bytes(result) == b"[true ,null]"


def test_unknown_envelope_members_are_ignored() -> None:
    env = _one(b'{"jsonrpc":"2.0","method":"x","extra":{"deep":[1]}}')
    assert jsonrpc.classify(env) is Kind.NOTIFICATION


def test_batch_decodes_to_a_list_of_envelopes() -> None:
    decoded = jsonrpc.decode(b'[{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","id":2,"result":{}}]')
    assert isinstance(decoded, list)
    assert [jsonrpc.classify(env) for env in decoded] == [Kind.NOTIFICATION, Kind.RESULT]


def test_error_object_defaults_message_and_data() -> None:
    env = _one(b'{"jsonrpc":"2.0","id":1,"error":{"code":-5}}')
    assert env.error == jsonrpc.ErrorObject(code=-5, message="", data=None)


@pytest.mark.parametrize("text", [b"not json", b'{"jsonrpc":"2.0",', b"\xff\xfe"])
def test_non_json_raises_decode_error(text: bytes) -> None:
    with pytest.raises(msgspec.DecodeError):
        jsonrpc.decode(text)


@pytest.mark.parametrize(
    "text",
    [b"42", b'"text"', b"[1]", b'{"jsonrpc":2}', b'{"id":1.5}', b'{"id":{}}', b'{"error":"x"}'],
)
def test_json_of_the_wrong_shape_raises_validation_error(text: bytes) -> None:
    with pytest.raises(msgspec.ValidationError):
        jsonrpc.decode(text)


def test_encode_request_exact_bytes() -> None:
    assert jsonrpc.encode_request(7, "tools/call", {"name": "t"}) == (
        b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"t"}}'
    )


def test_encode_request_without_params_omits_them() -> None:
    assert jsonrpc.encode_request("x", "ping", None) == b'{"jsonrpc":"2.0","id":"x","method":"ping"}'


def test_encode_notification_exact_bytes() -> None:
    assert jsonrpc.encode_notification("notifications/initialized", None) == (
        b'{"jsonrpc":"2.0","method":"notifications/initialized"}'
    )
    assert jsonrpc.encode_notification("n", {}) == b'{"jsonrpc":"2.0","method":"n","params":{}}'


def test_encode_result_exact_bytes() -> None:
    assert jsonrpc.encode_result(3, {}) == b'{"jsonrpc":"2.0","id":3,"result":{}}'
    assert jsonrpc.encode_result("a", None) == b'{"jsonrpc":"2.0","id":"a","result":null}'


def test_encode_error_exact_bytes() -> None:
    assert jsonrpc.encode_error(4, jsonrpc.METHOD_NOT_FOUND, "no") == (
        b'{"jsonrpc":"2.0","id":4,"error":{"code":-32601,"message":"no"}}'
    )
    assert jsonrpc.encode_error(None, jsonrpc.PARSE_ERROR, "bad", {"at": 1}) == (
        b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"bad","data":{"at":1}}}'
    )


def test_encoding_a_value_json_cannot_hold_is_a_local_error() -> None:
    with pytest.raises(LocalProtocolError, match="cannot encode"):
        jsonrpc.encode_request(1, "tools/call", {"arguments": {"x": object()}})


def test_encoding_too_deep_a_value_is_a_local_error() -> None:
    deep: list[object] = []
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(LocalProtocolError):
        jsonrpc.encode_notification("n", {"deep": deep})


@given(
    request_id=st.one_of(st.integers(min_value=-(2**63), max_value=2**64 - 1), st.text()),
    method=st.text(),
)
def test_request_round_trips_through_decode(request_id: int | str, method: str) -> None:
    env = _one(jsonrpc.encode_request(request_id, method, {"k": [1, None]}))
    assert jsonrpc.classify(env) is Kind.REQUEST
    assert (env.id, env.method) == (request_id, method)
    assert isinstance(env.params, msgspec.Raw)
    assert msgspec.json.decode(env.params) == {"k": [1, None]}
