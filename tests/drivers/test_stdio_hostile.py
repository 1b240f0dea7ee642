"""Every driver against a stdio server that misbehaves on purpose (``tests/servers/hostile.py``)."""

from __future__ import annotations

import json
import logging
import os
import re
import resource
import time
from pathlib import Path

import anyio
import msgspec
import pytest
from peer_servers import sdk_server

from mcp_sansio import (
    ConnectionClosed,
    MessageTooLarge,
    NotificationReceived,
    RemoteProtocolError,
    RequestTimeout,
)

from .driver_adapter import (
    CONCURRENT_DRIVERS,
    QUICK,
    ClientUnderTest,
    Driver,
    process_is_gone,
    text_of,
    until,
)

pytestmark = pytest.mark.anyio

MIB = 1024 * 1024


def hostile(*mode: str) -> tuple[str, list[str]]:
    """The command running the hostile server in ``mode``."""
    return sdk_server("hostile", *mode)


def cancellations(log: Path) -> list[dict[str, object]]:
    """The ``notifications/cancelled`` params the hostile server has logged."""
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines()]


def rss_bytes() -> int:
    """This process's resident set size now."""
    return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.parametrize(("mode", "reason"), [("banner", "not-json"), ("bad-utf8", "invalid-utf8"),
                                              ("unknown-id", "unknown-id")])
async def test_garbage_around_the_answer_is_skipped_with_a_warning(
    driver: Driver, mode: str, reason: str, caplog: pytest.LogCaptureFixture
) -> None:
    async with driver.connect(*hostile(mode), config=QUICK) as client:
        assert client.server_info.name == "hostile"
        assert [tool.name for tool in await client.list_tools()] == ["poke"]
        assert text_of(await client.call_tool("poke")) == "ok"
        assert text_of(await client.call_tool("poke")) == "ok"
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(f"discarded a message from the server ({reason})" in w for w in warnings), warnings


async def test_a_banner_gives_one_warning_quoting_its_first_line_then_a_count(
    driver: Driver, caplog: pytest.LogCaptureFixture
) -> None:
    async with driver.connect(*hostile("banner"), config=QUICK) as client:
        for _ in range(3):
            assert text_of(await client.call_tool("poke")) == "ok"
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    first, *rest = [w for w in warnings if w.startswith("discarded")]
    assert first.startswith("discarded a message from the server (not-json): not JSON")
    assert "it read 'hostile MCP server 1.0 starting' (more such messages are only counted)" in first
    [summary] = rest
    counted = re.fullmatch(r"discarded (\d+) messages from the server in all \(not-json: (\d+)\)", summary)
    assert counted is not None and counted[1] == counted[2]
    assert int(counted[1]) >= 6  # two lines at start-up, one before each of the 4+ answers


async def test_line_over_max_line_bytes_fails_with_message_too_large(driver: Driver) -> None:
    config = msgspec.structs.replace(QUICK, max_line_bytes=MIB)
    async with driver.connect(*hostile("long-line"), config=config) as client:
        with pytest.raises(MessageTooLarge) as caught:
            await client.call_tool("poke")
    assert isinstance(caught.value, RemoteProtocolError)
    assert "max_line_bytes" in str(caught.value)


async def test_death_mid_response_reports_exit_status_and_stderr(driver: Driver) -> None:
    async with driver.connect(*hostile("die-mid-response"), config=QUICK) as client:
        with pytest.raises(ConnectionClosed) as caught:
            await client.call_tool("poke")
        assert "fatal: boom" in client.stderr_tail
    assert caught.value.returncode == 3
    assert "fatal: boom" in caught.value.stderr_tail


async def test_stderr_is_logged_line_by_line_when_info_is_enabled(
    driver: Driver, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="mcp_sansio.stderr")
    async with driver.connect(*hostile("die-mid-response"), config=QUICK) as client:
        with pytest.raises(ConnectionClosed):
            await client.call_tool("poke")
    lines = [r.getMessage() for r in caplog.records if r.name.startswith("mcp_sansio.stderr.")]
    assert lines == ["fatal: boom"]


async def test_crash_fails_the_pending_call_with_exit_status(driver: Driver) -> None:
    # The handshake takes one or two of the three requests it answers, as the core decides.
    async with driver.connect(*hostile("crash-after", "3"), config=QUICK) as client:
        with pytest.raises(ConnectionClosed) as caught:
            for _ in range(3):
                assert text_of(await client.call_tool("poke")) == "ok"
    assert caught.value.returncode == 1
    assert "crashing after 3 requests" in caught.value.stderr_tail


@pytest.mark.parametrize("driver", CONCURRENT_DRIVERS, indirect=True)
async def test_server_exiting_during_a_large_write_fails_both_calls(driver: Driver) -> None:
    # Only initialize is answered; the next line kills the server while the big one is
    # still being written after it, in the same write.
    config = msgspec.structs.replace(QUICK, protocol="2025-11-25")
    failures: list[int | None] = []

    async def call(arguments: dict[str, str]) -> None:
        with pytest.raises(ConnectionClosed) as caught:
            await client.call_tool("poke", arguments)
        failures.append(caught.value.returncode)

    async with (
        driver.connect(*hostile("crash-after", "1"), config=config) as client,
        anyio.create_task_group() as group,
    ):
        group.start_soon(call, {"padding": ""})
        group.start_soon(call, {"padding": "x" * (4 * MIB)})
    assert failures == [1, 1]


async def test_stalled_call_times_out_and_the_server_hears_cancelled(driver: Driver, tmp_path: Path) -> None:
    log = tmp_path / "cancelled.jsonl"
    async with driver.connect(*hostile("stall"), config=QUICK, env={"HOSTILE_LOG": str(log)}) as client:
        started = time.monotonic()
        with pytest.raises(RequestTimeout):
            await client.call_tool("poke", timeout=0.3)
        assert 0.3 <= time.monotonic() - started < 2.0
        await client.ping()  # answered after the server has read the cancellation
        [cancelled] = cancellations(log)
    assert isinstance(cancelled["requestId"], int)
    assert cancelled["reason"] == "request timed out"


async def test_abandoned_call_is_cancelled_at_the_server(driver: Driver, tmp_path: Path) -> None:
    log = tmp_path / "cancelled.jsonl"
    async with driver.connect(*hostile("stall"), config=QUICK, env={"HOSTILE_LOG": str(log)}) as client:
        with driver.cancel_after(0.2):
            await client.call_tool("poke")
            pytest.fail("the stalled call returned")
        await client.ping()
        [cancelled] = cancellations(log)
    assert cancelled["reason"] == "cancelled by the caller"


async def test_server_ignoring_sigterm_is_killed_within_the_ladder(driver: Driver) -> None:
    async with driver.connect(*hostile("ignore-sigterm")) as client:  # the default ladder
        assert text_of(await client.call_tool("poke")) == "ok"
        pid = client.pid
        started = time.monotonic()
    assert time.monotonic() - started < 3.0
    assert process_is_gone(pid)


async def test_stderr_flood_is_drained_in_bounded_memory(driver: Driver) -> None:
    rss_before = rss_bytes()
    peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    rss_peak = rss_before
    drained = 0

    async with driver.connect(*hostile("flood-stderr"), config=QUICK) as client:
        assert text_of(await client.call_tool("poke")) == "ok"

        def mostly_drained() -> bool:
            nonlocal rss_peak, drained
            rss_peak = max(rss_peak, rss_bytes())
            dropped = re.match(r"\[(\d+) earlier bytes dropped\]", client.stderr_tail)
            drained = int(dropped.group(1)) if dropped else 0
            return drained >= 150 * MIB

        await until(client, mostly_drained, timeout=60.0)
        assert text_of(await client.call_tool("poke")) == "ok"
    assert len(client.stderr_tail) < 2 * MIB
    assert rss_peak - rss_before < 100 * MIB
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - peak_before < 100 * MIB


def stderr_records(caplog: pytest.LogCaptureFixture) -> list[str]:
    """What the drivers logged of the servers' stderr."""
    return [r.getMessage() for r in caplog.records if r.name.startswith("mcp_sansio.stderr.")]


async def drain(client: ClientUnderTest, size: int) -> None:
    """Wait until the client has read (and dropped from its tail) ``size`` bytes of stderr."""
    def drained() -> bool:
        dropped = re.match(r"\[(\d+) earlier bytes dropped\]", client.stderr_tail)
        return dropped is not None and int(dropped.group(1)) >= size

    await until(client, drained, timeout=60.0)


async def test_stderr_without_a_newline_is_logged_as_one_bounded_line(
    driver: Driver, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="mcp_sansio.stderr")
    async with driver.connect(*hostile("flood-stderr-unbroken"), config=QUICK) as client:
        assert text_of(await client.call_tool("poke")) == "ok"
        await drain(client, 49 * MIB)
        assert stderr_records(caplog) == []  # the line has not ended yet
    [line] = stderr_records(caplog)
    assert len(line) < 4200 and re.search(r"\[\.\.\. \d+ more bytes of this line not logged\]$", line)


async def test_stderr_lines_flood_is_logged_cut_and_rate_limited(
    driver: Driver, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="mcp_sansio.stderr")
    # 50 lines, then one more every 20 s: however slow the machine, most of the flood is held back.
    config = msgspec.structs.replace(QUICK, stderr_log_lines=50, stderr_log_window=1000.0)
    started = time.monotonic()
    async with driver.connect(*hostile("flood-stderr"), config=config) as client:
        assert text_of(await client.call_tool("poke")) == "ok"
        await drain(client, 20 * MIB)  # 320 lines of 64 KiB
    lines = stderr_records(caplog)
    summary = r"\[\d+ lines \(\d+ bytes\) of stderr not logged: over 50 lines in 1000 s\]"
    summaries = [line for line in lines if re.fullmatch(summary, line)]
    logged = len(lines) - len(summaries)
    assert summaries and logged <= 50 + (time.monotonic() - started) / 20 + 1
    assert all(len(line) < 4200 for line in lines)
    assert all(line.endswith("[... 61439 more bytes of this line not logged]") for line in lines
               if line not in summaries)


async def test_slow_start_past_initialize_timeout_fails_the_handshake(driver: Driver) -> None:
    config = msgspec.structs.replace(QUICK, initialize_timeout=0.3)
    started = time.monotonic()
    with pytest.raises(RequestTimeout):
        async with driver.connect(*hostile("slow-start", "5"), config=config):
            pytest.fail("the handshake succeeded")
    assert time.monotonic() - started < 2.0


async def test_progress_forever_cannot_outlast_max_request_timeout(driver: Driver) -> None:
    config = msgspec.structs.replace(QUICK, max_request_timeout=1.0)
    async with driver.connect(*hostile("progress", "inf"), config=config) as client:
        started = time.monotonic()
        with pytest.raises(RequestTimeout):
            await client.call_tool("poke", timeout=0.3)  # progress every 50 ms resets the 0.3 s
        assert time.monotonic() - started >= 0.9


async def test_a_call_timeout_longer_than_max_request_timeout_is_honoured(driver: Driver) -> None:
    config = msgspec.structs.replace(QUICK, max_request_timeout=0.3)
    async with driver.connect(*hostile("progress", "1.0"), config=config) as client:
        assert text_of(await client.call_tool("poke", timeout=20.0)) == "ok"


async def test_an_answer_too_deep_to_decode_fails_its_call_at_once(driver: Driver) -> None:
    async with driver.connect(*hostile("deep-answer"), config=QUICK) as client:
        started = time.monotonic()
        with pytest.raises(RemoteProtocolError, match="could not be decoded: its JSON nests deeper"):
            await client.call_tool("poke", timeout=30.0)
        assert time.monotonic() - started < 10.0  # not the 30 s timeout
        assert [tool.name for tool in await client.list_tools()] == ["poke"]  # the connection lives on


async def test_the_notification_handler_sees_one_notification_at_a_time_in_order(driver: Driver) -> None:
    seen: list[tuple[str, object]] = []

    async def on_notification(event: NotificationReceived) -> None:
        index = getattr(event.params, "data", None)
        seen.append(("start", index))
        if driver.name != "sync":  # the blocking driver runs handlers inline: they cannot suspend
            await anyio.sleep(0.05 if index == 0 else 0)
        seen.append(("end", index))

    server = hostile("notify", "50")
    async with driver.connect(*server, config=QUICK, on_notification=on_notification) as client:
        assert text_of(await client.call_tool("poke")) == "ok"
        await until(client, lambda: len(seen) == 100)
    assert seen == [(edge, index) for index in range(50) for edge in ("start", "end")]


@pytest.mark.parametrize("driver", CONCURRENT_DRIVERS, indirect=True)
async def test_notifications_past_the_queue_bound_are_dropped_with_a_warning(
    driver: Driver, caplog: pytest.LogCaptureFixture
) -> None:
    release = anyio.Event()
    seen: list[object] = []

    async def on_notification(event: NotificationReceived) -> None:
        seen.append(getattr(event.params, "data", None))
        await release.wait()  # a handler far behind the server

    def warnings() -> list[str]:
        return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]

    config = msgspec.structs.replace(QUICK, max_queued_notifications=10)
    server = hostile("notify", "100")
    async with driver.connect(*server, config=config, on_notification=on_notification) as client:
        assert text_of(await client.call_tool("poke")) == "ok"
        release.set()
        await until(client, lambda: any(w.startswith("dropped") for w in warnings()))
    # Ten queued, and the one being handled if the worker started before the queue filled.
    assert seen == list(range(len(seen))) and len(seen) in (10, 11)
    assert "the notification handler is 10 notifications behind: dropping new ones until it catches up " \
           "(ClientConfig.max_queued_notifications)" in warnings()
    assert f"dropped {100 - len(seen)} notifications while the handler was behind" in warnings()
