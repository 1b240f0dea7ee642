"""Measuring tool results and keeping them within budget: keep, truncate, persist."""

from __future__ import annotations

import msgspec
import pytest

from mcp_sansio.errors import LocalProtocolError
from mcp_sansio.result_policy import (
    MAX_RESULT_SIZE_META_KEY,
    Budget,
    KeptResult,
    OverflowAction,
    PersistResult,
    ResultDecision,
    ResultPolicy,
    ResultRule,
    ResultSize,
    apply_result_policy,
    measure,
    resolve_budget,
)

PNG: dict[str, object] = {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}  # 8 bytes decoded


def text(value: str) -> dict[str, object]:
    return {"type": "text", "text": value}


def apply(content: list[object], policy: ResultPolicy | None = None) -> ResultDecision:
    return apply_result_policy(content, server="srv", tool="read", policy=policy)


def budget(
    policy: ResultPolicy | None = None,
    env: dict[str, str] | None = None,
    meta: dict[str, object] | None = None,
) -> Budget:
    return resolve_budget(policy or ResultPolicy(), server="srv", tool="read", env=env or {}, tool_meta=meta)


def test_text_counts_four_characters_per_token_and_utf8_bytes() -> None:
    assert measure([text("héllo")]) == ResultSize(tokens=2, bytes=6, text_chars=5, images=0)


def test_image_counts_a_fixed_token_cost_and_its_decoded_bytes() -> None:
    assert measure([PNG]) == ResultSize(tokens=1_600, bytes=8, text_chars=0, images=1)


def test_image_cost_can_be_its_base64_length() -> None:
    assert measure([PNG], ResultPolicy(image_tokens=None)).tokens == 3


def test_audio_counts_its_base64_length() -> None:
    audio = {"type": "audio", "data": "A" * 400, "mimeType": "audio/wav"}
    assert measure([audio]) == ResultSize(tokens=100, bytes=300, text_chars=0, images=0)


def test_embedded_text_resource_counts_as_text() -> None:
    block = {"type": "resource", "resource": {"uri": "file:///a", "text": "x" * 8}}
    assert measure([block]).text_chars == 8


def test_other_blocks_count_their_json_length() -> None:
    link = {"type": "resource_link", "uri": "file:///a", "name": "a"}
    size = len(msgspec.json.encode(link))
    assert measure([link]) == ResultSize(tokens=-(-size // 4), bytes=size, text_chars=0, images=0)


class ImageContent(msgspec.Struct, tag="image", tag_field="type", kw_only=True):
    data: str
    mime_type: str = msgspec.field(name="mimeType")
    meta: msgspec.Raw | None = msgspec.field(default=None, name="_meta")


def test_content_structs_are_measured_like_their_wire_dicts() -> None:
    struct = ImageContent(data=str(PNG["data"]), mime_type="image/png", meta=msgspec.Raw(b"{}"))
    assert measure([struct]) == measure([PNG])


@pytest.mark.parametrize("value", [object(), "lone \ud800 surrogate"])
def test_block_that_is_not_json_is_a_local_error(value: object) -> None:
    with pytest.raises(LocalProtocolError, match="not JSON-shaped"):
        measure([{"type": "text", "text": value}])


def test_block_that_is_not_an_object_is_a_local_error() -> None:
    with pytest.raises(LocalProtocolError, match="must be an object"):
        measure(["just text"])


def test_default_budget_is_25000_tokens_truncate() -> None:
    assert budget() == Budget(tokens=25_000, action=OverflowAction.TRUNCATE)


def test_environment_variable_sets_the_budget() -> None:
    assert budget(env={"MAX_MCP_OUTPUT_TOKENS": " 50000 "}).tokens == 50_000


@pytest.mark.parametrize("value", ["", "lots", "0", "-5", "1e6", "9" * 20])
def test_invalid_environment_values_are_ignored(value: str) -> None:
    assert budget(env={"MAX_MCP_OUTPUT_TOKENS": value}).tokens == 25_000


def test_policy_budget_beats_the_environment() -> None:
    assert budget(ResultPolicy(max_tokens=100), env={"MAX_MCP_OUTPUT_TOKENS": "9"}).tokens == 100


def test_tool_meta_hint_in_characters_beats_the_policy() -> None:
    meta: dict[str, object] = {MAX_RESULT_SIZE_META_KEY: 200_001}
    assert budget(ResultPolicy(max_tokens=100), meta=meta).tokens == 50_001


def test_tool_meta_hint_is_capped() -> None:
    meta: dict[str, object] = {MAX_RESULT_SIZE_META_KEY: 10**12}
    assert budget(meta=meta).tokens == 125_000


@pytest.mark.parametrize("hint", [True, "400000", -1, 0, 1.5])
def test_invalid_tool_meta_hints_are_ignored(hint: object) -> None:
    assert budget(meta={MAX_RESULT_SIZE_META_KEY: hint}).tokens == 25_000


def test_server_rule_beats_the_tool_meta_hint() -> None:
    policy = ResultPolicy(servers={"srv": ResultRule(max_tokens=10, action=OverflowAction.PERSIST)})
    assert budget(policy, meta={MAX_RESULT_SIZE_META_KEY: 4000}) == Budget(
        tokens=10, action=OverflowAction.PERSIST
    )


def test_tool_rule_beats_the_server_rule_and_unset_fields_inherit() -> None:
    policy = ResultPolicy(
        servers={"srv": ResultRule(max_tokens=10, action=OverflowAction.PERSIST)},
        tools={"srv": {"read": ResultRule(max_tokens=20)}, "other": {"read": ResultRule()}},
    )
    assert budget(policy) == Budget(tokens=20, action=OverflowAction.PERSIST)


def test_result_within_budget_is_kept_unchanged() -> None:
    content: list[object] = [text("small"), PNG]
    assert apply(content) == KeptResult(content=[text("small"), PNG], size=measure(content))


def test_long_text_is_cut_with_a_marker_saying_how_much() -> None:
    decision = apply([text("x" * 140_000)])
    assert decision == KeptResult(
        content=[text("x" * 100_000), text("[... truncated 40,000 of 140,000 characters ...]")],
        size=measure([text("x" * 140_000)]),
        truncated=True,
    )


def test_blocks_after_the_cut_are_dropped_and_counted() -> None:
    policy = ResultPolicy(max_tokens=1_000, image_tokens=None)
    decision = apply([PNG, text("a" * 6_000), text("b" * 1_000), PNG], policy)
    assert isinstance(decision, KeptResult)
    assert decision.content == [
        PNG,
        text("a" * 3_988),
        text("[image (image/png) of 8 bytes dropped: over the 1,000-token result budget]"),
        text("[... truncated 3,012 of 7,000 characters ...]"),
    ]


def test_image_that_does_not_fit_is_dropped_with_a_note() -> None:
    decision = apply([text("a" * 4_000), PNG], ResultPolicy(max_tokens=1_500))
    assert isinstance(decision, KeptResult)
    assert decision.content == [
        text("a" * 4_000),
        text("[image (image/png) of 8 bytes dropped: over the 1,500-token result budget]"),
    ]


def test_other_block_that_does_not_fit_is_dropped_with_a_note() -> None:
    link = {"type": "resource_link", "uri": "file:///" + "a" * 100, "name": "a"}
    decision = apply([link], ResultPolicy(max_tokens=5))
    assert isinstance(decision, KeptResult)
    assert decision.content == [
        text("[resource_link content of 152 bytes dropped: over the 5-token result budget]")
    ]


def test_embedded_resource_text_is_cut_in_place() -> None:
    block = {"type": "resource", "resource": {"uri": "file:///a", "text": "x" * 50}}
    decision = apply([block], ResultPolicy(max_tokens=10))
    assert isinstance(decision, KeptResult)
    assert decision.content == [
        {"type": "resource", "resource": {"uri": "file:///a", "text": "x" * 40}},
        text("[... truncated 10 of 50 characters ...]"),
    ]


def test_persist_returns_the_text_for_the_driver_to_write() -> None:
    policy = ResultPolicy(max_tokens=10, action=OverflowAction.PERSIST)
    decision = apply([text("a" * 30), PNG, text("b" * 30)], policy)
    assert isinstance(decision, PersistResult)
    assert decision.content_bytes == b"a" * 30 + b"\n\n" + b"b" * 30
    assert decision.suggested_filename.startswith("srv-read-")
    assert decision.suggested_filename.endswith(".txt")
    assert decision.other_content == [
        text("[image (image/png) of 8 bytes dropped: over the 10-token result budget]")
    ]


def test_persist_replacement_names_the_path_and_the_sizes() -> None:
    policy = ResultPolicy(max_tokens=10, action=OverflowAction.PERSIST)
    decision = apply([text("a" * 60)], policy)
    assert isinstance(decision, PersistResult)
    assert decision.replacement_content("/tmp/{path}/r.txt") == [
        text(
            "[The result of tool 'read' of server 'srv' is 60 characters (~15 tokens), over the"
            " 10-token budget. It was saved to /tmp/{path}/r.txt; read that file in parts rather"
            " than calling the tool again.]"
        )
    ]


def test_persist_keeps_images_that_fit() -> None:
    policy = ResultPolicy(max_tokens=2_000, action=OverflowAction.PERSIST)
    decision = apply([text("a" * 10_000), PNG], policy)
    assert isinstance(decision, PersistResult)
    assert decision.other_content == [PNG]


def test_persist_filename_is_safe_and_stable() -> None:
    policy = ResultPolicy(max_tokens=1, action=OverflowAction.PERSIST)
    first = apply_result_policy([text("abcdefgh")], server="../../etc", tool="a b", policy=policy)
    again = apply_result_policy([text("abcdefgh")], server="../../etc", tool="a b", policy=policy)
    assert isinstance(first, PersistResult)
    assert isinstance(again, PersistResult)
    assert first.suggested_filename == again.suggested_filename
    assert first.suggested_filename.startswith("______etc-a_b-")


def test_persist_of_a_result_without_text_truncates_instead() -> None:
    policy = ResultPolicy(max_tokens=10, action=OverflowAction.PERSIST)
    decision = apply([PNG], policy)
    assert decision == KeptResult(
        content=[text("[image (image/png) of 8 bytes dropped: over the 10-token result budget]")],
        size=measure([PNG]),
        truncated=True,
    )


def test_environment_budget_is_used_by_apply() -> None:
    decision = apply_result_policy(
        [text("x" * 100)], server="s", tool="t", env={"MAX_MCP_OUTPUT_TOKENS": "10"}
    )
    assert isinstance(decision, KeptResult)
    assert decision.truncated
