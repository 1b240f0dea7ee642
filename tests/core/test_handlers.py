"""Shared handler helpers: declared capabilities, and checking a handler's answer."""

from __future__ import annotations

import pytest

from mcp_sansio import LocalProtocolError
from mcp_sansio.handlers import client_capabilities, coerce_result, roots_result
from mcp_sansio.types import (
    ClientCapabilities,
    ElicitResult,
    ListRootsResult,
    Root,
    RootsCapability,
)


def test_no_handler_declares_nothing() -> None:
    assert client_capabilities(sampling=False, elicitation=False, roots=False) == ClientCapabilities()


def test_each_handler_declares_its_capability() -> None:
    assert client_capabilities(sampling=True, elicitation=True, roots=True) == ClientCapabilities(
        sampling={}, elicitation={"form": {}, "url": {}}, roots=RootsCapability(list_changed=True)
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
