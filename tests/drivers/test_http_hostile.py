"""Every driver against HTTP peers that misbehave on purpose (``tests/servers/hostile_http.py``)."""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import msgspec
import pytest
from peer_servers import free_port, running_http_server, sdk_server

from mcp_sansio import ClientConfig, ConnectError, ConnectionClosed, MessageTooLarge, RequestTimeout
from mcp_sansio.errors import HttpError
from mcp_sansio.retry import RetryPolicy

from .driver_adapter import Driver, Transport, text_of, until

pytestmark = pytest.mark.anyio

MIB = 1024 * 1024
# The peers speak the handshake era only; short limits keep the matrix quick.
QUICK = ClientConfig(protocol="2025-11-25", request_timeout=5.0, initialize_timeout=5.0,
                     retry=RetryPolicy(initial_delay=0.05, max_delay=0.2, max_attempts=2))


@contextlib.contextmanager
def hostile(mode: str, log: Path, *extra: str) -> Iterator[str]:
    """Run ``hostile_http.py`` in ``mode``, logging its requests to ``log``; yield its URL."""
    port = free_port()
    command, args = sdk_server("hostile_http", mode, str(port), *extra)
    with running_http_server(command, args, {"HOSTILE_LOG": str(log)}, port, "/mcp") as url:
        yield url


def requests(log: Path) -> list[dict[str, object]]:
    """What the hostile server has logged: one entry per request."""
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


async def test_a_response_over_max_response_bytes_fails_with_message_too_large(
    driver: Driver, tmp_path: Path
) -> None:
    config = msgspec.structs.replace(QUICK, max_response_bytes=MIB)
    with hostile("too-large", tmp_path / "log") as url:
        async with driver.connect_http(url, config=config) as client:
            with pytest.raises(MessageTooLarge):
                await client.call_tool("poke")
            await client.ping()  # the connection that held it is gone, not the session


async def test_garbage_instead_of_http_fails_with_connection_closed(driver: Driver, tmp_path: Path) -> None:
    with hostile("garbage", tmp_path / "log") as url, pytest.raises(ConnectionClosed, match="invalid HTTP"):
        async with driver.connect_http(url, config=QUICK):
            pass


async def test_an_unanswered_call_times_out_and_is_cancelled_on_the_server(
    driver: Driver, tmp_path: Path
) -> None:
    log = tmp_path / "log"

    def cancelled() -> list[object]:
        return [r["params"] for r in requests(log) if r["rpc"] == "notifications/cancelled"]

    with hostile("stall", log) as url:
        async with driver.connect_http(url, config=QUICK) as client:
            with pytest.raises(RequestTimeout):
                await client.call_tool("poke", timeout=0.3)
            await until(client, lambda: bool(cancelled()))
    [params] = cancelled()
    [call] = [r for r in requests(log) if r["rpc"] == "tools/call"]
    assert isinstance(params, dict) and isinstance(call["params"], dict)
    assert params["requestId"] is not None and params["reason"]


async def test_a_redirect_to_another_origin_does_not_take_the_authorization_header(
    driver: Driver, tmp_path: Path
) -> None:
    headers = {"Authorization": "Bearer secret", "X-Api-Key": "key"}
    with hostile("plain", tmp_path / "target") as target, \
            hostile("redirect", tmp_path / "origin", target) as url:
        async with driver.connect_http(url, headers=headers, config=QUICK) as client:
            assert text_of(await client.call_tool("poke")) == "ok"
    sent = requests(tmp_path / "origin")
    got = requests(tmp_path / "target")
    assert sent and all(r["headers"]["authorization"] == "Bearer secret" for r in sent)  # type: ignore[index]  # JSON
    assert {"initialize", "tools/call"} <= {r["rpc"] for r in got}
    for request in got:
        assert isinstance(request["headers"], dict)
        assert not {"authorization", "x-api-key", "cookie"} & set(request["headers"])


async def test_a_500_with_an_html_body_fails_with_http_error(driver: Driver, tmp_path: Path) -> None:
    with hostile("error-500", tmp_path / "log") as url:
        async with driver.connect_http(url, config=QUICK) as client:
            with pytest.raises(HttpError) as caught:
                await client.call_tool("poke")
            await client.ping()
    assert caught.value.status == 500
    assert caught.value.body_excerpt.startswith("<!DOCTYPE html>")
    assert len(caught.value.body_excerpt) <= 300 and len(str(caught.value)) < 500


async def test_a_forgotten_session_is_initialized_again(driver: Driver, tmp_path: Path) -> None:
    log = tmp_path / "log"
    with hostile("forget-session", log) as url:
        async with driver.connect_http(url, config=QUICK) as client:
            assert client.session_id == "session-1"
            assert text_of(await client.call_tool("poke")) == "ok"  # re-sent on the new session
            assert client.session_id == "session-2"
    calls = [r for r in requests(log) if r["rpc"] in ("initialize", "tools/call")]
    assert [(r["rpc"], r["headers"].get("mcp-session-id")) for r in calls] == [  # type: ignore[attr-defined]  # JSON
        ("initialize", None), ("tools/call", "session-1"), ("initialize", None), ("tools/call", "session-2")]


@pytest.mark.parametrize("transport", ["auto", "streamable-http", "sse"])
async def test_nobody_listening_fails_at_once_with_a_connect_error(driver: Driver, transport: Transport
                                                                   ) -> None:
    port = free_port()
    started = time.monotonic()
    with pytest.raises(ConnectError) as caught:
        async with driver.connect_http(f"http://127.0.0.1:{port}/mcp", transport=transport):  # the defaults
            pass
    assert time.monotonic() - started < 2.0
    assert (caught.value.host, caught.value.port) == ("127.0.0.1", port)
    assert caught.value.errno == errno.ECONNREFUSED
    assert str(caught.value) == f"cannot connect to 127.0.0.1:{port}: Connection refused"


async def test_a_server_gone_mid_session_fails_the_next_call_with_a_connect_error_before_its_deadline(
    driver: Driver, tmp_path: Path
) -> None:
    config = ClientConfig(protocol="2025-11-25", request_timeout=3.0)
    with contextlib.ExitStack() as server:
        url = server.enter_context(hostile("plain", tmp_path / "log"))
        async with driver.connect_http(url, config=config) as client:
            assert text_of(await client.call_tool("poke")) == "ok"
            server.close()  # nothing listens any more
            started = time.monotonic()
            with pytest.raises(ConnectError, match="Connection refused"):  # never a timeout for it
                await client.call_tool("poke")
            assert time.monotonic() - started < 3.5  # retried only while the 3 s deadline allowed


async def test_a_websocket_nobody_listens_on_fails_at_once_with_a_connect_error(driver: Driver) -> None:
    port = free_port()
    started = time.monotonic()
    with pytest.raises(ConnectError, match=f"^cannot connect to 127.0.0.1:{port}: Connection refused$"):
        async with driver.connect_websocket(f"ws://127.0.0.1:{port}/ws"):
            pass
    assert time.monotonic() - started < 2.0


async def test_a_host_name_that_does_not_resolve_fails_with_a_connect_error(driver: Driver) -> None:
    expected = r"^cannot connect to mcp\.invalid:80: the name lookup failed: "
    with pytest.raises(ConnectError, match=expected) as caught:
        async with driver.connect_http("http://mcp.invalid/mcp"):
            pass
    assert (caught.value.host, caught.value.port) == ("mcp.invalid", 80)


async def test_https_to_a_plain_http_server_fails_with_a_connect_error(driver: Driver, tmp_path: Path
                                                                       ) -> None:
    # The peer speaks plain HTTP, so the TLS handshake fails before any HTTP byte.
    with hostile("plain", tmp_path / "log") as url, pytest.raises(ConnectError) as caught:
        async with driver.connect_http(url.replace("http://", "https://", 1)):
            pass
    assert "the TLS handshake failed: " in str(caught.value)
    assert requests(tmp_path / "log") == []  # never retried, never reached HTTP


async def test_a_get_stream_that_keeps_closing_is_reopened_with_backoff_not_in_a_loop(
    driver: Driver, tmp_path: Path
) -> None:
    log = tmp_path / "log"
    with hostile("get-storm", log) as url:
        async with driver.connect_http(url, config=ClientConfig(protocol="2025-11-25")) as client:
            started = time.monotonic()
            while time.monotonic() - started < 2.0:  # a blocking client reads only while a call waits
                await client.ping()
                await anyio.sleep(0.01)
    gets = [r for r in requests(log) if r["method"] == "GET"]
    # The first, then at once (retry: 0), then after ~1 s of backoff (1 +- 0.2): no more in 2 s.
    assert 2 <= len(gets) <= 3, len(gets)


async def test_a_get_stream_that_keeps_closing_is_given_up_with_a_warning(
    driver: Driver, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    log = tmp_path / "log"
    fast = RetryPolicy(initial_delay=0.01, max_delay=0.02, max_attempts=3)
    config = msgspec.structs.replace(QUICK, retry=fast)
    with hostile("get-storm", log) as url:
        async with driver.connect_http(url, config=config) as client:
            await until(client, lambda: "gave up the event stream" in caplog.text)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [f"gave up the event stream for server-initiated messages from {url}"
                        " after 3 reconnections in a row: the server ended the SSE stream"]
    assert len([r for r in requests(log) if r["method"] == "GET"]) == 4


async def test_event_ids_no_header_can_carry_are_never_sent_back(driver: Driver, tmp_path: Path) -> None:
    log = tmp_path / "log"
    fast = RetryPolicy(initial_delay=0.01, max_delay=0.02, max_attempts=3)
    with hostile("bad-event-id", log) as url:
        async with driver.connect_http(url, config=msgspec.structs.replace(QUICK, retry=fast)) as client:
            await until(client, lambda: len([r for r in requests(log) if r["method"] == "GET"]) == 4)
            assert text_of(await client.call_tool("poke")) == "ok"  # nothing escaped, nothing broke
    gets = [r["headers"] for r in requests(log) if r["method"] == "GET"]
    assert [h.get("last-event-id") for h in gets] == [None, None, None, "ok-3"]  # type: ignore[attr-defined]  # JSON
