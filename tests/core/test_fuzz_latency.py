"""The fuzzer's learnt latency: prompt requests wait a multiple of the server's recent
round trips, patient ones their own timeout; renumbering for repeated replays."""

from __future__ import annotations

from mcp_sansio.fuzz import CaseStep, Received, Record, Sent
from mcp_sansio.fuzz.case import encode, message_step
from mcp_sansio.fuzz.latency import Latency
from mcp_sansio.fuzz.wire import renumbered


def ping(rid: int, **fields: object) -> CaseStep:
    return message_step({"jsonrpc": "2.0", "id": rid, "method": "ping"}, "ping", **fields)


def test_waits_use_the_step_timeout_until_the_server_was_seen() -> None:
    latency = Latency(floor=0.5, factor=10.0)
    step = ping(1, timeout=5.0)
    assert latency.wait(step) == 5.0
    for _ in range(3):
        latency.observe(0.01)
    assert latency.wait(step) == 0.5
    latency.observe(0.2)
    assert latency.wait(step) == 2.0
    assert latency.wait(ping(2, timeout=5.0, patient=True)) == 5.0
    latency.observe(3.0)
    assert latency.wait(step) == 5.0  # never past the step's own timeout


def test_latency_is_learnt_from_records() -> None:
    latency = Latency(floor=0.1, factor=2.0)
    steps = [ping(i) for i in (1, 2, 3)]
    records: list[Record] = []
    for index, rid in enumerate((1, 2, 3)):
        answer = encode({"jsonrpc": "2.0", "id": rid, "result": {}})
        records += [Sent(step=index, t=float(rid)), Received(t=rid + 0.25, data=answer)]
    latency.learn(steps, records)
    assert latency.bound() == 0.5


def test_renumbered_moves_request_and_cancelled_ids() -> None:
    step = ping(7)
    moved = renumbered(step, 1000)
    assert moved.id == 1007 and b'"id":1007' in moved.data
    cancel = message_step({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}},
                          "cancel", cancels=7)
    assert renumbered(cancel, 10).cancels == 17
    garbage = message_step({"jsonrpc": "2.0", "method": "notifications/x"}, "x")
    assert renumbered(garbage, 10) is garbage
