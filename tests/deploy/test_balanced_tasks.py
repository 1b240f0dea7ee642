"""Tasks (the tasks extension, 2026-07-28) through a real balancer: HAProxy in round-robin in
front of 3 ``mcp-sansio serve --http --store redis://...`` workers. A task runs on the worker
that started it; every worker reports it, takes its answers and cancels it (the cancellation
reaches the handler), and a worker killed with ``kill -9`` while running a task leaves it
``failed`` with a typed error within a bounded time, never ``working`` for ever.
"""

from __future__ import annotations

import functools
import http.client
import itertools
import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_sansio.sse import SseParser

from .cluster import Cluster, Proc, serve_cluster, uvicorn_cluster

TASKS = "io.modelcontextprotocol/tasks"
WITH_TASKS: dict[str, object] = {"extensions": {TASKS: {}}, "elicitation": {}}
_ids = itertools.count(1)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with serve_cluster(tmp_path_factory.mktemp("haproxy-tasks")) as running:
        yield running


@pytest.fixture
def own_cluster(tmp_path: Path) -> Iterator[Cluster]:
    with serve_cluster(tmp_path) as running:
        yield running


def port_of(url: str) -> int:
    return int(url.split(":")[2].split("/", maxsplit=1)[0])


def at(worker: Proc) -> int:
    """The port of ``worker`` itself (past the balancer)."""
    return worker.port


def call(port: int, method: str, params: dict[str, Any], capabilities: object = None
         ) -> tuple[dict[str, Any], str | None]:
    """One stateless request to ``port``: its response message, and the worker HAProxy
    names (``None`` past the balancer)."""
    declared = WITH_TASKS if capabilities is None else capabilities
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": declared}
    body = {"jsonrpc": "2.0", "id": next(_ids), "method": method, "params": {**params, "_meta": meta}}
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream",
               "mcp-protocol-version": "2026-07-28", "mcp-method": method}
    name = params.get("name", params.get("taskId"))
    if isinstance(name, str):
        headers["mcp-name"] = name
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("POST", "/mcp", json.dumps(body), headers)
        answer = conn.getresponse()
        data = answer.read()
        served_by = answer.getheader("x-served-by")
        if (answer.getheader("content-type") or "").startswith("text/event-stream"):
            messages = [json.loads(e.data) for e in SseParser().feed(data) if e.data]
            message = next(m for m in messages if m.get("id") == body["id"])
        else:
            message = json.loads(data)
    finally:
        conn.close()
    assert isinstance(message, dict)
    return message, served_by


def result(port: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
    message, _ = call(port, method, params)
    assert "result" in message, message
    value: dict[str, Any] = message["result"]
    return value


def started(cluster: Cluster, arguments: dict[str, object], tool: str = "job") -> tuple[str, int]:
    """Start a task through the balancer: its id and the process id of the worker running it."""
    created = result(port_of(cluster.url), "tools/call", {"name": tool, "arguments": arguments})
    assert created["resultType"] == "task" and created["status"] == "working", created
    return created["taskId"], int(created["statusMessage"])


def start(cluster: Cluster, arguments: dict[str, object], tool: str = "job") -> tuple[str, Proc]:
    """Start a task through the balancer: its id and the worker running it."""
    task_id, pid = started(cluster, arguments, tool)
    return task_id, cluster.worker_of(pid)


def wait_for(port: int, task_id: str, done: Any, timeout: float = 30.0) -> tuple[dict[str, Any], set[str]]:
    """``tasks/get`` at ``port`` until ``done(task)``: the task, and the workers that answered."""
    deadline = time.monotonic() + timeout
    served: set[str] = set()
    while True:
        message, served_by = call(port, "tasks/get", {"taskId": task_id})
        assert "result" in message, message
        if served_by:
            served.add(served_by)
        if done(message["result"]) or time.monotonic() > deadline:
            return message["result"], served
        time.sleep(0.1)


# ---------------------------------------------------------------- any worker serves a task


def test_a_task_started_at_one_worker_is_reported_by_every_worker(cluster: Cluster) -> None:
    task_id, owner = start(cluster, {"seconds": 1.5})
    for worker in cluster.workers:  # at once: stored before the client heard of it
        task = result(at(worker), "tasks/get", {"taskId": task_id})
        assert (task["taskId"], task["statusMessage"]) == (task_id, str(owner.pid))
        assert task["status"] in {"working", "completed"} and task["resultType"] == "complete"
    task, served = wait_for(port_of(cluster.url), task_id, lambda t: t["status"] == "completed")
    assert task["status"] == "completed", task
    assert task["result"]["content"][0]["text"] == f"done at {owner.pid}"  # the result the owner produced
    assert len(served) >= 2  # the balancer sent the polls to several workers
    for worker in cluster.workers:
        again = result(at(worker), "tasks/get", {"taskId": task_id})
        assert (again["status"], again["result"]) == ("completed", task["result"])


def test_a_task_cancelled_at_another_worker_stops_its_handler(cluster: Cluster, tmp_path: Path) -> None:
    mark = tmp_path / "cancelled"
    task_id, owner = start(cluster, {"seconds": 120, "mark": str(mark)})
    other, third = [w for w in cluster.workers if w is not owner]
    ack = result(at(other), "tasks/cancel", {"taskId": task_id})
    assert ack.get("resultType") == "complete" and not {"taskId", "status", "result", "error"} & set(ack)
    assert result(at(third), "tasks/get", {"taskId": task_id})["status"] == "cancelled"
    deadline = time.monotonic() + 20
    while not mark.exists() and time.monotonic() < deadline:  # the owner's handler hears of it
        time.sleep(0.05)
    assert mark.read_text() == f"cancelled at {owner.pid}"
    for worker in cluster.workers:  # for good, everywhere; cancelling again is acknowledged
        assert result(at(worker), "tasks/get", {"taskId": task_id})["status"] == "cancelled"
        assert result(at(worker), "tasks/cancel", {"taskId": task_id}).get("resultType") == "complete"


def test_answers_given_at_another_worker_reach_the_task(cluster: Cluster) -> None:
    task_id, owner = start(cluster, {}, tool="confirm")
    other, third = [w for w in cluster.workers if w is not owner]
    task, _ = wait_for(at(other), task_id, lambda t: t["status"] == "input_required")
    assert task["status"] == "input_required"
    assert task["inputRequests"]["who"]["method"] == "elicitation/create"
    assert task["inputRequests"]["who"]["params"]["message"] == "Who are you?"
    wrong = {"who": {"action": "maybe"}}  # no ElicitResult: the question stays open
    assert result(at(third), "tasks/update", {"taskId": task_id, "inputResponses": wrong}).get(
        "resultType") == "complete"
    assert "who" in result(at(owner), "tasks/get", {"taskId": task_id})["inputRequests"]
    answer = {"who": {"action": "accept", "content": {"name": "Ada"}}}
    ack = result(at(third), "tasks/update", {"taskId": task_id, "inputResponses": answer})
    assert ack.get("resultType") == "complete"
    task, _ = wait_for(port_of(cluster.url), task_id, lambda t: t["status"] == "completed")
    assert task["result"]["content"][0]["text"] == f"hello Ada at {owner.pid}"
    assert "inputRequests" not in task


# ---------------------------------------------------------------- what a client may not do


def test_unknown_and_forged_task_ids_are_unknown_at_every_worker(cluster: Cluster) -> None:
    task_id, _ = start(cluster, {"seconds": 0.2})
    forged = [task_id[:-1] + ("A" if task_id[-1] != "A" else "B"), "", "x" * 300, "*", "t:" + task_id,
              "../" + task_id]
    for worker in cluster.workers:
        for bad in forged:
            for method in ("tasks/get", "tasks/cancel"):
                message, _ = call(at(worker), method, {"taskId": bad})
                assert message.get("error", {}).get("code") == -32602, (method, bad, message)
        refused, _ = call(at(worker), "tasks/get", {"taskId": task_id}, capabilities={})
        assert refused["error"]["code"] == -32021 and task_id not in json.dumps(refused)
        for removed in ("tasks/result", "tasks/list"):
            message, _ = call(at(worker), removed, {"taskId": task_id})
            assert message["error"]["code"] == -32601


# ---------------------------------------------------------------- a worker killed


def test_a_worker_killed_while_running_a_task_leaves_it_failed_not_working(own_cluster: Cluster) -> None:
    task_id, owner = start(own_cluster, {"seconds": 600})
    assert result(port_of(own_cluster.url), "tasks/get", {"taskId": task_id})["status"] == "working"
    killed_at = time.monotonic()
    os.kill(owner.pid, signal.SIGKILL)
    owner.proc.wait()
    task, _ = wait_for(port_of(own_cluster.url), task_id, lambda t: t["status"] != "working", timeout=60)
    waited = time.monotonic() - killed_at
    assert task["status"] == "failed", task
    assert task["error"]["code"] == -32603 and "stopped" in task["error"]["message"]
    assert "result" not in task
    assert waited < 20.0  # the heartbeat's 5 s and a poll or two
    for worker in own_cluster.workers:
        if worker is not owner:  # for good, at every worker left
            again = result(at(worker), "tasks/get", {"taskId": task_id})
            assert (again["status"], again["error"]) == ("failed", task["error"])
            assert result(at(worker), "tasks/cancel", {"taskId": task_id}).get("resultType") == "complete"


# ---------------------------------------------------------------- every driver


@pytest.mark.parametrize("driver", ["anyio", "trio", "sync", "uvicorn"])
def test_every_driver_takes_answers_and_cancellations_given_at_another_worker(driver: str,
                                                                              tmp_path: Path) -> None:
    make = uvicorn_cluster if driver == "uvicorn" else functools.partial(serve_cluster, driver=driver)
    with make(tmp_path) as running:
        balancer = port_of(running.url)
        answered, asked_at = started(running, {}, tool="confirm")
        cancelled, _ = started(running, {}, tool="confirm")
        for task_id in (answered, cancelled):  # the questions are stored (whichever worker reads them)
            task, _ = wait_for(balancer, task_id, lambda t: t["status"] == "input_required")
            assert task["status"] == "input_required", task
        answer = {"who": {"action": "accept", "content": {"name": "Ada"}}}
        assert result(balancer, "tasks/update", {"taskId": answered, "inputResponses": answer})
        assert result(balancer, "tasks/cancel", {"taskId": cancelled}).get("resultType") == "complete"
        task, _ = wait_for(balancer, answered, lambda t: t["status"] == "completed")
        assert task["result"]["content"][0]["text"] == f"hello Ada at {asked_at}"
        assert result(balancer, "tasks/get", {"taskId": cancelled})["status"] == "cancelled"
