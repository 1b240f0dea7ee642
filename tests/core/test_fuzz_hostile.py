"""Hostile-server mode's pure half: each scenario's server answers the client's script as a
good server would except for its one hostile turn, and the client oracles tell handled
from crashed, hung, wedged, bloated, untyped or version-blind."""

from __future__ import annotations

import msgspec
import pytest

from mcp_sansio.fuzz.hostile import SCENARIOS, ClientOutcome, Emit, HostileServer, judge_client
from mcp_sansio.fuzz.rng import Rng

INIT = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}'
LIST = b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}'
CALL = b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}'


def server(name: str, size: int | None = None) -> HostileServer:
    return HostileServer(name, Rng(0).fork(name), size)


def answers(emits: list[Emit]) -> list[object]:
    return [msgspec.json.decode(e.data) for e in emits]


def test_a_plain_turn_is_answered_as_a_good_server_would() -> None:
    hostile = server("duplicate-answer")
    (init,) = answers(hostile.receive(INIT))
    assert init == {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "mcp-sansio-hostile-duplicate-answer", "version": "1"},
        },
    }
    assert hostile.receive(b'{"jsonrpc":"2.0","method":"notifications/initialized"}') == []
    assert answers(hostile.receive(CALL)) == [
        {"jsonrpc": "2.0", "id": 3, "result": {"content": [{"type": "text", "text": "hi"}]}}
    ]
    assert len(hostile.receive(LIST)) == 2  # its hostile turn: the answer twice


def test_each_scenario_turns_hostile_where_it_says() -> None:
    bad = server("invalid-utf8").receive(LIST)
    with pytest.raises(UnicodeDecodeError):
        bad[0].data.decode("utf-8")
    endless = server("unbounded-line", size=4 << 20).receive(LIST)
    assert [e.newline for e in endless] == [False, False] and endless[1].times == 4
    (version,) = answers(server("unsupported-version").receive(INIT))
    assert version["result"]["protocolVersion"] == "1999-01-01"  # type: ignore[index]
    cursor = server("endless-cursor")
    assert [answers(cursor.receive(LIST))[0]["result"]["nextCursor"] for _ in range(2)] == ["fuzz-again"] * 2  # type: ignore[index]
    (drip,) = server("progress-drip", size=7).receive(CALL)
    assert drip.times == 7 and drip.every == 0.05 and b"notifications/progress" in drip.data
    flood = server("request-flood", size=2500).receive(LIST)
    assert sum(e.data.count(b'"method":"ping"') for e in flood) == 2500
    wrong = answers(server("wrong-id").receive(CALL))
    assert [m["id"] for m in wrong] == ["3", 987654321]  # type: ignore[index]
    assert len(server("huge-json", size=1 << 20).receive(LIST)[0].data) > 1 << 20
    assert server("deep-json", size=5000).receive(LIST)[0].data.count(b"[") >= 5000
    (slow,) = server("slow-drip").receive(INIT)
    assert slow.drip == 1 and slow.every == 0.02
    assert server("not-json").receive(INIT)[0].data.startswith(b"hello")


def outcome(returncode: int | None, output: str = "", **fields: object) -> ClientOutcome:
    return msgspec.convert(
        {"returncode": returncode, "elapsed": 1.0, "timeout": 5.0, "output": output, **fields}, ClientOutcome
    )


def rules(scenario: str, result: ClientOutcome) -> list[str]:
    return [f.rule for f in judge_client(scenario, result, 128 << 20)]


def test_a_client_that_finishes_or_refuses_cleanly_is_fine() -> None:
    assert rules("duplicate-answer", outcome(0, "ok")) == []
    assert rules("wrong-id", outcome(1, "error: TimeoutError: tools/call")) == []


def test_crashes_hangs_and_wedges_are_told_apart() -> None:
    uncaught = 'Traceback (most recent call last):\n  File "c.py", line 3\n    x()\nUnicodeDecodeError: bad'
    assert rules("invalid-utf8", outcome(1, uncaught)) == ["client-crashed"]
    logged = uncaught + "\nerror: Failed: tools/list timed out"
    assert rules("deep-json", outcome(1, logged)) == []  # a logged traceback, then its own report
    assert rules("invalid-utf8", outcome(1, logged)) == ["client-wedged"]
    assert rules("wrong-id", outcome(None)) == ["client-hung"]
    assert rules("wrong-id", outcome(-11)) == ["client-crashed"]
    assert rules("deep-json", outcome(1, "file.js:1\n\nError: x\n    at f\n\nNode.js v22.1.0")) == [
        "client-crashed"
    ]


def test_memory_groups_versions_and_cursors() -> None:
    assert rules("huge-json", outcome(0, rss_growth=200 << 20)) == ["client-memory"]
    assert rules("unbounded-line", outcome(1, sent=30 << 20, rss_growth=29 << 20)) == ["client-memory"]
    assert rules("unbounded-line", outcome(1, sent=30 << 20, rss_growth=1 << 20)) == []  # it discarded
    assert rules("unbounded-line", outcome(1, sent=1 << 20, rss_growth=1 << 20)) == []  # it refused early
    group = "error: ExceptionGroup: unhandled errors in a TaskGroup (1 sub-exception)"
    assert rules("unsupported-version", outcome(1, group)) == ["client-untyped-error"]
    assert rules("unsupported-version", outcome(0, "ok", after_version=3)) == [
        "client-kept-unsupported-version"
    ]
    assert rules("endless-cursor", outcome(None, lists=500)) == ["client-hung", "client-endless-pagination"]


def test_every_scenario_has_a_summary() -> None:
    assert len(SCENARIOS) == 13 and [s.name for s in SCENARIOS.values() if s.http_only] == ["session-expiry"]
    assert all(s.summary for s in SCENARIOS.values())
