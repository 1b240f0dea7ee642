"""Fuzz target for JSON-RPC envelope decoding and encoding (``mcp_sansio.jsonrpc``).

The input is one JSON text. ``decode`` may only raise its documented errors
(``msgspec.DecodeError``, ``RecursionError``); an envelope must classify, and every valid
kind must survive re-encoding: the bytes the encoders write decode to the same kind and
the same members. The same text wrapped in a batch must give the same classification.
Where ``result_span`` finds a frame whose slice is JSON, ``decode`` must find exactly that
response: the same id, that slice as the result, no other member. ``recover_response_id``
never raises, and on a text it reads whole (4 KiB) that decodes it finds the response's own
id or nothing, and nothing for a request or a notification.

Run with atheris: ``python fuzz/fuzz_jsonrpc.py fuzz/corpus/jsonrpc``.
"""

from __future__ import annotations

import sys

import msgspec

from mcp_sansio import LocalProtocolError, jsonrpc
from mcp_sansio.jsonrpc import Envelope, Kind

DECODE_ERRORS = (msgspec.DecodeError, RecursionError)


def _reencoded(env: Envelope, kind: Kind) -> bytes:
    """``env`` written again by the encoder of its kind."""
    params = env.params if isinstance(env.params, msgspec.Raw) else None
    if kind is Kind.REQUEST:
        assert isinstance(env.id, int | str) and isinstance(env.method, str)
        return jsonrpc.encode_request(env.id, env.method, params)
    if kind is Kind.NOTIFICATION:
        assert isinstance(env.method, str)
        return jsonrpc.encode_notification(env.method, params)
    if kind is Kind.RESULT:
        assert isinstance(env.id, int | str)
        return jsonrpc.encode_result(env.id, env.result)
    assert isinstance(env.error, jsonrpc.ErrorObject)
    request_id = env.id if isinstance(env.id, int | str) else None
    return jsonrpc.encode_error(request_id, env.error.code, env.error.message, env.error.data)


def _members(env: Envelope) -> tuple[object, ...]:
    """What must survive re-encoding (error ``data`` may not: ``1e400`` comes back ``null``)."""

    def raw(value: object) -> object:
        return bytes(value) if isinstance(value, msgspec.Raw) else value

    error = (env.error.code, env.error.message) if isinstance(env.error, jsonrpc.ErrorObject) else None
    request_id = None if env.id is msgspec.UNSET and error is not None else env.id  # encode_error writes it
    return request_id, env.method, raw(env.params), raw(env.result), error


def _check(env: Envelope) -> Kind:
    kind = jsonrpc.classify(env)
    if kind is Kind.INVALID:
        return kind
    try:
        again = jsonrpc.decode(_reencoded(env, kind))
    except (LocalProtocolError, RecursionError):
        return kind  # nested just deeper than the encoder or decoder goes
    if not isinstance(again, Envelope) or jsonrpc.classify(again) is not kind:
        raise AssertionError(f"{kind} did not survive re-encoding: {again!r}")
    if _members(again) != _members(env):
        raise AssertionError(f"members changed: {_members(again)!r} != {_members(env)!r}")
    return kind


def _check_span(data: bytes) -> None:
    """``result_span``'s promise: a frame whose slice decodes is that response."""
    span = jsonrpc.result_span(data)
    if span is None:
        return
    rid, start, end = span
    try:
        msgspec.json.decode(data[start:end])
        decoded = jsonrpc.decode(data)
    except msgspec.DecodeError:
        return  # the slice is no JSON (or no UTF-8): the caller takes the general path
    except RecursionError:
        return  # the whole nests one level deeper than the slice
    expected = ("2.0", rid, msgspec.UNSET, msgspec.UNSET, msgspec.Raw(data[start:end]))
    if not isinstance(decoded, Envelope) or (
            decoded.jsonrpc, decoded.id, decoded.method, decoded.error, decoded.result) != expected:
        raise AssertionError(f"result_span found {span}, decode found {decoded!r}")


def _check_recovered(data: bytes, decoded: Envelope | list[Envelope] | None) -> None:
    """``recover_response_id``'s promise: an id or nothing, and never another message's."""
    found = jsonrpc.recover_response_id(data)
    if type(found) not in (int, str, type(None)):
        raise AssertionError(f"recover_response_id gave {found!r}")
    if found is None or not isinstance(decoded, Envelope) or len(data) > 4096:
        return
    kind = jsonrpc.classify(decoded)
    answer = kind in (Kind.RESULT, Kind.ERROR)
    if kind in (Kind.REQUEST, Kind.NOTIFICATION) or (answer and found != decoded.id):
        raise AssertionError(f"recover_response_id found {found!r} in a {kind} with id {decoded.id!r}")


def test_one_input(data: bytes) -> None:
    """Check one input; raises AssertionError on a contract break."""
    _check_span(data)
    try:
        decoded = jsonrpc.decode(data)
    except DECODE_ERRORS:
        _check_recovered(data, None)
        return
    _check_recovered(data, decoded if isinstance(decoded, Envelope) else None)
    if isinstance(decoded, list):
        for env in decoded:
            _check(env)
        return
    kind = _check(decoded)
    try:
        batch = jsonrpc.decode(b"[" + data + b"]")
    except RecursionError:
        return  # one level deeper than the text alone
    if not isinstance(batch, list) or [jsonrpc.classify(env) for env in batch] != [kind]:
        raise AssertionError(f"as a batch it classified as {batch!r}, alone as {kind}")


if __name__ == "__main__":
    import atheris

    atheris.instrument_all()
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()
