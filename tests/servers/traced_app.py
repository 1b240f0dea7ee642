"""The served app with OpenTelemetry configured from the environment, for the telemetry
tests across a stdio pipe and under uvicorn (``traced_app.py --port P`` serves ``AsgiApp(app)``):
its spans go to the JSON-lines file ``MCP_TEST_TELEMETRY_FILE`` as they end, its metrics when
the process exits (the SDK flushes at exit)."""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Sequence
from typing import IO

from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

from mcp_sansio import MCPServer
from mcp_sansio_asgi import AsgiApp


class FileSpanExporter(SpanExporter):
    """Each finished span as one JSON line: its name, kind, ids, parent and attributes."""

    def __init__(self, out: IO[str]) -> None:
        self.out = out

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        for span in spans:
            assert span.context is not None
            self.out.write(json.dumps({
                "type": "span", "name": span.name, "kind": span.kind.name,
                "trace_id": f"{span.context.trace_id:032x}", "span_id": f"{span.context.span_id:016x}",
                "parent_id": None if span.parent is None else f"{span.parent.span_id:016x}",
                "attributes": dict(span.attributes or {}),
            }) + "\n")
        self.out.flush()
        return SpanExportResult.SUCCESS


class _DumpingReader(InMemoryMetricReader):
    """Writes the metrics' names and points to the file at shutdown."""

    def __init__(self, out: IO[str]) -> None:
        super().__init__()
        self.out = out

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: object) -> None:
        data = self.get_metrics_data()
        for resource in data.resource_metrics if data is not None else ():
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    points = [dict(p.attributes or {}) for p in metric.data.data_points]
                    line = {"type": "metric", "name": metric.name, "points": points}
                    self.out.write(json.dumps(line) + "\n")
        self.out.flush()
        super().shutdown(timeout_millis=timeout_millis)


_out = open(os.environ["MCP_TEST_TELEMETRY_FILE"], "a", encoding="utf-8")  # noqa: SIM115  # open until exit
_tracer_provider = TracerProvider()
_tracer_provider.add_span_processor(SimpleSpanProcessor(FileSpanExporter(_out)))
trace.set_tracer_provider(_tracer_provider)
metrics.set_meter_provider(MeterProvider(metric_readers=[_DumpingReader(_out)]))

app = MCPServer("traced", version="1.0.0")


@app.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


asgi = AsgiApp(app)


def main() -> None:
    import uvicorn

    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    options = parser.parse_args()
    uvicorn.run("traced_app:asgi", host="127.0.0.1", port=options.port, log_level="warning",
                app_dir=os.path.dirname(__file__))


if __name__ == "__main__":
    main()
