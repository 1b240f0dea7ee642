"""A Hypothesis state machine driving both cores through the pair harness.

Each run picks an era, a transport (stdio, or Streamable HTTP) and a wire (whole
messages, or random chunks, over stdio with a delay), then
interleaves tool calls (plain, asking the client, and one that waits forever), pings,
cancellations and the clock. Whatever the interleaving: every request ends exactly once,
a finished call carries its own answer, a cancelled one no answer, and once the clock has
run out no handler is left running on the server.
"""

from __future__ import annotations

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from pair import Faults, HttpPair, Pair

from mcp_sansio import ClientConfig, FailureReason, RequestFailed, ResponseReceived
from mcp_sansio.server import Context, MCPServer
from mcp_sansio.types import CallToolResult, ClientCapabilities, EmptyResult, TextContent

CAPS = ClientCapabilities(elicitation={"form": {}})


def _app() -> MCPServer:
    app = MCPServer("machine")

    @app.tool()
    def add(a: int, b: int) -> int:
        return a + b

    @app.tool()
    async def greet(ctx: Context) -> str:
        answer = await ctx.elicit("name", {"type": "object"})
        return f"hello {answer.content}"

    @app.tool()
    async def stall(ctx: Context) -> str:
        await ctx.elicit("never answered", {"type": "object"})
        return "answered"

    return app


def _answer(params: object) -> dict[str, object] | None:
    if getattr(params, "message", "") == "never answered":
        return None  # left pending: the call stalls until cancelled
    return {"action": "accept", "content": {"name": "Ada"}}


class PairMachine(RuleBasedStateMachine):
    """Both cores, one interleaving per example."""

    pair: Pair | HttpPair

    def __init__(self) -> None:
        super().__init__()
        self.expected: dict[int, str | None] = {}  # request -> the text it must bring (None: any)
        self.cancelled: set[int] = set()
        self.ended: dict[int, ResponseReceived | RequestFailed] = {}
        self.stalled: set[int] = set()

    @initialize(era=st.sampled_from(["2025-11-25", "2026-07-28"]), http=st.booleans(), split=st.booleans(),
                seed=st.integers(0, 2**16))
    def start(self, era: str, http: bool, split: bool, seed: int) -> None:
        config = ClientConfig(protocol=era, request_timeout=30.0)
        answers = {"elicitation/create": _answer}
        if http:
            self.pair = HttpPair(_app(), config=config, capabilities=CAPS, answers=answers,
                                 faults=Faults(seed=seed, split=split))
        else:
            delay = 0.05 if split else 0.0
            self.pair = Pair(_app(), config=config, capabilities=CAPS, answers=answers,
                             faults=Faults(seed=seed, split=split, delay=delay))
        self.pair.start()
        self._run(1.0)
        assert self.pair.client.protocol_version == era
        self.pair.take_client_events()

    def _run(self, seconds: float) -> None:
        steps = max(1, round(seconds / 0.05))
        for _ in range(steps):
            self.pair.advance(seconds / steps)
        for event in self.pair.take_client_events():
            if isinstance(event, ResponseReceived | RequestFailed):
                rid = event.request_id
                assert isinstance(rid, int)
                assert rid not in self.ended, f"request {rid} ended twice"
                self.ended[rid] = event

    @rule(a=st.integers(-1000, 1000), b=st.integers(-1000, 1000))
    def call_add(self, a: int, b: int) -> None:
        rid = self.pair.client.call_tool("add", {"a": a, "b": b}, now=self.pair.now)
        self.expected[rid] = str(a + b)

    @rule()
    def call_greet(self) -> None:
        rid = self.pair.client.call_tool("greet", {}, now=self.pair.now)
        self.expected[rid] = "hello {'name': 'Ada'}"

    @precondition(lambda self: self.pair.client.protocol_version != "2026-07-28")
    @rule()
    def call_stall(self) -> None:
        rid = self.pair.client.call_tool("stall", {}, now=self.pair.now)
        self.stalled.add(rid)

    @rule()
    def ping(self) -> None:
        self.expected[self.pair.client.ping(now=self.pair.now)] = None

    @rule(data=st.data())
    def cancel(self, data: st.DataObject) -> None:
        waiting = sorted(set(self.pair.client.pending_requests()) & (set(self.expected) | self.stalled))
        if not waiting:
            return
        rid = data.draw(st.sampled_from(waiting))
        assert isinstance(rid, int)
        self.pair.client.cancel(rid, now=self.pair.now)
        self.cancelled.add(rid)

    @rule(seconds=st.sampled_from([0.05, 0.2, 1.0]))
    def wait(self, seconds: float) -> None:
        self._run(seconds)

    @invariant()
    def answers_are_right(self) -> None:
        if not hasattr(self, "pair"):
            return
        for rid, event in self.ended.items():
            if rid in self.cancelled:
                assert isinstance(event, RequestFailed) and event.reason is FailureReason.CANCELLED, event
                continue
            assert isinstance(event, ResponseReceived), event
            want = self.expected.get(rid)
            if want is None:
                assert isinstance(event.result, EmptyResult | CallToolResult)
                continue
            assert isinstance(event.result, CallToolResult) and not event.result.is_error, event
            block = event.result.content[0]
            assert isinstance(block, TextContent) and block.text == want

    def teardown(self) -> None:
        if not hasattr(self, "pair"):
            return
        for rid in sorted(self.stalled.intersection(self.pair.client.pending_requests())):
            self.pair.client.cancel(rid, now=self.pair.now)
            self.cancelled.add(rid)
        self._run(2.0)
        self.answers_are_right()
        assert set(self.expected) | self.stalled <= set(self.ended), "a request never ended"
        assert self.pair.runner.running == 0, "a handler is still running on the server"
        assert all(task.finished for task in self.pair.loop.tasks), "a handler task was left behind"


PairMachine.TestCase.settings = settings(max_examples=40, stateful_step_count=20, deadline=None)
test_the_pair_ends_every_request_once = PairMachine.TestCase
