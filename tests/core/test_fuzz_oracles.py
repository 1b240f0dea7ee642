"""The fuzzer's oracles: each rule fires on the records that break it, and not on
records that keep it."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from mcp_sansio.fuzz import (
    CaseStep,
    Check,
    Context,
    Ended,
    Expect,
    HttpAnswer,
    Received,
    Record,
    Sent,
    TimedOut,
    judge,
)
from mcp_sansio.fuzz.case import encode, message_step, raw_step
from mcp_sansio.fuzz.oracles import result_schema
from mcp_sansio.fuzz.run_oracles import judge_children, judge_memory, judge_tools

CTX = Context(version="2025-11-25")


def req(rid: object, method: str = "ping", **fields: object) -> CaseStep:
    return message_step({"jsonrpc": "2.0", "id": rid, "method": method}, method, **fields)


def res(rid: object, result: object = None, error: object = None) -> Received:
    body: dict[str, object] = {"jsonrpc": "2.0", "id": rid}
    body.update({"error": error} if error is not None else {"result": result if result is not None else {}})
    return Received(t=1.0, data=encode(body))


def rules(steps: list[CaseStep], records: Sequence[object], ctx: Context = CTX) -> list[str]:
    return [f.rule for f in judge(steps, records, ctx)]  # type: ignore[arg-type]


def test_an_answered_ping_is_clean() -> None:
    assert rules([req(1, check=Check.PING)], [Sent(step=0, t=0), res(1), Ended(t=2, alive=True)]) == []


def test_a_dead_server_is_a_crash_once() -> None:
    steps = [req(1), req(2)]
    found = judge(steps, [Sent(step=0, t=0), Sent(step=1, t=0), Ended(t=1, alive=False, returncode=3)], CTX)
    assert [(f.rule, f.step) for f in found] == [("server-crashed", 0)]
    assert "exit status 3" in found[0].message
    assert rules([req(1)], [Sent(step=0, t=0), res(1), Ended(t=1, alive=False)]) == ["server-crashed"]


def test_silence_is_a_finding_unless_the_request_may_take_long() -> None:
    assert rules(
        [req(1, check=Check.PING)], [Sent(step=0, t=0), TimedOut(step=0, t=5), Ended(t=5, alive=True)]
    ) == ["ping-unanswered"]
    assert rules([req(1)], [Sent(step=0, t=0), TimedOut(step=0, t=5), Ended(t=5, alive=True)]) == [
        "no-response"
    ]
    assert (
        rules([req(1, patient=True)], [Sent(step=0, t=0), TimedOut(step=0, t=5), Ended(t=5, alive=True)])
        == []
    )


def test_response_ids_must_match_and_be_unique() -> None:
    assert rules([req(1)], [Sent(step=0, t=0), res(1), res(1)]) == ["duplicate-response"]
    assert rules([req(1)], [Sent(step=0, t=0), res(1), res(9)]) == ["unknown-response-id"]
    earlier = Context(version="2025-11-25", earlier_ids=frozenset({("integer", 9)}))
    assert rules([req(1)], [Sent(step=0, t=0), res(1), res(9)], earlier) == []
    assert rules([req(1)], [Sent(step=0, t=0), res(1.0)]) == []
    assert (
        rules([req(1)], [Sent(step=0, t=0), res(1), res(None, error={"code": -32700, "message": "x"})]) == []
    )
    garbage = raw_step(b'{"jsonrpc":"2.0","id":true,"method":1}', "bad")
    assert rules([garbage], [Sent(step=0, t=0), res(True, error={"code": -32600, "message": "x"})]) == []


def test_malformed_output_is_named() -> None:
    sent = [Sent(step=0, t=0)]
    assert rules([req(1)], [*sent, res(1), Received(t=1, data=b"hello")]) == ["stdout-not-mcp"]
    http = Context(version="2025-11-25", stdio=False)
    assert rules([req(1)], [*sent, res(1), Received(t=1, data=b"hello")], http) == ["malformed-message"]
    assert rules([req(1)], [*sent, res(1), Received(t=1, data=b'{"id":1}')]) == ["malformed-message"]
    assert rules([req(1)], [*sent, Received(t=1, data=b'{"jsonrpc":"2.0","id":1}')]) == ["malformed-message"]
    assert rules([req(1)], [*sent, res(1, error={"code": "x"})]) == ["malformed-message"]


def test_error_codes_are_checked_per_probe() -> None:
    sent = [Sent(step=0, t=0)]
    assert rules(
        [req(1, "x/y", check=Check.UNKNOWN_METHOD)], [*sent, res(1, error={"code": -32603, "message": ""})]
    ) == ["method-not-found-code"]
    assert rules([req(1, "x/y", check=Check.UNKNOWN_METHOD)], [*sent, res(1)]) == ["method-not-found-code"]
    assert rules([req(1, check=Check.INVALID_REQUEST)], [*sent, res(1)]) == ["invalid-request-accepted"]
    cursor = req(1, "tools/list", check=Check.FORGED_CURSOR)
    assert rules([cursor], [*sent, res(1, error={"code": -32603, "message": ""})]) == ["invalid-cursor-code"]
    assert rules([req(1, check=Check.PING)], [*sent, res(1, error={"code": -1, "message": ""})]) == [
        "ping-unanswered"
    ]


def test_invalid_arguments_need_an_error_or_is_error() -> None:
    call = req(1, "tools/call", check=Check.INVALID_ARGS)
    sent = [Sent(step=0, t=0)]
    assert rules([call], [*sent, res(1, {"content": []})]) == ["accepted-invalid-arguments"]
    assert rules([call], [*sent, res(1, {"content": [], "isError": True})]) == []
    assert rules([call], [*sent, res(1, error={"code": -32602, "message": ""})]) == []
    assert rules([call], [*sent, res(1, error={"code": -32603, "message": ""})]) == ["invalid-arguments-code"]


def test_results_must_fit_the_revision_schema() -> None:
    schema = {"$defs": {"ListToolsResult": {"type": "object", "required": ["tools"]}}}
    ctx = Context(version="2025-11-25", schema=schema)
    lister = req(1, "tools/list", check=Check.RESULT)
    assert rules([lister], [Sent(step=0, t=0), res(1, {"tool": []})], ctx) == ["result-schema"]
    assert rules([lister], [Sent(step=0, t=0), res(1, {"tools": [{"name": "a b"}]})], ctx) == ["tool-name"]
    assert result_schema(schema, "ping", False) is None
    modern: dict[str, object] = {"$defs": {"CallToolResult": {}, "InputRequiredResult": {}}}
    assert "anyOf" in result_schema(modern, "tools/call", True)  # type: ignore[operator]
    assert result_schema({"definitions": {"CallToolResult": {}}}, "tools/call", False) == {
        "$ref": "#/definitions/CallToolResult"
    }


def test_structured_content_must_fit_the_output_schema() -> None:
    tool = {
        "name": "t",
        "inputSchema": {"type": "object"},
        "outputSchema": {"type": "object", "required": ["x"]},
    }
    ctx = Context(version="2025-11-25", schema={"$defs": {}}, tools={"t": tool})
    call = req(1, "tools/call", check=Check.RESULT, tool="t")
    sent = [Sent(step=0, t=0)]
    assert rules([call], [*sent, res(1, {"content": [], "structuredContent": {}})], ctx) == [
        "structured-content"
    ]
    assert rules([call], [*sent, res(1, {"content": []})], ctx) == ["structured-content"]
    assert rules([call], [*sent, res(1, {"content": [], "structuredContent": {"x": 1}})], ctx) == []
    assert rules([call], [*sent, res(1, {"content": [], "isError": True})], ctx) == []


def test_server_requests_need_negotiated_capabilities() -> None:
    sampling = Received(t=1, data=encode({"jsonrpc": "2.0", "id": 5, "method": "sampling/createMessage"}))
    assert rules([req(1)], [Sent(step=0, t=0), sampling, res(1)]) == ["capability-not-negotiated"]
    allowed = Context(version="2025-11-25", client_capabilities={"sampling": {}})
    assert rules([req(1)], [Sent(step=0, t=0), sampling, res(1)], allowed) == []
    early = Context(version="2025-11-25", client_capabilities={"sampling": {}}, initialized=False)
    assert rules([req(1)], [Sent(step=0, t=0), sampling, res(1)], early) == ["request-before-initialized"]


def test_progress_must_belong_to_a_request_in_flight() -> None:
    call = message_step({"jsonrpc": "2.0", "id": 1, "method": "tools/call"}, "c", progress_token="p")
    progress = Received(
        t=1,
        data=encode(
            {
                "jsonrpc": "2.0",
                "method": "notifications/progress",
                "params": {"progressToken": "p", "progress": 1},
            }
        ),
    )
    stray = Received(
        t=1,
        data=encode(
            {
                "jsonrpc": "2.0",
                "method": "notifications/progress",
                "params": {"progressToken": "q", "progress": 1},
            }
        ),
    )
    assert rules([call], [Sent(step=0, t=0), progress, res(1)]) == []
    assert rules([call], [Sent(step=0, t=0), res(1), progress]) == ["progress-token"]
    assert rules([call], [Sent(step=0, t=0), stray, res(1)]) == ["progress-token"]


def test_a_cancelled_request_answered_after_a_later_ping_is_reported() -> None:
    call = req(1, "tools/call", expect=Expect.CANCELLED, timeout=0.0)
    cancel = message_step(
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}},
        "cancel",
        cancels=1,
    )
    ping = req(2, check=Check.PING)
    sent = [Sent(step=0, t=0), Sent(step=1, t=0), Sent(step=2, t=0)]
    assert rules([call, cancel, ping], [*sent, res(2), res(1)]) == ["answered-cancelled"]
    assert rules([call, cancel, ping], [*sent, res(1), res(2)]) == []
    assert rules([call, cancel, ping], [*sent, res(2)]) == []


def test_a_bogus_version_must_not_be_echoed() -> None:
    init = message_step(
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "x"}},
        "init",
        check=Check.BOGUS_VERSION,
    )
    assert rules([init], [Sent(step=0, t=0), res(1, {"protocolVersion": "x"})]) == ["version-negotiation"]
    assert rules([init], [Sent(step=0, t=0), res(1, {"protocolVersion": "2025-11-25"})]) == []


def test_http_statuses() -> None:
    bad_version = req(1, check=Check.STATUS_400)
    assert rules([bad_version], [Sent(step=0, t=0), HttpAnswer(step=0, t=1, status=200)]) == ["http-status"]
    assert rules([bad_version], [Sent(step=0, t=0), HttpAnswer(step=0, t=1, status=400)]) == []
    stale = req(1, check=Check.STATUS_404)  # no DELETE was accepted: nothing to judge
    assert rules([stale], [Sent(step=0, t=0), HttpAnswer(step=0, t=1, status=200)]) == []
    note = message_step({"jsonrpc": "2.0", "method": "notifications/x"}, "n")
    assert rules([note], [Sent(step=0, t=0), HttpAnswer(step=0, t=1, status=200)]) == ["http-status"]
    assert (
        rules([req(1)], [Sent(step=0, t=0), HttpAnswer(step=0, t=1, status=500), TimedOut(step=0, t=2)]) == []
    )


def test_tool_lists_are_judged() -> None:
    tools = [
        {"name": "ok", "inputSchema": {"type": "object"}},
        {"name": "ok", "inputSchema": {"type": "object", "required": True}},
        {"name": "has space", "inputSchema": {}, "outputSchema": {"type": "float"}},
    ]
    found = [f.rule for f in judge_tools(tools)]
    assert found == ["tool-input-schema", "tool-name", "tool-input-schema", "tool-name"]


def test_memory_and_leftover_processes() -> None:
    assert judge_memory([(0.0, 10 << 20)], 1) == []
    assert judge_memory([(0.0, 10 << 20), (1.0, 11 << 20)], 2 << 20) == []
    assert [f.rule for f in judge_memory([(0.0, 10 << 20), (1.0, 30 << 20)], 2 << 20)] == ["memory-growth"]
    assert judge_children([]) == []
    assert judge_children([(5, "sleep 60")])[0].rule == "leftover-process"


def test_findings_group_by_rule_method_and_cause() -> None:
    found = judge([req(1)], [Sent(step=0, t=0), TimedOut(step=0, t=1), Ended(t=1, alive=True)], CTX)
    assert found[0].key() == ("no-response", "ping", "")
    assert msgspec.json.decode(encode(msgspec.to_builtins(found[0])))["rule"] == "no-response"


def note(method: str = "notifications/cancelled") -> CaseStep:
    return message_step({"jsonrpc": "2.0", "method": method, "params": {"requestId": 1}}, method)


def test_two_causes_of_one_rule_are_two_findings() -> None:
    # A response to a notification and an id answered with another JSON type: one rule,
    # two causes, two keys (fixing one never reveals the other).
    steps = [req(1), note(), req(2)]
    records: list[Record] = [
        Sent(step=0, t=0), res("1"), Sent(step=1, t=0), res(None), Sent(step=2, t=0), res(2)
    ]
    found = judge(steps, [*records, Ended(t=1, alive=True)], CTX)
    assert sorted(f.key() for f in found) == [
        ("unknown-response-id", "notifications/cancelled", "answered-notification"),
        ("unknown-response-id", "ping", "id-type"),
    ]


def test_a_stray_response_after_later_answers_is_no_answer_to_the_notification() -> None:
    steps = [note(), req(1)]
    records: list[Record] = [Sent(step=0, t=0), Sent(step=1, t=0), res(1), res(77), Ended(t=1, alive=True)]
    assert [f.key() for f in judge(steps, records, CTX)] == [("unknown-response-id", None, "")]


def test_a_null_id_error_is_allowed_but_a_null_id_result_is_not() -> None:
    unreadable = res(None, error={"code": -32700, "message": "x"})
    assert rules([req(1)], [Sent(step=0, t=0), res(1), unreadable]) == []
    found = judge([req(1)], [Sent(step=0, t=0), res(1), res(None)], CTX)
    assert [f.key() for f in found] == [("unknown-response-id", None, "null-id")]


def test_a_late_answer_of_an_earlier_case_with_its_id_retyped_is_not_blamed_here() -> None:
    earlier = Context(version="2025-11-25", earlier_ids=frozenset({("integer", 9)}))
    assert rules([req(1)], [Sent(step=0, t=0), res(1), res("9")], earlier) == []


def init(version: str) -> CaseStep:
    params = {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "f", "version": "1"}}
    return message_step({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}, "initialize",
                        check=Check.RESULT)


def test_a_negotiated_version_no_revision_has_is_a_finding() -> None:
    info = {"name": "s", "version": "1"}
    answer = {"protocolVersion": "2024-13-45", "capabilities": {}, "serverInfo": info}
    found = judge([init("2025-11-25")], [Sent(step=0, t=0), res(1, answer)], CTX)
    assert [f.rule for f in found] == ["unknown-version"]
    for fine in ("2025-11-25", "2025-06-18", "2024-11-05"):
        ok = {**answer, "protocolVersion": fine}
        assert rules([init("2025-11-25")], [Sent(step=0, t=0), res(1, ok)]) == []


def test_a_call_of_an_unlisted_tool_must_not_succeed() -> None:
    call = req(1, "tools/call", check=Check.UNKNOWN_TOOL)
    assert rules([call], [Sent(step=0, t=0), res(1, {"content": []})]) == ["unknown-tool-accepted"]
    refused = res(1, error={"code": -32602, "message": "Unknown tool"})
    assert rules([call], [Sent(step=0, t=0), refused]) == []
    assert rules([call], [Sent(step=0, t=0), res(1, {"content": [], "isError": True})]) == []


def page(rid: int, cursor: str | None) -> CaseStep:
    params = {"cursor": cursor} if cursor else {}
    message = {"jsonrpc": "2.0", "id": rid, "method": "tools/list", "params": params}
    return message_step(message, "tools/list", check=Check.RESULT)


def test_a_cursor_that_comes_back_is_a_loop() -> None:
    same = [page(1, None), page(2, "a")]
    records = [Sent(step=0, t=0), res(1, {"tools": [], "nextCursor": "a"}),
               Sent(step=1, t=0), res(2, {"tools": [], "nextCursor": "a"})]
    assert rules(same, records) == ["cursor-loop"]
    cycle = [page(1, None), page(2, "a"), page(3, "b")]
    records = [Sent(step=0, t=0), res(1, {"tools": [], "nextCursor": "a"}),
               Sent(step=1, t=0), res(2, {"tools": [], "nextCursor": "b"}),
               Sent(step=2, t=0), res(3, {"tools": [], "nextCursor": "a"})]
    assert rules(cycle, records) == ["cursor-loop"]
    onward = [Sent(step=0, t=0), res(1, {"tools": [], "nextCursor": "a"}),
              Sent(step=1, t=0), res(2, {"tools": []})]
    assert rules(same, onward) == []


def test_unsent_steps_and_other_notifications_are_not_judged() -> None:
    log = Received(t=1, data=encode({"jsonrpc": "2.0", "method": "notifications/message", "params": {}}))
    assert rules([req(1), req(2)], [Sent(step=0, t=0), log, res(1), Ended(t=1, alive=True)]) == []
    garbage = raw_step(b"{not json", "bad")
    assert rules([garbage], [Sent(step=0, t=0), res(None, error={"code": -32700, "message": "x"})]) == []
    refused = req(1, check=Check.STATUS_400)
    assert (
        rules([refused], [Sent(step=0, t=0), HttpAnswer(step=0, t=1, status=400), TimedOut(step=0, t=2)])
        == []
    )


def test_over_http_a_cancel_counts_once_accepted_before_the_ping() -> None:
    call = req(1, "tools/call", expect=Expect.CANCELLED, timeout=0.0)
    cancel = message_step(
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}},
        "cancel",
        cancels=1,
    )
    ping = req(2, check=Check.PING)
    sent = [Sent(step=0, t=0), Sent(step=1, t=1), Sent(step=2, t=2)]
    late = HttpAnswer(step=1, t=3, status=202)
    early = HttpAnswer(step=1, t=1.5, status=202)
    assert rules([call, cancel, ping], [*sent, late, res(2), res(1)]) == []
    assert rules([call, cancel, ping], [*sent, early, res(2), res(1)]) == ["answered-cancelled"]


def test_a_deleted_session_must_get_404_once_the_delete_was_accepted() -> None:
    delete = CaseStep(label="DELETE", expect=Expect.NOTHING, http_method="DELETE", timeout=0.0)
    stale = req(1, check=Check.STATUS_404)
    sent = [Sent(step=0, t=0), Sent(step=1, t=1)]
    ok = HttpAnswer(step=0, t=0.5, status=200)
    assert rules([delete, stale], [*sent, ok, HttpAnswer(step=1, t=2, status=200), res(1)]) == [
        "session-reuse"
    ]
    refused = HttpAnswer(step=0, t=0.5, status=405)
    assert rules([delete, stale], [*sent, refused, HttpAnswer(step=1, t=2, status=200), res(1)]) == []


def test_progress_of_a_request_from_an_earlier_case_is_tolerated() -> None:
    progress = Received(
        t=1,
        data=encode(
            {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "old"}}
        ),
    )
    ctx = Context(version="2025-11-25", earlier_tokens=frozenset({("string", "old")}))
    assert rules([req(1)], [Sent(step=0, t=0), progress, res(1)], ctx) == []


def test_an_error_that_reports_the_cancellation_is_an_answer_to_it() -> None:
    call = req(1, "tools/call", expect=Expect.CANCELLED, timeout=0.0)
    cancel = message_step(
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}},
        "cancel",
        cancels=1,
    )
    ping = req(2, check=Check.PING)
    sent = [Sent(step=0, t=0), Sent(step=1, t=1), Sent(step=2, t=2)]
    said = res(1, error={"code": -32800, "message": "Request cancelled"})
    assert rules([call, cancel, ping], [*sent, said, res(2)]) == ["answered-cancelled"]
    failed = res(1, error={"code": -32603, "message": "boom"})
    assert rules([call, cancel, ping], [*sent, failed, res(2)]) == []
    early = [Sent(step=0, t=0), said, Sent(step=1, t=1), Sent(step=2, t=2), res(2)]
    assert rules([call, cancel, ping], early) == []


def test_input_required_results_are_checked() -> None:
    call = req(1, "tools/call", check=Check.RESULT)
    sent = [Sent(step=0, t=0)]
    empty = res(1, {"resultType": "input_required"})
    assert rules([call], [*sent, empty]) == ["input-required"]
    asks = res(
        1, {"resultType": "input_required", "inputRequests": {"k": {"method": "sampling/createMessage"}}}
    )
    assert rules([call], [*sent, asks]) == ["input-required"]
    allowed = Context(version="2026-07-28", client_capabilities={"sampling": {}})
    assert rules([call], [*sent, asks], allowed) == []
    odd = res(1, {"resultType": "input_required", "requestState": "s", "inputRequests": {"k": 1, "j": {}}})
    assert rules([call], [*sent, odd]) == []


def test_over_http_an_error_without_id_is_allowed() -> None:
    http = Context(version="2025-11-25", stdio=False)
    bare = Received(t=1, data=b'{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request"}}')
    assert rules([req(1)], [Sent(step=0, t=0), bare, res(1)], http) == []
    assert rules([req(1)], [Sent(step=0, t=0), bare, res(1)]) == ["malformed-message"]


def test_a_batch_answer_is_judged_message_by_message() -> None:
    batch = raw_step(
        b'[{"jsonrpc":"2.0","id":7,"method":"ping"},{"jsonrpc":"2.0","id":8,"method":"ping"}]', "b"
    )
    answer = Received(
        t=1, data=b'[{"jsonrpc":"2.0","id":7,"result":{}},{"jsonrpc":"2.0","id":8,"result":{}}]'
    )
    assert rules([batch], [Sent(step=0, t=0), answer]) == []
    stray = Received(t=1, data=b'[{"jsonrpc":"2.0","id":9,"result":{}}]')
    assert rules([batch], [Sent(step=0, t=0), stray]) == ["unknown-response-id"]


def test_over_http_a_ping_before_the_session_may_be_refused_with_400() -> None:
    ping = req(1, check=Check.PING)
    no_session = res(1, error={"code": -32000, "message": "no session"})
    refused = [Sent(step=0, t=0), HttpAnswer(step=0, t=0.5, status=400), no_session]
    http_before = Context(version="2025-11-25", stdio=False, initialized=False)
    assert rules([ping], refused, http_before) == []
    http_after = Context(version="2025-11-25", stdio=False, initialized=True)
    assert rules([ping], refused, http_after) == ["ping-unanswered"]  # the session was open
    stdio_before = Context(version="2025-11-25", initialized=False)
    assert rules([ping], [Sent(step=0, t=0), no_session], stdio_before) == ["ping-unanswered"]
    opened = [req(0, "initialize"), ping]
    sent = [Sent(step=0, t=0), res(0), Sent(step=1, t=1), HttpAnswer(step=1, t=1.5, status=400), no_session]
    assert rules(opened, sent, http_before) == ["ping-unanswered"]  # initialize came first


def test_a_call_refused_for_a_missing_client_capability_says_nothing_of_its_arguments() -> None:
    call = req(1, "tools/call", check=Check.INVALID_ARGS)
    needs_tasks = res(1, error={"code": -32021, "message": "runs only as a task",
                                "data": {"requiredCapabilities": {"extensions": {"tasks": {}}}}})
    assert rules([call], [Sent(step=0, t=0), needs_tasks]) == []
    other = res(1, error={"code": -32021, "message": "something else"})
    assert rules([call], [Sent(step=0, t=0), other]) == ["invalid-arguments-code"]


def answered(step: CaseStep, status: int, **fields: object) -> list[Record]:
    return [Sent(step=0, t=0), HttpAnswer(step=0, t=1, status=status, **fields), res(1)]  # type: ignore[arg-type]


def test_a_foreign_origin_must_get_403() -> None:
    ping = req(1, check=Check.STATUS_403)
    assert [f.key() for f in judge([ping], answered(ping, 200), CTX)] == [
        ("origin-not-validated", "ping", "request")
    ]
    assert rules([ping], answered(ping, 403)) == []
    delete = CaseStep(label="DELETE", http_method="DELETE", expect=Expect.NOTHING, check=Check.STATUS_403)
    found = judge([delete], [Sent(step=0, t=0), HttpAnswer(step=0, t=1, status=204)], CTX)
    assert [f.key() for f in found] == [("origin-not-validated", None, "delete")]


def test_missing_or_forged_tokens_must_get_401_with_a_way_to_the_metadata() -> None:
    ping = req(1, check=Check.STATUS_401)
    assert rules([ping], answered(ping, 404)) == ["auth-status"]
    meta = 'Bearer resource_metadata="https://a.example/.well-known/oauth-protected-resource/mcp"'
    assert rules([ping], answered(ping, 401, challenge=meta)) == []
    assert rules([ping], answered(ping, 401, challenge="Bearer")) == ["auth-discovery"]
    metadata = "/.well-known/oauth-protected-resource"
    lookup = CaseStep(label="GET", http_method="GET", expect=Expect.NOTHING, path=metadata)
    records: list[Record] = [
        Sent(step=0, t=0), HttpAnswer(step=0, t=0, status=200),
        Sent(step=1, t=0), HttpAnswer(step=1, t=1, status=401, challenge="Bearer"),
    ]
    assert rules([lookup, ping], records) == []  # the well-known URI is the other way


def test_another_principal_must_not_use_a_session() -> None:
    ping = req(1, check=Check.OTHER_PRINCIPAL)
    assert rules([ping], answered(ping, 200)) == ["session-not-bound"]
    assert rules([ping], answered(ping, 404)) == []


def opened(*sids: str) -> tuple[list[CaseStep], list[Record]]:
    steps = [init("2025-11-25") for _ in sids]
    records: list[Record] = []
    for index, sid in enumerate(sids):
        records += [Sent(step=index, t=0), HttpAnswer(step=index, t=0, status=200, session=sid)]
    return steps, records


def test_session_ids_must_be_visible_ascii_and_unguessable() -> None:
    steps, records = opened("3f1c0d3e-8a7b-4e59-9a0f-2b6c1d7e8f90", "9b8a7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d")
    assert [f for f in judge(steps, records, CTX) if f.rule == "session-id"] == []
    for sids in (("s-1", "s-2"), ("sess-0000000000000041", "sess-0000000000000042"), ("x" * 20, "x" * 20)):
        steps, records = opened(*sids)
        assert "session-id" in [f.rule for f in judge(steps, records, CTX)], sids
    steps, records = opened("caf\u00e9" + "a" * 30)
    assert [f.cause for f in judge(steps, records, CTX) if f.rule == "session-id"] == ["characters"]


def test_a_late_http_answer_of_an_earlier_case_is_ignored() -> None:
    assert rules([req(1)], [Sent(step=0, t=0), HttpAnswer(step=3, t=0, status=202), res(1)]) == []


def test_silence_on_a_learnt_wait_shorter_than_the_timeout_is_inconclusive() -> None:
    ping = req(1, check=Check.PING, timeout=5.0)
    short = judge([ping], [Sent(step=0, t=0), TimedOut(step=0, t=2), Ended(t=2, alive=True)], CTX)
    assert [(f.rule, f.conclusive) for f in short] == [("ping-unanswered", False)]
    full = judge([ping], [Sent(step=0, t=0), TimedOut(step=0, t=5), Ended(t=5, alive=True)], CTX)
    assert [(f.rule, f.conclusive) for f in full] == [("ping-unanswered", True)]
