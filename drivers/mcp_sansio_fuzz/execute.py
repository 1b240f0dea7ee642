"""Sending one sequence of steps on a connection and recording what happens: the runner's
inner loop, also used by the shrinker's replays and by ``mcp-sansio replay``."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from mcp_sansio.fuzz.case import CaseStep, Expect
from mcp_sansio.fuzz.peer import answer_id
from mcp_sansio.fuzz.records import Ended, HttpAnswer, Received, Record, Sent, TimedOut, id_key, loose_id

from .connections import Connection

__all__ = ["execute"]


def execute(
    conn: Connection,
    steps: Sequence[CaseStep],
    sampler: Callable[[], None] | None = None,
    settle: float = 5.0,
    follow: Callable[[CaseStep, bytes], list[CaseStep]] | None = None,
    wait: Callable[[CaseStep], float] | None = None,
    until: float | None = None,
) -> list[Record]:
    """Send ``steps`` on ``conn``, waiting for answers as each step says, and record it all.

    With ``follow``, the answer to a step marked ``follow`` is handed to it and the steps it
    returns are sent after the others (``steps`` must then be a list: they are appended).
    ``wait`` says how long to wait for a step's answer (default: its ``timeout``); nothing
    is sent, and nothing waited for, past ``until`` (a monotonic time). A response whose id
    has the wrong JSON type (``"1"`` for ``1``) ends the wait for its request: the oracles
    blame the id, and the budget is not spent waiting for an answer that came.
    """
    records: list[Record] = []
    waiting: dict[tuple[str, object], int] = {}
    end = float("inf") if until is None else until

    def matched(rid: object) -> int | None:
        index = waiting.pop(id_key(rid), None)
        if index is None and rid is not None:
            twin = next((k for k in waiting if k[0] != "http" and loose_id(k[1]) == loose_id(rid)), None)
            index = waiting.pop(twin, None) if twin is not None else None
        return index

    def pump(deadline: float, want: tuple[str, object] | None) -> None:
        deadline = min(deadline, end)
        while conn.alive():
            now = time.monotonic()
            if (
                now >= deadline
                or (want is not None and want not in waiting)
                or (want is None and not waiting)
            ):
                return
            for record in conn.poll(min(deadline - now, 0.05)):
                records.append(record)
                if isinstance(record, Received):
                    found, rid = answer_id(record.data)
                    if found and rid is None and waiting:  # an unreadable request's error: stop waiting
                        rid = list(waiting)[-1][1]
                    index = matched(rid) if found else None
                    if follow is not None and index is not None and steps[index].follow:
                        assert isinstance(steps, list)
                        steps.extend(follow(steps[index], record.data))
                elif isinstance(record, HttpAnswer):
                    waiting.pop(("http", record.step), None)  # a bodiless exchange was answered
                    if record.status >= 400:
                        for key in [k for k, v in waiting.items() if v == record.step]:
                            waiting.pop(key)
            if sampler is not None:
                sampler()

    for index, step in enumerate(steps):
        if not conn.alive() or time.monotonic() >= end:
            break
        now = time.monotonic()
        conn.send(index, step, now)
        records.append(Sent(step=index, t=now))
        key = (
            id_key(step.id)
            if step.id is not None and step.expect in (Expect.RESPONSE, Expect.CANCELLED)
            else None
        )
        if key is None and step.http_method != "POST" and step.timeout > 0:
            # A GET or DELETE whose answer later steps depend on (a stale session must get
            # 404 only once its DELETE was accepted): wait for its status, record no timeout.
            waiting[("http", index)] = index
            pump(now + step.timeout, ("http", index))
            waiting.pop(("http", index), None)
            continue
        if key is not None:
            waiting[key] = index
        if key is not None and step.timeout > 0:
            # A learnt wait only while nothing slow is in flight: a server that answers in
            # order may hold a ping behind a long tool call.
            slow = any(steps[i].patient for i in waiting.values() if i != index)
            due = now + (wait(step) if wait is not None and not slow else step.timeout)
            pump(due, key)
            if key in waiting:  # given up: a late answer is still recorded, but not waited for
                if due <= end:  # cut short by ``until``: no verdict on its silence
                    records.append(TimedOut(step=index, t=time.monotonic()))
                del waiting[key]
        else:
            pump(now + 0.02, ("", "never"))
    last = time.monotonic()
    # Silence from a patient request (a tool call) is no finding by itself: wait briefly for
    # a late answer (to judge it), fully only for requests that must be answered.
    urgent = any(not steps[i].patient for i in waiting.values())
    due = last + (settle if urgent else min(settle, 0.5))
    pump(due, None)
    for index in sorted(waiting.values()) if due <= end else []:
        records.append(TimedOut(step=index, t=time.monotonic()))
    pump(time.monotonic() + 0.05, ("", "never"))
    records.append(Ended(t=time.monotonic(), alive=conn.alive(), returncode=conn.returncode()))
    return records
