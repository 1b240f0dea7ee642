"""Shared handler helpers: declared capabilities, which handler answers which server
request, and how a handler's outcome becomes the answer."""

from __future__ import annotations

from collections.abc import Mapping

import msgspec
import pytest

from mcp_sansio import LocalProtocolError, McpSansioError, RequestError
from mcp_sansio.events import RequestId, ServerRequestReceived
from mcp_sansio.handlers import (
    NO_HANDLER,
    answer,
    client_capabilities,
    coerce_result,
    handler_for,
    roots_result,
)
from mcp_sansio.types import (
    ClientCapabilities,
    CreateMessageRequestParams,
    ElicitResult,
    ListRootsResult,
    Root,
    RootsCapability,
)


def test_no_handler_declares_only_the_skills_extension() -> None:
    assert client_capabilities(sampling=False, elicitation=False, roots=False) == ClientCapabilities(
        extensions={"io.modelcontextprotocol/skills": {}})


def test_each_handler_declares_its_capability() -> None:
    assert client_capabilities(sampling=True, elicitation=True, roots=True) == ClientCapabilities(
        sampling={}, elicitation={"form": {}, "url": {}}, roots=RootsCapability(list_changed=True),
        extensions={"io.modelcontextprotocol/skills": {}},
    )


def test_struct_answer_is_sent_as_it_is() -> None:
    result = ElicitResult(action="decline")
    assert coerce_result("elicitation/create", result) is result


def test_valid_mapping_answer_is_sent_as_given() -> None:
    answer = {"action": "accept", "content": {"n": 1}, "extra": True}
    assert coerce_result("elicitation/create", answer) is answer


def test_mapping_answer_to_an_unknown_method_is_not_checked() -> None:
    answer = {"anything": 1}
    assert coerce_result("vendor/ask", answer) is answer


def test_mapping_answer_of_the_wrong_shape_is_a_local_error() -> None:
    with pytest.raises(LocalProtocolError, match="invalid elicitation/create result"):
        coerce_result("elicitation/create", {"action": "maybe"})


@pytest.mark.parametrize("value", [None, "text", [1], 3])
def test_answer_that_is_neither_struct_nor_mapping_is_a_local_error(value: object) -> None:
    with pytest.raises(LocalProtocolError, match="must return a result Struct or a dict"):
        coerce_result("sampling/createMessage", value)


def test_roots_from_structs_and_dicts() -> None:
    assert roots_result([Root(uri="file:///a"), {"uri": "file:///b", "name": "b"}]) == ListRootsResult(
        roots=[Root(uri="file:///a"), Root(uri="file:///b", name="b")]
    )


def test_malformed_root_is_a_local_error() -> None:
    with pytest.raises(LocalProtocolError, match="invalid root"):
        roots_result([{"name": "no uri"}])


class Answers:
    """A session stand-in that records the answers it is asked to send."""

    def __init__(self, *, unencodable: bool = False) -> None:
        self.sent: list[tuple[object, ...]] = []
        self._unencodable = unencodable

    def respond(self, request_id: RequestId, result: msgspec.Struct | Mapping[str, object], *,
                now: float) -> None:
        if self._unencodable:
            raise LocalProtocolError("the result holds a value JSON cannot represent")
        self.sent.append(("result", request_id, result))

    def respond_error(self, request_id: RequestId, code: int, message: str, data: object = None, *,
                      now: float) -> None:
        self.sent.append(("error", request_id, code, message, data))


def server_request(method: str) -> ServerRequestReceived:
    return ServerRequestReceived(request_id=7, method=method, params=msgspec.Struct())


SAMPLE_PARAMS = CreateMessageRequestParams(messages=[], max_tokens=1)


def test_each_server_request_goes_to_its_handler() -> None:
    def handlers(method: str) -> object:
        handler = handler_for(method, roots=lambda: "roots", sampling=lambda p: ("sampled", p),
                              elicitation=lambda p: ("elicited", p))
        return None if handler is None else handler(SAMPLE_PARAMS)

    assert handlers("roots/list") == "roots"
    assert handlers("sampling/createMessage") == ("sampled", SAMPLE_PARAMS)
    assert handlers("elicitation/create") == ("elicited", SAMPLE_PARAMS)
    assert handlers("vendor/ask") is None


@pytest.mark.parametrize("method", ["roots/list", "sampling/createMessage", "elicitation/create"])
def test_a_server_request_without_its_handler_has_none(method: str) -> None:
    assert handler_for(method, roots=None, sampling=None, elicitation=None) is None


def test_no_handler_answers_method_not_found() -> None:
    session = Answers()
    answer(session, server_request("vendor/ask"), NO_HANDLER, now=0.0)
    assert session.sent == [("error", 7, -32601, "no handler for vendor/ask", None)]


def test_a_handler_result_is_checked_and_sent() -> None:
    session = Answers()
    result = ElicitResult(action="decline")
    answer(session, server_request("elicitation/create"), result, now=0.0)
    assert session.sent == [("result", 7, result)]


def test_a_malformed_handler_result_answers_internal_error() -> None:
    session = Answers()
    answer(session, server_request("elicitation/create"), {"action": "maybe"}, now=0.0)
    [(kind, rid, code, message, _)] = session.sent
    assert (kind, rid, code) == ("error", 7, -32603)
    assert str(message).startswith("invalid elicitation/create result")


def test_a_result_json_cannot_hold_answers_internal_error() -> None:
    session = Answers(unencodable=True)
    answer(session, server_request("elicitation/create"), ElicitResult(action="decline"), now=0.0)
    assert session.sent == [("error", 7, -32603, "the result holds a value JSON cannot represent", None)]


def test_a_raised_request_error_is_sent_as_that_error() -> None:
    session = Answers()
    refusal = RequestError(-1, "the user said no", {"why": 1})
    answer(session, server_request("sampling/createMessage"), refusal, now=0.0)
    assert session.sent == [("error", 7, -1, "the user said no", {"why": 1})]


def test_a_raised_library_error_is_sent_with_its_message() -> None:
    session = Answers()
    answer(session, server_request("sampling/createMessage"), McpSansioError("bad root"), now=0.0)
    assert session.sent == [("error", 7, -32603, "bad root", None)]


def test_an_application_bug_is_sent_without_its_message() -> None:
    session = Answers()
    answer(session, server_request("sampling/createMessage"), KeyError("secret-token"), now=0.0)
    assert session.sent == [
        ("error", 7, -32603, "the client's sampling/createMessage handler failed (KeyError)", None)
    ]
