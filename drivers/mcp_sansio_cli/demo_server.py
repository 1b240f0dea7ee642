"""The bundled demo MCP server: the core's ``ServerSession`` over stdio, no framework.

Run it with ``python -m mcp_sansio_cli.demo_server``. One thread, one ``selectors`` loop:
long-running tools are stepped from the loop on deadlines, so the server keeps reading
(and honours ``notifications/cancelled``) while they run.
"""

from __future__ import annotations

import heapq
import os
import selectors
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Final

from mcp_sansio import ClientRequestReceived, NotificationReceived, RequestId, ServerSession
from mcp_sansio.types import (
    CallToolRequestParams,
    CallToolResult,
    CancelledNotificationParams,
    GetPromptRequestParams,
    GetPromptResult,
    Implementation,
    ListPromptsResult,
    ListResourcesResult,
    ListToolsResult,
    Prompt,
    PromptArgument,
    PromptMessage,
    PromptsCapability,
    ReadResourceRequestParams,
    ReadResourceResult,
    Resource,
    ResourceContents,
    ResourcesCapability,
    ServerCapabilities,
    TextContent,
    Tool,
    ToolsCapability,
)

__all__ = ["TOOLS", "main"]

_INVALID_PARAMS: Final = -32602
_README: Final = (
    "mcp-sansio demo server\n\nA pure state machine on one side, a selectors loop on the other."
)

TOOLS: Final[list[Tool]] = [
    Tool(name="echo", description="Echo a message back.",
         input_schema={"type": "object", "properties": {"message": {"type": "string"}},
                       "required": ["message"]}),
    Tool(name="add", description="Add two numbers.",
         input_schema={"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                       "required": ["a", "b"]}),
    Tool(name="long_task", description="Work for a while, reporting progress at every step.",
         input_schema={"type": "object", "properties": {
             "steps": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 20},
             "interval": {"type": "number", "minimum": 0, "maximum": 5, "default": 0.1}}}),
]

# A running job yields the delay before its next step; its return value ends it.
Job = Iterator[float]


class DemoServer:
    """The demo's tools, resources and prompts on top of a ``ServerSession``."""

    def __init__(self) -> None:
        self.session = ServerSession(
            Implementation(name="mcp-sansio-demo", version="0.1.0", title="mcp-sansio demo server"),
            ServerCapabilities(tools=ToolsCapability(), resources=ResourcesCapability(),
                               prompts=PromptsCapability(), logging={}),
            instructions="A demo server: try the long_task tool to watch progress.",
        )
        self._jobs: list[tuple[float, int, RequestId, Job]] = []
        self._cancelled: set[RequestId] = set()
        self._seq = 0
        self._handlers: Mapping[str, Callable[[ClientRequestReceived, float], None]] = {
            "tools/list": lambda ev, now: self.session.respond(ev.request_id, ListToolsResult(tools=TOOLS)),
            "tools/call": self._call,
            "resources/list": lambda ev, now: self.session.respond(ev.request_id, ListResourcesResult(
                resources=[Resource(uri="demo://readme", name="readme", mime_type="text/plain")])),
            "resources/read": self._read,
            "prompts/list": lambda ev, now: self.session.respond(ev.request_id, ListPromptsResult(
                prompts=[Prompt(name="greeting", arguments=[PromptArgument(name="name", required=True)])])),
            "prompts/get": self._prompt,
        }

    def handle_events(self, now: float) -> None:
        """Answer or schedule everything the session has queued."""
        while (event := self.session.next_event()) is not None:
            if isinstance(event, ClientRequestReceived):
                handler = self._handlers.get(event.method)
                if handler is None:
                    self.session.respond_error(event.request_id, -32601, f"not supported: {event.method}")
                else:
                    handler(event, now)
            elif (isinstance(event, NotificationReceived)
                  and isinstance(event.params, CancelledNotificationParams)
                  and event.params.request_id is not None):
                self._cancelled.add(event.params.request_id)

    def run_due_jobs(self, now: float) -> float | None:
        """Step every job whose time has come; return the next job's time."""
        jobs = self._jobs
        while jobs and jobs[0][0] <= now:
            _, _, rid, job = heapq.heappop(jobs)
            if rid in self._cancelled:
                self._cancelled.discard(rid)
                continue
            try:
                delay = next(job)
            except StopIteration:
                continue
            self._schedule(now + delay, rid, job)
        return jobs[0][0] if jobs else None

    def _schedule(self, at: float, rid: RequestId, job: Job) -> None:
        self._seq += 1
        heapq.heappush(self._jobs, (at, self._seq, rid, job))

    def _call(self, event: ClientRequestReceived, now: float) -> None:
        params = event.params
        assert isinstance(params, CallToolRequestParams)
        args = params.arguments or {}
        rid = event.request_id
        try:
            if params.name == "echo":
                self._text(rid, str(args["message"]))
            elif params.name == "add":
                self._text(rid, repr(_number(args["a"]) + _number(args["b"])))
            elif params.name == "long_task":
                steps = int(_number(args.get("steps", 20)))
                interval = _number(args.get("interval", 0.1))
                self._schedule(now, rid, self._long_task(rid, event.progress_token, steps, interval))
            else:
                self.session.respond_error(rid, _INVALID_PARAMS, f"unknown tool: {params.name}")
        except (KeyError, TypeError, ValueError) as exc:
            self.session.respond(rid, CallToolResult(
                content=[TextContent(text=f"bad arguments: {exc!r}")], is_error=True))

    def _long_task(self, rid: RequestId, token: str | int | None, steps: int, interval: float) -> Job:
        for step in range(1, steps + 1):
            yield interval
            if token is not None:
                self.session.send_progress(token, step, steps, f"step {step} of {steps}")
        self._text(rid, f"finished {steps} steps")

    def _read(self, event: ClientRequestReceived, now: float) -> None:
        params = event.params
        assert isinstance(params, ReadResourceRequestParams)
        if params.uri != "demo://readme":
            self.session.respond_error(event.request_id, _INVALID_PARAMS, f"no resource {params.uri}")
            return
        self.session.respond(event.request_id, ReadResourceResult(
            contents=[ResourceContents(uri=params.uri, mime_type="text/plain", text=_README)]))

    def _prompt(self, event: ClientRequestReceived, now: float) -> None:
        params = event.params
        assert isinstance(params, GetPromptRequestParams)
        name = (params.arguments or {}).get("name", "there")
        self.session.respond(event.request_id, GetPromptResult(messages=[
            PromptMessage(role="user", content=TextContent(text=f"Say hello to {name}."))]))

    def _text(self, rid: RequestId, text: str) -> None:
        self.session.respond(rid, CallToolResult(content=[TextContent(text=text)]))


def _number(value: object) -> float:
    """A JSON number argument (a bool or a string is a bad argument, not a number)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    raise TypeError(f"expected a number, got {value!r}")


def main() -> None:
    """Serve one client on stdin/stdout until stdin closes."""
    server = DemoServer()
    stdin, stdout = sys.stdin.fileno(), sys.stdout.fileno()
    os.set_blocking(stdin, False)
    selector = selectors.DefaultSelector()
    selector.register(stdin, selectors.EVENT_READ)
    next_job: float | None = None
    while True:
        timeout = None if next_job is None else max(0.0, next_job - time.monotonic())
        if selector.select(timeout):
            try:
                data = os.read(stdin, 65536)
            except BlockingIOError:
                data = None
            if data is not None:
                server.session.receive_data(data)
                server.handle_events(time.monotonic())
                if not data:
                    break
        next_job = server.run_due_jobs(time.monotonic())
        out = server.session.data_to_send()
        while out:
            written = os.write(stdout, out)
            out = out[written:]


if __name__ == "__main__":
    main()
