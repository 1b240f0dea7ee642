"""The protocol model: which case to send next, from the era, the server's surface and a
seeded generator.

State held: besides a connection's steps (:class:`~.messages.Messages`: its request ids,
its rules, the generator), the round counter, which each call of :meth:`Planner.cases`
advances so that rounds draw new values, deeper nesting and fresh names and can repeat
until the budget runs out. The Streamable HTTP probes are :mod:`.plan_http`'s.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final
from urllib.parse import quote

import msgspec

from .case import Case, CaseStep, Check, Expect, Replies, raw_step
from .messages import CLIENT_CAPABILITIES, Messages
from .peer import PLAUSIBLE_ANSWERS
from .rng import Rng
from .surface import LIST_METHODS, Surface
from .values import EDGE_STRINGS, boundary_values, valid_value, violations
from .wire import decode_json, garbage, odd_ids, result_of

__all__ = ["BOGUS_VERSION", "DEEP_LEVELS", "Planner", "Surface"]

BOGUS_VERSION: Final = "fuzz-1999-01-01"
DEEP_LEVELS: Final = (256, 64, 1024, 8192)
HUGE_STRING: Final = 1 << 20


class Planner(Messages):
    """Makes the cases of one connection's life, for one protocol revision: the
    lifecycle's, the inputs', and one round after another over the surface and the
    protocol.

    Args:
        rng: the run's generator (the planner forks its own streams from it).
        version: the revision to speak (a row of ``versions.py``).
        ping_timeout: seconds a liveness probe may take ("promptly", says the spec).
    """

    def __init__(self, rng: Rng, version: str, ping_timeout: float = 5.0) -> None:
        super().__init__(rng, version, ping_timeout)
        self._round = 0

    # -- cases --------------------------------------------------------------------
    def fresh_cases(self) -> list[Case]:
        """Cases that need a connection of their own (lifecycle order)."""
        cases = [Case(name="ping first", fresh=True, steps=(self.ping(), *self.opening(), self.ping()))]
        if not self.rules.handshake:
            return cases
        list_first = self.request("tools/list", label="tools/list before initialize", check=Check.NONE)
        cases.append(
            Case(
                name="request before initialize", fresh=True, steps=(list_first, *self.opening(), self.ping())
            )
        )
        init, _initialized = self.opening()
        cases.append(
            Case(
                name="initialized missing",
                fresh=True,
                steps=(
                    init,
                    self.request("tools/list", label="tools/list without initialized", check=Check.NONE),
                    self.ping(),
                ),
            )
        )
        cases.append(
            Case(
                name="second initialize",
                fresh=True,
                steps=(*self.opening(), *self.opening(check=Check.NONE)[:1], self.ping()),
            )
        )
        cases.append(
            Case(
                name="unknown protocol version",
                fresh=True,
                steps=(*self.opening(BOGUS_VERSION, check=Check.BOGUS_VERSION), self.ping()),
            )
        )
        return cases

    def input_cases(self, surface: Surface) -> list[Case]:
        """Sessions that declare sampling, elicitation and roots, then call every tool while
        answering the server's requests wrongly, never, or late: the server must stay up.
        In the stateless era the calls declare the capabilities in ``_meta`` instead, and an
        ``input_required`` answer is followed up (:meth:`follow_up`)."""
        if not surface.tools:
            return []
        rng = self.rng.fork("input")
        tools = sorted(surface.tools, key=lambda t: str(t.get("name")))[:10]
        if not self.rules.handshake:
            calls = [
                self.call(
                    t,
                    valid_value(t.get("inputSchema") or {}, rng),
                    "declaring every capability",
                    Check.RESULT,
                    capabilities=CLIENT_CAPABILITIES,
                    follow=True,
                )
                for t in tools
            ]
            return [
                Case(
                    name="input rounds",
                    fresh=True,
                    steps=(*calls, self.ping()),
                    capabilities=dict(CLIENT_CAPABILITIES),
                )
            ]
        out = []
        for replies in (Replies.WRONG, Replies.NEVER, Replies.LATE):
            calls = [
                self.call(
                    t,
                    valid_value(t.get("inputSchema") or {}, rng),
                    f"with {replies.value} answers",
                    Check.NONE,
                    timeout=0.0,
                )
                for t in sorted(surface.tools, key=lambda t: str(t.get("name")))[:10]
            ]
            steps = (*self.opening(capabilities=CLIENT_CAPABILITIES), *calls, self.ping())
            out.append(
                Case(
                    name=f"server requests answered {replies.value}",
                    fresh=True,
                    steps=steps,
                    capabilities=dict(CLIENT_CAPABILITIES),
                    replies=replies,
                )
            )
        return out

    def follow_up(self, step: CaseStep, answer: bytes) -> list[CaseStep]:
        """After an ``input_required`` answer to ``step``: the retry with answers to its
        ``inputRequests`` and a tampered ``requestState``, then the untampered state twice
        (a replay), then a liveness probe; nothing for any other answer."""
        result = result_of(answer)
        if result.get("resultType") != "input_required":
            return []
        state = result.get("requestState")
        requests = result.get("inputRequests")
        responses = {
            key: PLAUSIBLE_ANSWERS.get(str(value.get("method")), {})
            for key, value in (requests.items() if isinstance(requests, dict) else [])
            if isinstance(value, dict)
        }
        original = decode_json(step.data)
        params = original.get("params") if isinstance(original, dict) else None
        if not isinstance(params, dict):
            return []
        base = {k: v for k, v in params.items() if k != "_meta"}
        caps = dict(CLIENT_CAPABILITIES)
        steps = []
        states: list[tuple[str, object]] = [("replayed", state), ("replayed twice", state)]
        if isinstance(state, str):
            states.insert(0, ("tampered", state[:-4] + "fuzz" if len(state) >= 8 else state + "fuzz"))
        for why, value in states:
            retry = {**base, "inputResponses": responses}
            if value is not None:
                retry["requestState"] = value
            steps.append(
                self.request(
                    str(step.method),
                    retry,
                    label=f"{step.label}: retry, requestState {why}",
                    capabilities=caps,
                    tool=step.tool,
                    patient=True,
                    timeout=10.0,
                )
            )
        return [*steps, self.ping()]

    def cases(self, surface: Surface) -> list[Case]:
        """One round of cases over the whole surface and the protocol; each round draws
        new values, so rounds can repeat until the budget runs out."""
        self._round += 1
        rng = self.rng.fork(f"round-{self._round}")
        out: list[Case] = []
        for tool in sorted(surface.tools, key=lambda t: str(t.get("name"))):
            out += self._tool_cases(tool, rng)
        out += self._protocol_cases(surface, rng)
        out += self._resource_cases(surface, rng)
        out += self._prompt_cases(surface, rng)
        return out

    def _tool_cases(self, tool: Mapping[str, object], rng: Rng) -> list[Case]:
        schema = tool.get("inputSchema")
        schema = schema if isinstance(schema, dict) else {}
        name = str(tool.get("name"))
        out = [self.case(f"{name} valid", self.call(tool, valid_value(schema, rng), "valid", Check.RESULT))]
        out += [
            self.case(
                f"{name} {v.kind} {v.path}",
                self.call(tool, v.value, f"{v.kind} {v.path}", Check.INVALID_ARGS),
            )
            for v in violations(schema, rng)
        ]
        bounds = boundary_values(schema, rng)
        picks = sorted({rng.below(len(bounds)) for _ in range(3)}) if bounds else []
        out += [
            self.case(
                f"{name} {v.kind} {v.path}", self.call(tool, v.value, f"{v.kind} {v.path}", Check.RESULT)
            )
            for v in (bounds[i] for i in picks)
        ]
        depth = DEEP_LEVELS[(self._round - 1) % len(DEEP_LEVELS)]
        out.append(
            self.case(
                f"{name} deep argument",
                self.call(
                    tool,
                    {"fuzz_deep": "\x00DEEP\x00"},
                    f"deep argument ({depth} levels)",
                    Check.NONE,
                    timeout=0.0,
                    data=lambda raw: raw.replace(b'"\\u0000DEEP\\u0000"', b"[" * depth + b"]" * depth),
                ),
            )
        )
        base = valid_value(schema, rng)
        text_props = [
            k
            for k, v in (schema.get("properties") or {}).items()
            if isinstance(v, dict) and v.get("type") == "string"
        ]
        if isinstance(base, dict) and text_props:
            base[rng.choice(text_props)] = "\x00DEEP\x00"
            out.append(
                self.case(
                    f"{name} huge string",
                    self.call(
                        tool,
                        base,
                        f"huge string ({HUGE_STRING} bytes)",
                        Check.NONE,
                        timeout=0.0,
                        data=lambda raw: raw.replace(
                            b'"\\u0000DEEP\\u0000"', b'"' + b"h" * HUGE_STRING + b'"'
                        ),
                    ),
                )
            )
        call = self.call(
            tool,
            valid_value(schema, rng),
            "cancelled in flight",
            Check.NONE,
            expect=Expect.CANCELLED,
            timeout=0.0,
        )
        out.append(self.case(f"{name} cancelled", call, self.cancel(call.id, "in-flight"), self.ping()))
        token = f"fuzz-progress-{self._round}"
        calls = [
            self.call(
                tool,
                valid_value(schema, rng),
                f"concurrent {i} (progress token reused)",
                Check.RESULT,
                timeout=0.0,
                progress_token=token,
            )
            for i in range(3)
        ]
        out.append(self.case(f"{name} concurrent calls", *calls))
        return out

    def _protocol_cases(self, surface: Surface, rng: Rng) -> list[Case]:
        out = [
            self.case(
                "unknown method",
                self.request("fuzz/unknown", label="unknown method", check=Check.UNKNOWN_METHOD),
            ),
            self.case("unknown notification", self.notification("notifications/fuzz_unknown", {})),
            self.case(
                "unknown params field",
                self.request(
                    "ping" if self.rules.ping else "server/discover",
                    {"fuzz_unknown": {"a": [1, None]}},
                    label="liveness with an unknown field",
                    check=Check.PING,
                ),
            ),
            self.case("cancel unknown id", self.cancel(10_000_000 + self._round, "unknown")),
        ]
        if "tools" in surface.capabilities:
            listed = {str(t.get("name")) for t in surface.tools}
            name = f"fuzz_unlisted_tool_{self._round}"
            while name in listed:
                name += "_"
            out.append(
                self.case(
                    "unlisted tool",
                    self.request(
                        "tools/call",
                        {"name": name, "arguments": {}},
                        label=f"tools/call {name} (a tool never listed)",
                        check=Check.UNKNOWN_TOOL,
                        patient=True,
                        timeout=5.0,
                    ),
                )
            )
        finished = self.ping()
        out.append(self.case("cancel finished", finished, self.cancel(finished.id, "finished")))
        twin = msgspec.structs.replace(
            self.ping(), label="two requests with one id", id=None, expect=Expect.ANY
        )
        out.append(self.case("duplicate ids", twin, twin))
        for label, data in garbage(rng, self.new_id):
            out.append(self.case(label, raw_step(data, label)))
        for label, rid, check in odd_ids(self.new_id()):
            method = "ping" if self.rules.ping else "server/discover"
            step = self.request(method, label=label, request_id=rid, check=check)
            if check is Check.INVALID_REQUEST:
                step = msgspec.structs.replace(step, id=None, expect=Expect.ANY)
            out.append(self.case(label, step))
        for method in LIST_METHODS:
            if surface.offers(method):
                out.append(
                    self.case(
                        f"{method} forged cursor",
                        self.request(
                            method,
                            {"cursor": "fuzz-forged-cursor-" + "%" * rng.randint(1, 4)},
                            label=f"{method} forged cursor",
                            check=Check.FORGED_CURSOR,
                        ),
                    )
                )
        if self.rules.set_level and "logging" in surface.capabilities:
            out.append(
                self.case(
                    "logging bogus level",
                    self.request(
                        "logging/setLevel", {"level": "fuzz-level"}, label="logging/setLevel bogus level"
                    ),
                )
            )
        return out

    def _resource_cases(self, surface: Surface, rng: Rng) -> list[Case]:
        out = []
        for resource in surface.resources[:8]:
            uri = resource.get("uri")
            out.append(
                self.case(
                    f"read {uri}",
                    self.request(
                        "resources/read",
                        {"uri": uri},
                        label=f"resources/read {uri}",
                        check=Check.RESULT,
                        patient=True,
                        timeout=10.0,
                    ),
                )
            )
        if surface.offers("resources/list"):
            out.append(
                self.case(
                    "read unknown resource",
                    self.request(
                        "resources/read",
                        {"uri": f"fuzz://missing/{rng.below(1000)}"},
                        label="resources/read unknown uri",
                        patient=True,
                        timeout=10.0,
                    ),
                )
            )
        for template in surface.templates[:4]:
            pattern = str(template.get("uriTemplate", ""))
            filler = quote(rng.choice(("fuzz", *EDGE_STRINGS[:10])), safe="")
            uri = re.sub(r"\{[^}]*\}", filler, pattern)  # percent-encoded: no backslash for re.sub
            out.append(
                self.case(
                    f"read template {pattern}",
                    self.request(
                        "resources/read",
                        {"uri": uri},
                        label=f"resources/read {uri[:80]} (from {pattern})",
                        check=Check.RESULT,
                        patient=True,
                        timeout=10.0,
                    ),
                )
            )
        caps = surface.capabilities.get("resources")
        if self.rules.subscribe and isinstance(caps, dict) and caps.get("subscribe") and surface.resources:
            uri = surface.resources[0].get("uri")
            storm = [
                self.request(method, {"uri": uri}, label=f"{method} storm", timeout=0.0)
                for _ in range(20)
                for method in ("resources/subscribe", "resources/unsubscribe")
            ]
            out.append(self.case("subscribe storm", *storm))
        return out

    def _prompt_cases(self, surface: Surface, rng: Rng) -> list[Case]:
        out = []
        for prompt in surface.prompts[:8]:
            name = prompt.get("name")
            args = prompt.get("arguments")
            specs = [a for a in args if isinstance(a, dict)] if isinstance(args, list) else []
            values = {str(a.get("name")): str(valid_value({"type": "string"}, rng)) for a in specs}
            out.append(
                self.case(
                    f"prompt {name}",
                    self.request(
                        "prompts/get",
                        {"name": name, "arguments": values},
                        label=f"prompts/get {name}",
                        check=Check.RESULT,
                        patient=True,
                        timeout=10.0,
                    ),
                )
            )
            if "completions" in surface.capabilities and specs:
                out.append(
                    self.case(
                        f"complete {name}",
                        self.request(
                            "completion/complete",
                            {
                                "ref": {"type": "ref/prompt", "name": name},
                                "argument": {"name": str(specs[0].get("name")), "value": "f"},
                            },
                            label=f"completion/complete {name}",
                            check=Check.RESULT,
                            patient=True,  # a completion may look things up: slowness is no finding
                        ),
                    )
                )
        return out
