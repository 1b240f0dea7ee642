"""The fuzzer's protocol planner (deterministic by seed, era-aware), trace format
(round trip, every byte kept) and shrinker (delta debugging)."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_sansio.fuzz import (
    Planner,
    Received,
    Record,
    Rng,
    Sent,
    Surface,
    TraceError,
    ddmin,
    dump_trace,
    load_trace,
)
from mcp_sansio.fuzz.case import Check, Expect, Replies, raw_step
from mcp_sansio.fuzz.plan_http import http_cases, http_fresh_cases

SURFACE = Surface(
    capabilities={
        "tools": {},
        "resources": {"subscribe": True},
        "prompts": {},
        "logging": {},
        "completions": {},
    },
    tools=[
        {
            "name": "add",
            "inputSchema": {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "s": {"type": "string"}},
                "required": ["a"],
            },
        }
    ],
    resources=[{"uri": "file:///a"}],
    templates=[{"uriTemplate": "notes://{name}/x", "name": "notes"}],
    prompts=[{"name": "p", "arguments": [{"name": "x", "required": True}]}],
)


def _bytes(planner: Planner) -> list[bytes]:
    return [step.data for case in (planner.fresh_cases() + planner.cases(SURFACE)) for step in case.steps]


def test_the_same_seed_plans_the_same_bytes() -> None:
    assert _bytes(Planner(Rng(3), "2025-11-25")) == _bytes(Planner(Rng(3), "2025-11-25"))
    assert _bytes(Planner(Rng(3), "2025-11-25")) != _bytes(Planner(Rng(4), "2025-11-25"))


def test_a_round_covers_tools_protocol_resources_and_prompts() -> None:
    names = {case.name for case in Planner(Rng(1), "2025-11-25").cases(SURFACE)}
    assert {
        "add valid",
        "add deep argument",
        "add huge string",
        "add cancelled",
        "add concurrent calls",
        "unknown method",
        "invalid UTF-8",
        "null id",
        "tools/list forged cursor",
        "read file:///a",
        "read template notes://{name}/x",
        "subscribe storm",
        "prompt p",
        "complete p",
        "logging bogus level",
    } <= names


def test_every_case_ends_with_a_liveness_probe() -> None:
    for case in Planner(Rng(1), "2025-11-25").cases(SURFACE):
        assert case.steps[-1].method == "ping"


def test_handshake_era_opens_with_initialize() -> None:
    planner = Planner(Rng(1), "2025-06-18")
    assert [s.method for s in planner.opening()] == ["initialize", "notifications/initialized"]
    assert {c.name for c in planner.fresh_cases()} == {
        "ping first",
        "request before initialize",
        "initialized missing",
        "second initialize",
        "unknown protocol version",
    }


def test_stateless_era_carries_meta_and_probes_with_discover() -> None:
    planner = Planner(Rng(1), "2026-07-28")
    assert [s.method for s in planner.opening()] == ["server/discover"]
    assert planner.ping().method == "server/discover"
    assert b"io.modelcontextprotocol/protocolVersion" in planner.request("tools/list").data
    assert [c.name for c in planner.fresh_cases()] == ["ping first"]
    assert "subscribe storm" not in {c.name for c in planner.cases(SURFACE)}


def test_unknown_versions_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown protocol version"):
        Planner(Rng(1), "1999-01-01")


def test_surface_learns_pages() -> None:
    surface = Surface(capabilities={"tools": {}})
    assert surface.offers("tools/list") and not surface.offers("prompts/list")
    assert surface.learn("tools/list", {"tools": [{"name": "a"}, 3], "nextCursor": "c"}) == "c"
    assert surface.learn("tools/list", {"tools": "no"}) is None
    assert surface.learn("tools/list", None) is None
    assert [t["name"] for t in surface.tools] == ["a"]


def test_traces_round_trip_every_byte() -> None:
    planner = Planner(Rng(1), "2025-11-25")
    steps = [
        *planner.opening(),
        raw_step(b"\xff\xfe", "bad utf-8"),
        raw_step(b"{ }", "spaced"),
        planner.ping(),
    ]
    records: list[Record] = [
        Sent(step=0, t=10.0),
        Received(t=10.5, data=b'{"jsonrpc":"2.0","id":1,"result":{}}'),
        Received(t=10.6, data=b"not json"),
    ]
    data = dump_trace({"rule": "x"}, steps, records)
    lines = data.splitlines()
    assert b'"mcp-sansio-trace":1' in lines[0]
    assert b'"dir":"recv","t":0.5' in lines[2]
    trace = load_trace(data)
    assert trace.header["rule"] == "x"
    assert [s.data for s in trace.steps] == [s.data for s in steps]
    assert trace.steps[2].expect is Expect.ANY


def test_broken_traces_are_refused() -> None:
    for data in (b"", b"[]", b'{"mcp-sansio-trace": 2}', b'{"mcp-sansio-trace": 1}\n{'):
        with pytest.raises(TraceError):
            load_trace(data)
    trace = load_trace(
        b'{"mcp-sansio-trace": 1}\n{"dir":"recv"}\n{"dir":"send","text":"x"}\n{"dir":"send"}\n'
    )
    assert [(s.label, s.data) for s in trace.steps] == [("line 3", b"x"), ("line 4", b"")]


def test_ddmin_finds_a_minimal_failing_subsequence() -> None:
    assert ddmin(list(range(16)), lambda s: 3 in s and 11 in s) == [3, 11]
    assert ddmin(list(range(8)), lambda s: 5 in s, keep=lambda i: i == 0) == [0, 5]
    calls: list[int] = []

    def fails(s: list[int]) -> bool:
        calls.append(1)
        return 7 in s

    ddmin(list(range(64)), fails, budget=5)
    assert len(calls) == 5
    assert ddmin([1, 2], lambda s: len(s) == 2) == [1, 2]


def test_the_fuzz_client_paces_on_responses_and_refuses_server_requests() -> None:
    from mcp_sansio.fuzz.peer import answer_key, reply_for

    assert answer_key(b'{"jsonrpc":"2.0","id":3,"result":{}}') == ("integer", 3)
    assert answer_key(b'{"jsonrpc":"2.0","id":3,"method":"ping"}') is None
    assert answer_key(b"nope") is None
    ping = b'{"jsonrpc":"2.0","id":"a","method":"ping"}'
    assert reply_for(ping) == (b'{"jsonrpc":"2.0","id":"a","result":{}}', 0.0)
    assert reply_for(ping, Replies.NEVER) == (b'{"jsonrpc":"2.0","id":"a","result":{}}', 0.0)
    roots = b'{"jsonrpc":"2.0","id":4,"method":"roots/list"}'
    refused = reply_for(roots)
    assert refused is not None and b'"code":-32601' in refused[0]
    assert reply_for(b'{"jsonrpc":"2.0","method":"notifications/x"}') is None
    assert reply_for(b'{"jsonrpc":"2.0","id":true,"method":"x"}') is None
    assert reply_for(b"[1]") is None


def test_server_requests_are_answered_as_the_case_says() -> None:
    from mcp_sansio.fuzz.peer import LATE_DELAY, reply_for

    sampling = b'{"jsonrpc":"2.0","id":9,"method":"sampling/createMessage","params":{}}'
    assert reply_for(sampling, Replies.NEVER) is None
    wrong = reply_for(sampling, Replies.WRONG)
    assert wrong is not None and b"fits no schema" in wrong[0] and wrong[1] == 0.0
    late = reply_for(sampling, Replies.LATE)
    assert late is not None and b'"model":"fuzz"' in late[0] and late[1] == LATE_DELAY
    other = reply_for(b'{"jsonrpc":"2.0","id":9,"method":"tasks/list"}', Replies.LATE)
    assert other is not None and b"-32601" in other[0]


def test_input_cases_declare_capabilities_and_call_every_tool() -> None:
    cases = Planner(Rng(1), "2025-11-25").input_cases(SURFACE)
    assert [(c.replies, c.fresh) for c in cases] == [
        (Replies.WRONG, True),
        (Replies.NEVER, True),
        (Replies.LATE, True),
    ]
    assert cases[0].capabilities == {
        "sampling": {},
        "elicitation": {"form": {}},
        "roots": {"listChanged": True},
    }
    assert b'"sampling":{}' in cases[0].steps[0].data
    assert [s.method for s in cases[0].steps] == [
        "initialize",
        "notifications/initialized",
        "tools/call",
        "ping",
    ]
    assert [c.name for c in Planner(Rng(1), "2026-07-28").input_cases(SURFACE)] == ["input rounds"]
    assert Planner(Rng(1), "2025-11-25").input_cases(Surface()) == []


def test_small_surfaces_plan_fewer_cases() -> None:
    planner = Planner(Rng(2), "2025-11-25")
    assert b'"cursor":"c1"' in planner.list_page("tools/list", "c1").data
    bare = Surface(
        capabilities={"tools": {}, "prompts": {}},
        tools=[{"name": "n", "inputSchema": {"type": "object", "properties": {"k": {"type": "integer"}}}}],
        prompts=[{"name": "q"}],
    )
    names = {case.name for case in planner.cases(bare)}
    assert "n huge string" not in names
    assert "read unknown resource" not in names
    assert "complete q" not in names
    assert "prompt q" in names


def test_traces_skip_http_records() -> None:
    from mcp_sansio.fuzz import HttpAnswer

    planner = Planner(Rng(1), "2025-11-25")
    data = dump_trace({}, [planner.ping()], [Sent(step=0, t=0.0), HttpAnswer(step=0, t=0.1, status=200)])
    assert len(data.splitlines()) == 2


def test_http_cases_follow_the_era() -> None:
    handshake = Planner(Rng(1), "2025-11-25")
    assert [c.name for c in http_cases(handshake)] == [
        "foreign Origin",
        "huge body",
        "bogus protocol version header",
        "forged session id",
        "no session id",
        "accept: text/html",
        "content-type: text/plain",
        "forged Last-Event-ID",
    ]
    assert [s.http_method for s in http_fresh_cases(handshake)[0].steps] == [
        "POST",
        "POST",
        "DELETE",
        "POST",
    ]
    two = http_fresh_cases(handshake, (("authorization", "Bearer b"),))[1]
    assert two.name == "another client's session"
    assert [(s.session, s.check) for s in two.steps][4:] == [
        ("#0", Check.OTHER_PRINCIPAL),
        ("#0", Check.STATUS_403),
        ("#0", Check.STATUS_403),
        ("#0", Check.NONE),
    ]
    assert http_fresh_cases(handshake)[1].steps[4].check is Check.NONE  # one principal: no verdict
    authed = [c.name for c in http_cases(handshake, auth=True)]
    assert authed[2:4] == ["request without a token", "request with a forged token"]
    old = Planner(Rng(1), "2024-11-05")
    assert [c.name for c in http_cases(old)] == [
        "foreign Origin",
        "huge body",
        "forged session id",
        "no session id",
        "accept: text/html",
        "content-type: text/plain",
    ]
    modern = Planner(Rng(1), "2026-07-28")
    assert [c.name for c in http_cases(modern)] == [
        "foreign Origin",
        "huge body",
        "bogus protocol version header",
        "Mcp-Method mismatch",
        "accept: text/html",
        "content-type: text/plain",
    ]
    named = http_cases(modern, SURFACE)[4]
    assert named.name == "Mcp-Name mismatch"
    assert ("mcp-name", "fuzz-other-tool") in named.steps[0].headers
    assert ("mcp-method", "tools/call") in named.steps[0].headers
    accept = http_cases(modern)[4].steps[0].headers
    assert ("accept", "text/html") in accept and ("mcp-method", "server/discover") in accept
    bogus = http_cases(modern)[2].steps[0].headers
    assert [v for k, v in bogus if k == "mcp-protocol-version"] == ["fuzz-0000"]
    note = modern.notification("notifications/cancelled", {"requestId": 1})
    assert note.headers == (("mcp-protocol-version", "2026-07-28"), ("mcp-method", "notifications/cancelled"))
    assert http_fresh_cases(modern) == []


def test_an_input_required_answer_is_retried_tampered_then_replayed() -> None:
    planner = Planner(Rng(1), "2026-07-28")
    case = planner.input_cases(SURFACE)[0]
    call = case.steps[0]
    assert call.follow and case.fresh
    assert b'"io.modelcontextprotocol/clientCapabilities":{"sampling":{}' in call.data
    answer = (
        b'{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","requestState":"state-12345678",'
        b'"inputRequests":{"a":{"method":"elicitation/create","params":{}},"b":"junk"}}}'
    )
    steps = planner.follow_up(call, answer)
    assert [s.label.rsplit("requestState ", 1)[-1] for s in steps[:3]] == [
        "tampered",
        "replayed",
        "replayed twice",
    ]
    assert b'"requestState":"state-1234fuzz"' in steps[0].data
    assert b'"requestState":"state-12345678"' in steps[1].data
    assert b'"inputResponses":{"a":{"action":"decline"}}' in steps[0].data
    assert steps[-1].method == "server/discover"
    short = b'{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","requestState":"s"}}'
    assert b'"requestState":"sfuzz"' in planner.follow_up(call, short)[0].data
    no_state = b'{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","inputRequests":{}}}'
    assert [b"requestState" in s.data for s in planner.follow_up(call, no_state)] == [False, False, False]
    assert planner.follow_up(call, b'{"jsonrpc":"2.0","id":1,"result":{"content":[]}}') == []
    assert planner.follow_up(call, b"garbage") == []
    bare = raw_step(b'{"jsonrpc":"2.0","id":1,"method":"x"}', "no params")
    assert planner.follow_up(bare, answer) == []  # nothing to retry without params


@given(
    st.binary(max_size=200)
    | st.lists(
        st.sampled_from(
            [
                b'{"mcp-sansio-trace":1}',
                b'{"dir":"send","b64":"!!"}',
                b'{"dir":"send","step":{"expect":"x"}}',
                b'{"dir":"send","step":[1]}',
                b'{"dir":"send","msg":{"a":[1,2]}}',
                b"\xff",
                b"{",
                b'{"dir":"recv"}',
            ]
        )
    ).map(b"\n".join)
)
def test_loading_any_bytes_raises_only_trace_error(data: bytes) -> None:
    with contextlib.suppress(TraceError):
        load_trace(data)
