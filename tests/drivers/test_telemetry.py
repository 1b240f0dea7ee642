"""OpenTelemetry by the MCP semantic conventions, end to end: a ``tools/call`` from our
client to our server is one trace (client span ``tools/call add``, kind CLIENT; server span
``tools/call add``, kind SERVER, its child through ``params._meta``) with the conventions'
attributes and the four duration histograms, in one process (asyncio and trio, HTTP and
WebSocket, both eras), across a stdio pipe (the server process writes its spans to a
file), and through a real OTLP collector (rotel, shipped as a PyPI wheel)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from peer_servers import free_port, running_http_server, sdk_server

import mcp_sansio_anyio
import mcp_sansio_anyio.serve
import mcp_sansio_asyncio
import mcp_sansio_asyncio.serve
import mcp_sansio_sync
from mcp_sansio import ClientConfig, MCPServer
from mcp_sansio.errors import RequestError
from mcp_sansio_asyncio.manager import ServerManager
from mcp_sansio_base import telemetry

from .manager_helpers import DEMO, QUICK, entry

SERVERS = Path(__file__).parent.parent / "servers"
SERVE = [sys.executable, "-m", "mcp_sansio_cli", "serve"]
HANDSHAKE = ClientConfig(protocol="2025-11-25")
OPERATION = {"mcp.client.operation.duration", "mcp.server.operation.duration"}
SESSION = {"mcp.client.session.duration", "mcp.server.session.duration"}
NAMED_ADD = "Name           : tools/call add"  # how the collector's debug log prints the span's name


class Otel:
    """An SDK tracer provider with an in-memory exporter and a meter provider with an
    in-memory reader, given to mcp-sansio for one test."""

    def __init__(self) -> None:
        self.spans = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.spans))
        self.reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.reader])

    def finished(self, name: str, kind: SpanKind) -> ReadableSpan:
        found = [s for s in self.spans.get_finished_spans() if s.name == name and s.kind is kind]
        assert len(found) == 1, [(s.name, s.kind) for s in self.spans.get_finished_spans()]
        return found[0]

    def metrics(self) -> dict[str, list[Any]]:
        data = self.reader.get_metrics_data()
        found: dict[str, list[Any]] = {}
        for resource in data.resource_metrics if data is not None else ():
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    found.setdefault(metric.name, []).extend(metric.data.data_points)
        return found


@pytest.fixture
def otel() -> Iterator[Otel]:
    given = Otel()
    telemetry.instrument(tracer_provider=given.tracer_provider, meter_provider=given.meter_provider)
    try:
        yield given
    finally:
        telemetry.uninstrument()


def served_app() -> MCPServer:
    spec = importlib.util.spec_from_file_location("served_app_for_telemetry", SERVERS / "served_app.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    app: MCPServer = module.app

    @app.tool()
    def fails() -> int:
        """Always raises (a tool error)."""
        raise ValueError("it broke")

    @app.tool()
    async def slow() -> int:
        """Takes longer than any test waits."""
        await anyio.sleep(60)
        return 0

    return app


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


async def call_in_process(backend: str, transport: str, config: ClientConfig,
                          body: Callable[[Any], Any], settled: Callable[[], bool] = lambda: True,
                          **options: Any) -> None:
    """Serve the app in this process with the backend's driver (``asyncio`` or ``anyio``),
    connect to it over ``transport`` and run ``body(client)``; the server stays up after
    the client closed until ``settled()`` (it saw the session end)."""
    driver: Any = mcp_sansio_asyncio if backend == "asyncio" else mcp_sansio_anyio
    serving: Any = mcp_sansio_asyncio.serve if backend == "asyncio" else mcp_sansio_anyio.serve
    app = served_app()
    async with anyio.create_task_group() as group:
        ready = anyio.Event()
        port: list[int] = []

        def bound(number: int) -> None:
            port.append(number)
            ready.set()

        serve = serving.serve_http if transport == "http" else serving.serve_websocket
        group.start_soon(partial(serve, app, port=0, ready=bound))
        with anyio.fail_after(20):
            await ready.wait()
        if transport == "http":
            connection = driver.connect_http(f"http://127.0.0.1:{port[0]}/mcp", config=config, **options)
        else:
            connection = driver.connect_websocket(f"ws://127.0.0.1:{port[0]}/", config=config, **options)
        async with connection as client:
            await body(client)
        with anyio.fail_after(20):
            while not settled():  # noqa: ASYNC110  # a condition of another library's state
                await anyio.sleep(0.02)
        group.cancel_scope.cancel()


def assert_one_trace(otel: Otel, name: str = "tools/call add") -> tuple[ReadableSpan, ReadableSpan]:
    client = otel.finished(name, SpanKind.CLIENT)
    server = otel.finished(name, SpanKind.SERVER)
    assert client.context is not None and server.context is not None and server.parent is not None
    assert server.context.trace_id == client.context.trace_id
    assert server.parent.span_id == client.context.span_id
    return client, server


def assert_operation_attributes(span: ReadableSpan, transport: str, version: str) -> None:
    attrs = dict(span.attributes or {})
    assert attrs["mcp.method.name"] == "tools/call"
    assert attrs["gen_ai.tool.name"] == "add"
    assert attrs["gen_ai.operation.name"] == "execute_tool"
    assert attrs["mcp.protocol.version"] == version
    assert isinstance(attrs["jsonrpc.request.id"], str)
    assert attrs["network.transport"] == ("pipe" if transport == "stdio" else "tcp")
    if transport != "stdio":
        assert attrs["network.protocol.name"] == transport
    if transport == "http":
        assert attrs["network.protocol.version"] == "1.1"
    assert "error.type" not in attrs


@pytest.mark.parametrize("config", [HANDSHAKE, ClientConfig()], ids=["2025-11-25", "2026-07-28"])
@pytest.mark.parametrize("transport", ["http", "websocket"])
@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_tool_call_in_one_process_is_one_trace(otel: Otel, backend: str, transport: str,
                                                   config: ClientConfig) -> None:
    versions: list[str] = []

    async def body(client: Any) -> None:
        result = await client.call_tool("add", {"a": 2, "b": 3})
        assert result.content[0].text == "5"
        await client.list_tools()  # answered by the core itself, no handler
        versions.append(client.protocol_version)

    def settled() -> bool:  # the server saw the session end (the stateless era has none)
        return versions[0] == "2026-07-28" or "mcp.server.session.duration" in otel.metrics()

    anyio.run(call_in_process, "asyncio" if backend == "asyncio" else "anyio", transport, config, body,
              settled, backend=backend)
    version = versions[0]
    client, server = assert_one_trace(otel)
    for span in (client, server):
        assert_operation_attributes(span, transport, version)
    client_attrs, server_attrs = dict(client.attributes or {}), dict(server.attributes or {})
    assert client_attrs["jsonrpc.request.id"] == server_attrs["jsonrpc.request.id"]
    assert client_attrs["server.address"] == "127.0.0.1" and isinstance(client_attrs["server.port"], int)
    if transport == "http" and version != "2026-07-28":
        assert client_attrs["mcp.session.id"] == server_attrs["mcp.session.id"]
    listed, served = assert_one_trace(otel, "tools/list")
    request_id = dict(listed.attributes or {})["jsonrpc.request.id"]
    assert dict(served.attributes or {})["jsonrpc.request.id"] == request_id
    metrics = otel.metrics()
    assert set(metrics) >= OPERATION
    (point,) = [p for p in metrics["mcp.client.operation.duration"]
                if p.attributes["mcp.method.name"] == "tools/call"]
    assert list(point.explicit_bounds) == list(telemetry.BUCKETS)
    assert point.attributes["gen_ai.tool.name"] == "add"
    if version != "2026-07-28":  # the stateless era has no sessions
        assert set(metrics) >= SESSION


def test_failures_carry_error_type_and_status(otel: Otel) -> None:
    async def body(client: Any) -> None:
        assert (await client.call_tool("fails", {})).is_error
        with pytest.raises(RequestError) as caught:
            await client.call_tool("no-such-tool", {})
        assert caught.value.code != 0

    anyio.run(call_in_process, "asyncio", "http", HANDSHAKE, body)
    client, server = assert_one_trace(otel, "tools/call fails")
    for span in (client, server):
        assert dict(span.attributes or {})["error.type"] == "tool_error"
        assert span.status.status_code is StatusCode.ERROR
    missing = otel.finished("tools/call no-such-tool", SpanKind.CLIENT)
    attrs = dict(missing.attributes or {})
    assert attrs["error.type"] == attrs["rpc.response.status_code"] == str(caught_code(otel))
    assert missing.status.status_code is StatusCode.ERROR
    failed = [p for p in otel.metrics()["mcp.client.operation.duration"] if "error.type" in p.attributes]
    assert {p.attributes["error.type"] for p in failed} == {"tool_error", str(caught_code(otel))}


def caught_code(otel: Otel) -> int:
    span = otel.finished("tools/call no-such-tool", SpanKind.CLIENT)
    return int(str(dict(span.attributes or {})["rpc.response.status_code"]))


def test_a_host_span_is_the_parent_of_the_client_span(otel: Otel) -> None:
    tracer = otel.tracer_provider.get_tracer("host")

    async def body(client: Any) -> None:
        with tracer.start_as_current_span("invoke_agent weather"):
            await client.call_tool("add", {"a": 1, "b": 1})

    anyio.run(call_in_process, "asyncio", "websocket", HANDSHAKE, body)
    client, _ = assert_one_trace(otel)
    agent = next(s for s in otel.spans.get_finished_spans() if s.name == "invoke_agent weather")
    assert client.parent is not None and agent.context is not None
    assert client.parent.span_id == agent.context.span_id


def test_the_server_asking_the_client_is_a_client_span_there_and_a_server_span_here(otel: Otel) -> None:
    async def body(client: Any) -> None:
        assert (await client.call_tool("ask", {})).content[0].text == "hello Ada"

    async def name_ada(params: Any) -> Any:
        from mcp_sansio.types import ElicitResult
        return ElicitResult(action="accept", content={"name": "Ada"})

    anyio.run(partial(call_in_process, "asyncio", "websocket", HANDSHAKE, body, on_elicitation=name_ada))
    _, handler = assert_one_trace(otel, "tools/call ask")
    asking = otel.finished("elicitation/create", SpanKind.CLIENT)  # on the server
    answering = otel.finished("elicitation/create", SpanKind.SERVER)  # on the client
    assert dict(answering.attributes or {})["mcp.method.name"] == "elicitation/create"
    assert handler.context is not None and asking.context is not None
    assert asking.parent is not None and answering.parent is not None
    assert asking.parent.span_id == handler.context.span_id
    assert answering.parent.span_id == asking.context.span_id
    assert answering.context is not None and answering.context.trace_id == handler.context.trace_id


def test_no_provider_means_no_telemetry() -> None:
    telemetry.uninstrument()  # the global providers: the API's proxies, nothing configured
    with mcp_sansio_sync.connect_stdio(SERVE[0], [*SERVE[1:], str(SERVERS / "served_app.py")],
                                       config=HANDSHAKE) as client:
        assert client._telemetry is None
        assert client.call_tool("add", {"a": 1, "b": 2}).content[0].text == "3"  # type: ignore[union-attr]


def test_without_the_api_installed_there_is_no_telemetry(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("opentelemetry", "opentelemetry.trace", "opentelemetry.metrics"):
        monkeypatch.setitem(sys.modules, name, None)  # import fails as if not installed
    monkeypatch.setattr(telemetry._state, "api_missing", False)
    assert telemetry._current() is None
    assert telemetry._state.api_missing  # looked once: later connections ask nothing


def test_a_process_that_never_imported_the_api_does_not_import_it() -> None:
    script = ("import sys, mcp_sansio_sync\n"
              "from mcp_sansio_base import telemetry\n"
              "assert telemetry._current() is None\n"
              "print(any(m.startswith('opentelemetry') for m in sys.modules))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                          check=True)
    assert done.stdout.strip() == "False"


def read_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.mark.parametrize("server_driver", ["asyncio", "anyio", "trio", "sync"])
@pytest.mark.parametrize("config", [HANDSHAKE, ClientConfig()], ids=["2025-11-25", "2026-07-28"])
def test_a_tool_call_across_a_stdio_pipe_is_one_trace(otel: Otel, config: ClientConfig,
                                                      server_driver: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "server-telemetry.jsonl"
        env = {"MCP_TEST_TELEMETRY_FILE": str(out)}
        command = [*SERVE[1:], str(SERVERS / "traced_app.py"), "--driver", server_driver]
        with mcp_sansio_sync.connect_stdio(SERVE[0], command, config=config, env=env) as client:
            assert client.call_tool("add", {"a": 20, "b": 22}).content[0].text == "42"  # type: ignore[union-attr]
            version = client.protocol_version
        # the server flushed its metrics at exit, after its spans
        wait_for(lambda: out.exists() and any(r["type"] == "metric" for r in read_lines(out)), "the metrics")
        records = read_lines(out)
    client_span = otel.finished("tools/call add", SpanKind.CLIENT)
    assert_operation_attributes(client_span, "stdio", version)
    (server_span,) = [r for r in records if r["type"] == "span" and r["name"] == "tools/call add"]
    assert server_span["kind"] == "SERVER"
    assert client_span.context is not None
    assert server_span["trace_id"] == f"{client_span.context.trace_id:032x}"
    assert server_span["parent_id"] == f"{client_span.context.span_id:016x}"
    attrs = server_span["attributes"]
    assert attrs["mcp.method.name"] == "tools/call" and attrs["gen_ai.tool.name"] == "add"
    assert attrs["network.transport"] == "pipe" and attrs["mcp.protocol.version"] == version
    assert attrs["jsonrpc.request.id"] == dict(client_span.attributes or {})["jsonrpc.request.id"]
    names = {r["name"] for r in records if r["type"] == "metric"} | set(otel.metrics())
    expected = OPERATION | (SESSION if version != "2026-07-28" else set())
    assert expected <= names


def test_a_real_collector_receives_the_trace_over_otlp() -> None:
    """rotel (a Rust OTLP collector shipped on PyPI, not written here) receives the spans
    over OTLP/HTTP and prints them (its debug log)."""
    spec = importlib.util.find_spec("rotel")
    assert spec is not None and spec.origin is not None
    agent = Path(spec.origin).parent / "rotel-agent"
    http_port, grpc_port = free_port(), free_port()
    with tempfile.TemporaryFile() as log:
        collector = subprocess.Popen(
            [str(agent), "start", "--otlp-http-endpoint", f"127.0.0.1:{http_port}",
             "--otlp-grpc-endpoint", f"127.0.0.1:{grpc_port}", "--exporter", "blackhole",
             "--debug-log", "traces", "--debug-log-verbosity", "detailed"],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env={**os.environ, "NO_COLOR": "1"})
        try:
            wait_for(lambda: _listening(http_port), "the collector")
            provider = TracerProvider()
            provider.add_span_processor(SimpleSpanProcessor(
                OTLPSpanExporter(endpoint=f"http://127.0.0.1:{http_port}/v1/traces", timeout=10)))
            telemetry.instrument(tracer_provider=provider)
            try:
                async def body(client: Any) -> None:
                    await client.call_tool("add", {"a": 2, "b": 2})

                anyio.run(call_in_process, "asyncio", "http", HANDSHAKE, body)
            finally:
                telemetry.uninstrument()
                provider.shutdown()

            def received() -> str:
                log.seek(0)
                return log.read().decode(errors="replace")

            wait_for(lambda: received().count(NAMED_ADD) == 2, "the spans at the collector")
            printed = received()
        finally:
            collector.terminate()
            collector.wait(timeout=20)
    spans = [block for block in printed.split("Span #") if NAMED_ADD in block]
    fields = [dict(_fields(block)) for block in spans]
    by_kind = {f["Kind"]: f for f in fields}
    assert set(by_kind) == {"SPAN_KIND_CLIENT", "SPAN_KIND_SERVER"}
    assert by_kind["SPAN_KIND_SERVER"]["Trace ID"] == by_kind["SPAN_KIND_CLIENT"]["Trace ID"]
    assert by_kind["SPAN_KIND_SERVER"]["Parent ID"] == by_kind["SPAN_KIND_CLIENT"]["ID"]
    assert "mcp.method.name: Str(tools/call)" in spans[0] and "gen_ai.tool.name: Str(add)" in spans[0]


def _fields(block: str) -> Iterator[tuple[str, str]]:
    for line in block.splitlines():
        key, sep, value = line.partition(":")
        if sep and line.startswith("    ") and not line.startswith("     ->"):
            yield key.strip(), value.strip()


def _listening(port: int) -> bool:
    import socket

    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


def test_the_host_layer_names_the_server_on_its_spans_and_metrics(otel: Otel) -> None:
    async def main() -> None:
        async with ServerManager([entry("calc", DEMO)], client_config=QUICK) as manager:
            await manager.tools()
            await manager.call_tool("mcp__calc__add", {"a": 1, "b": 2})

    anyio.run(main)
    span = otel.finished("tools/call add", SpanKind.CLIENT)
    assert dict(span.attributes or {})[telemetry.SERVER_NAME] == "calc"
    points = otel.metrics()["mcp.client.operation.duration"]
    assert {p.attributes.get(telemetry.SERVER_NAME) for p in points} == {"calc"}


def test_a_timed_out_call_is_timeout_here_and_cancelled_there(otel: Otel) -> None:
    async def body(client: Any) -> None:
        with pytest.raises(TimeoutError):
            await client.call_tool("slow", {}, timeout=0.3)

    def settled() -> bool:  # the server saw notifications/cancelled
        return any(s.name == "tools/call slow" and s.kind is SpanKind.SERVER
                   for s in otel.spans.get_finished_spans())

    anyio.run(call_in_process, "asyncio", "http", HANDSHAKE, body, settled)
    client, server = assert_one_trace(otel, "tools/call slow")
    assert dict(client.attributes or {})["error.type"] == "timeout"
    assert dict(server.attributes or {})["error.type"] == "cancelled"


def test_the_asgi_app_under_uvicorn_joins_the_trace(otel: Otel) -> None:
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "asgi-telemetry.jsonl"
        env = {**os.environ, "MCP_TEST_TELEMETRY_FILE": str(out)}
        with running_http_server(*sdk_server("traced_app", "--port", str(port)), env, port, "/mcp") as url, \
                mcp_sansio_sync.connect_http(url, config=HANDSHAKE) as client:
            assert client.call_tool("add", {"a": 1, "b": 1}).content[0].text == "2"  # type: ignore[union-attr]
        wait_for(lambda: out.exists() and any(r.get("name") == "tools/call add" for r in read_lines(out)),
                 "the server's span")
        (server_span,) = [r for r in read_lines(out) if r["type"] == "span" and r["name"] == "tools/call add"]
    client_span = otel.finished("tools/call add", SpanKind.CLIENT)
    assert client_span.context is not None
    assert server_span["kind"] == "SERVER"
    assert server_span["parent_id"] == f"{client_span.context.span_id:016x}"
    assert server_span["attributes"]["mcp.session.id"] == dict(client_span.attributes or {})["mcp.session.id"]
