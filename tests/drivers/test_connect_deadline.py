"""Every driver: ``initialize_timeout`` is the wall time of the whole connect (the
``server/discover`` probe, the fallback to ``initialize``, retries), and a connect that
times out says how long it took, where it stalled and (stdio) what the server last wrote
to stderr."""

from __future__ import annotations

import re
import socket
import sys
import time
from collections.abc import Iterator

import pytest

from mcp_sansio import ClientConfig, RequestTimeout

from .driver_adapter import Driver

pytestmark = pytest.mark.anyio

SILENT_STDIO = ("import sys, time; sys.stderr.write('loading the model\\n'); sys.stderr.flush();"
                " sys.stdin.read(); time.sleep(60)")


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port whose listener never accepts: the kernel completes each TCP handshake and
    keeps what the client writes, and nothing ever answers."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        yield listener.getsockname()[1]


async def test_an_http_server_that_never_answers_fails_within_initialize_timeout(
    driver: Driver, silent_port: int
) -> None:
    started = time.monotonic()
    with pytest.raises(RequestTimeout) as caught:
        async with driver.connect_http(f"http://127.0.0.1:{silent_port}/mcp",
                                       config=ClientConfig(initialize_timeout=1.0)):
            pass
    elapsed = time.monotonic() - started
    assert 1.0 <= elapsed < 1.5  # probe and fallback within the one deadline, not one each
    assert re.fullmatch(
        r"the server did not complete the handshake within 1\.\d s \(initialize_timeout 1 s\):"
        r" initialize went unanswered for 0\.\d s, after server/discover \(0\.5 s\);"
        rf" POST http://127\.0\.0\.1:{silent_port}/mcp: no response came", str(caught.value)), caught.value


async def test_a_websocket_upgrade_never_answered_fails_within_initialize_timeout(
    driver: Driver, silent_port: int
) -> None:
    started = time.monotonic()
    with pytest.raises(RequestTimeout, match="the server did not answer the upgrade request"):
        async with driver.connect_websocket(f"ws://127.0.0.1:{silent_port}/ws",
                                            config=ClientConfig(initialize_timeout=1.0)):
            pass
    assert time.monotonic() - started < 1.5


async def test_a_stdio_server_that_never_answers_fails_with_its_stderr_tail(driver: Driver) -> None:
    config = ClientConfig(initialize_timeout=1.0, shutdown_close_delay=0.1, shutdown_interrupt_delay=0.1,
                          shutdown_terminate_delay=0.1)
    started = time.monotonic()
    with pytest.raises(RequestTimeout) as caught:
        async with driver.connect(sys.executable, ["-c", SILENT_STDIO], config=config):
            pass
    assert time.monotonic() - started < 2.0  # the timeout, then the shutdown ladder
    assert "initialize went unanswered" in str(caught.value)
    assert str(caught.value).endswith("; stderr: loading the model")
    assert caught.value.stderr_tail == "loading the model\n"
