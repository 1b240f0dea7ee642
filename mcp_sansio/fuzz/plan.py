"""The protocol model: which case to send next, from the era, the server's surface and a
seeded generator.

Handshake-era sessions open with ``initialize`` / ``notifications/initialized``; the
2026-07-28 era has no handshake, puts the protocol version, client capabilities and
client info in every request's ``_meta`` and uses ``server/discover`` as its liveness
probe (``versions.py`` rows say which). The planner owns request ids (one counter per
connection), so the steps it makes are exact bytes that replay unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Final
from urllib.parse import quote

import msgspec

from ..modern import request_meta, standard_headers
from ..versions import VersionRules, rules_for
from .case import Case, Check, Expect, Replies, Step, message_step, raw_step
from .peer import PLAUSIBLE_ANSWERS
from .rng import Rng
from .surface import LIST_METHODS, Surface
from .values import EDGE_STRINGS, boundary_values, valid_value, violations
from .wire import decode_json, garbage, odd_ids, result_of, without_header

__all__ = ["BOGUS_VERSION", "CLIENT_CAPABILITIES", "CLIENT_INFO", "DEEP_LEVELS", "Planner", "Surface"]

CLIENT_INFO: Final = {"name": "mcp-sansio-fuzz", "version": "0.1.0"}
CLIENT_CAPABILITIES: Final = {"sampling": {}, "elicitation": {"form": {}}, "roots": {"listChanged": True}}
BOGUS_VERSION: Final = "fuzz-1999-01-01"
FOREIGN_ORIGIN: Final = "http://fuzz-attacker.example"
HUGE_BODY: Final = 16 << 20
DEEP_LEVELS: Final = (256, 64, 1024, 8192)
HUGE_STRING: Final = 1 << 20
_AUTO: Final = object()


class Planner:
    """Makes the steps of one connection's life, for one protocol revision.

    Args:
        rng: the run's generator (the planner forks its own streams from it).
        version: the revision to speak (a row of ``versions.py``).
        ping_timeout: seconds a liveness probe may take ("promptly", says the spec).
    """

    def __init__(self, rng: Rng, version: str, ping_timeout: float = 5.0) -> None:
        rules = rules_for(version)
        if rules is None:
            raise ValueError(f"unknown protocol version {version!r}")
        self.rules: VersionRules = rules
        self.version = version
        self._rng = rng
        self._next_id = 0
        self._round = 0
        self.ping_timeout = ping_timeout

    # -- messages ---------------------------------------------------------------
    def new_id(self) -> int:
        """The next request id of this connection."""
        self._next_id += 1
        return self._next_id

    def request(
        self,
        method: str,
        params: Mapping[str, object] | None = None,
        *,
        label: str | None = None,
        request_id: object = _AUTO,
        capabilities: Mapping[str, object] | None = None,
        **fields: object,
    ) -> Step:
        """A request step; in the stateless era ``params._meta`` carries the version,
        ``capabilities`` (none by default) and client info."""
        rid = self.new_id() if request_id is _AUTO else request_id
        body: dict[str, object] = dict(params or {})
        if self.rules.request_meta:
            meta = body.get("_meta")
            body["_meta"] = {
                **(meta if isinstance(meta, dict) else {}),
                **request_meta(self.version, dict(capabilities or {}), CLIENT_INFO, None),
            }
        message: dict[str, object] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if body or self.rules.request_meta:
            message["params"] = body
        if self.rules.standard_headers and "headers" not in fields:
            # Streamable HTTP in the stateless era names the method (and tool, prompt or
            # resource) in headers, and the version on every request (ignored over stdio).
            fields["headers"] = (("mcp-protocol-version", self.version), *standard_headers(method, body))
        return message_step(message, label or method, **fields)

    def notification(
        self,
        method: str,
        params: Mapping[str, object] | None = None,
        label: str | None = None,
        **fields: object,
    ) -> Step:
        """A notification step (no answer expected)."""
        message: dict[str, object] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = dict(params)
        if self.rules.standard_headers:
            fields["headers"] = (("mcp-protocol-version", self.version), *standard_headers(method, params))
        return message_step(message, label or method, **fields)

    def ping(self) -> Step:
        """The liveness probe: ``ping``, or ``server/discover`` where ping does not exist."""
        method = "ping" if self.rules.ping else "server/discover"
        return self.request(method, label=f"liveness {method}", check=Check.PING, timeout=self.ping_timeout)

    def opening(
        self,
        version: str | None = None,
        check: Check = Check.RESULT,
        capabilities: Mapping[str, object] | None = None,
    ) -> list[Step]:
        """The handshake (``initialize`` then ``initialized``), or ``server/discover``."""
        if not self.rules.handshake:
            return [self.request("server/discover", check=check, timeout=10.0)]
        init = self.request(
            "initialize",
            {
                "protocolVersion": version or self.version,
                "capabilities": dict(capabilities or {}),
                "clientInfo": CLIENT_INFO,
            },
            check=check,
            timeout=10.0,
        )
        return [init, self.notification("notifications/initialized")]

    def list_page(self, method: str, cursor: str | None) -> Step:
        """One page of a list method."""
        return self.request(method, {"cursor": cursor} if cursor else None, check=Check.RESULT, timeout=10.0)

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
        rng = self._rng.fork("input")
        tools = sorted(surface.tools, key=lambda t: str(t.get("name")))[:10]
        if not self.rules.handshake:
            calls = [
                self._call(
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
                self._call(
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

    def follow_up(self, step: Step, answer: bytes) -> list[Step]:
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
        rng = self._rng.fork(f"round-{self._round}")
        out: list[Case] = []
        for tool in sorted(surface.tools, key=lambda t: str(t.get("name"))):
            out += self._tool_cases(tool, rng)
        out += self._protocol_cases(surface, rng)
        out += self._resource_cases(surface, rng)
        out += self._prompt_cases(surface, rng)
        return out

    def _case(self, name: str, *steps: Step) -> Case:
        return Case(name=name, steps=(*steps, self.ping()))

    def _call(
        self,
        tool: Mapping[str, object],
        arguments: object,
        label: str,
        check: Check,
        *,
        data: Callable[[bytes], bytes] | None = None,
        capabilities: Mapping[str, object] | None = None,
        **fields: object,
    ) -> Step:
        name = str(tool.get("name"))
        fields = {"timeout": 5.0, "patient": True, **fields}
        params: dict[str, object] = {"name": name, "arguments": arguments}
        if isinstance(fields.get("progress_token"), str):
            params["_meta"] = {"progressToken": fields["progress_token"]}
        step = self.request(
            "tools/call",
            params,
            label=f"tools/call {name} {label}",
            check=check,
            tool=name,
            capabilities=capabilities,
            **fields,
        )
        return step if data is None else msgspec.structs.replace(step, data=data(step.data))

    def _tool_cases(self, tool: Mapping[str, object], rng: Rng) -> list[Case]:
        schema = tool.get("inputSchema")
        schema = schema if isinstance(schema, dict) else {}
        name = str(tool.get("name"))
        out = [self._case(f"{name} valid", self._call(tool, valid_value(schema, rng), "valid", Check.RESULT))]
        out += [
            self._case(
                f"{name} {v.kind} {v.path}",
                self._call(tool, v.value, f"{v.kind} {v.path}", Check.INVALID_ARGS),
            )
            for v in violations(schema, rng)
        ]
        bounds = boundary_values(schema, rng)
        picks = sorted({rng.below(len(bounds)) for _ in range(3)}) if bounds else []
        out += [
            self._case(
                f"{name} {v.kind} {v.path}", self._call(tool, v.value, f"{v.kind} {v.path}", Check.RESULT)
            )
            for v in (bounds[i] for i in picks)
        ]
        depth = DEEP_LEVELS[(self._round - 1) % len(DEEP_LEVELS)]
        out.append(
            self._case(
                f"{name} deep argument",
                self._call(
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
                self._case(
                    f"{name} huge string",
                    self._call(
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
        call = self._call(
            tool,
            valid_value(schema, rng),
            "cancelled in flight",
            Check.NONE,
            expect=Expect.CANCELLED,
            timeout=0.0,
        )
        out.append(self._case(f"{name} cancelled", call, self._cancel(call.id, "in-flight"), self.ping()))
        token = f"fuzz-progress-{self._round}"
        calls = [
            self._call(
                tool,
                valid_value(schema, rng),
                f"concurrent {i} (progress token reused)",
                Check.RESULT,
                timeout=0.0,
                progress_token=token,
            )
            for i in range(3)
        ]
        out.append(self._case(f"{name} concurrent calls", *calls))
        return out

    def http_cases(
        self, surface: Surface | None = None, *, auth: bool = False, endpoint: str = "/mcp"
    ) -> list[Case]:
        """Streamable HTTP probes on the open session: a wrong ``MCP-Protocol-Version``,
        a session id never issued, no session id, a forged ``Last-Event-ID``, a foreign
        ``Origin``, a 16 MiB body; with ``auth`` (the target is given credentials), no token
        and a forged one (each must get 401 and a way to find the resource metadata); in
        the stateless era, ``Mcp-Method`` and ``Mcp-Name`` headers that contradict the body."""
        out: list[Case] = []
        out.append(
            self._case(
                "foreign Origin",
                msgspec.structs.replace(
                    self.ping(),
                    label=f"liveness from Origin: {FOREIGN_ORIGIN}",
                    check=Check.STATUS_403,
                    headers=(*self.ping().headers, ("origin", FOREIGN_ORIGIN)),
                ),
            )
        )
        big = self.request(
            "ping" if self.rules.ping else "server/discover",
            {"fuzz_padding": "\x00PAD\x00"},
            label=f"a {HUGE_BODY >> 20} MiB body",
            check=Check.NONE,
            patient=True,
            timeout=0.0,
        )
        big = msgspec.structs.replace(
            big, data=big.data.replace(b'"\\u0000PAD\\u0000"', b'"' + b"p" * HUGE_BODY + b'"')
        )
        out.append(self._case("huge body", big))
        if auth:
            metadata = "/.well-known/oauth-protected-resource"
            lookups = [
                Step(label=f"GET {path}", expect=Expect.NOTHING, http_method="GET", timeout=5.0, path=path)
                for path in dict.fromkeys((metadata + endpoint.rstrip("/"), metadata))
            ]
            for label, token in (("without a token", ""), ("with a forged token", "Bearer fuzz-forged")):
                ping = self.ping()
                credentials = (*without_header(ping.headers, "authorization"), ("authorization", token))
                out.append(
                    self._case(
                        f"request {label}",
                        *lookups,
                        msgspec.structs.replace(
                            ping,
                            label=f"liveness {label}",
                            check=Check.STATUS_401,
                            headers=credentials,
                        ),
                    )
                )
        if self.rules.protocol_version_header:
            ping = self.ping()
            out.append(
                self._case(
                    "bogus protocol version header",
                    msgspec.structs.replace(
                        ping,
                        label="liveness with MCP-Protocol-Version: fuzz-0000",
                        check=Check.STATUS_400,
                        headers=(
                            *without_header(ping.headers, "mcp-protocol-version"),
                            ("mcp-protocol-version", "fuzz-0000"),
                        ),
                    ),
                )
            )
        if self.rules.standard_headers:
            ping = self.ping()
            out.append(
                self._case(
                    "Mcp-Method mismatch",
                    msgspec.structs.replace(
                        ping,
                        label="liveness with Mcp-Method: tools/list",
                        check=Check.STATUS_400,
                        headers=(*without_header(ping.headers, "mcp-method"), ("mcp-method", "tools/list")),
                    ),
                )
            )
            tools = surface.tools if surface is not None else []
            if tools:
                call = self._call(
                    tools[0], valid_value(tools[0].get("inputSchema") or {}, self._rng), "", Check.NONE
                )
                out.append(
                    self._case(
                        "Mcp-Name mismatch",
                        msgspec.structs.replace(
                            call,
                            label=f"{call.label}with Mcp-Name: fuzz-other-tool",
                            check=Check.STATUS_400,
                            headers=(
                                *without_header(call.headers, "mcp-name"),
                                ("mcp-name", "fuzz-other-tool"),
                            ),
                        ),
                    )
                )
        if self.rules.sessions:
            out.append(
                self._case(
                    "forged session id",
                    msgspec.structs.replace(
                        self.ping(),
                        label="liveness with a forged Mcp-Session-Id",
                        check=Check.NONE,
                        session="fuzz-forged-session",
                    ),
                )
            )
            out.append(
                self._case(
                    "no session id",
                    msgspec.structs.replace(
                        self.ping(), label="liveness without Mcp-Session-Id", check=Check.NONE, session="none"
                    ),
                )
            )
        for name, value in (("accept", "text/html"), ("content-type", "text/plain")):
            ping = self.ping()
            headers = (*without_header(ping.headers, name), (name, value))
            label = f"liveness with {name}: {value}"
            out.append(
                self._case(
                    f"{name}: {value}",
                    msgspec.structs.replace(ping, label=label, check=Check.NONE, headers=headers),
                )
            )
        if self.rules.resumable_streams:
            out.append(
                self._case(
                    "forged Last-Event-ID",
                    Step(
                        label="GET with a forged Last-Event-ID",
                        expect=Expect.NOTHING,
                        http_method="GET",
                        timeout=0.0,
                        headers=(("last-event-id", "fuzz-forged-event-" + "9" * 40),),
                    ),
                )
            )
        return out

    def http_fresh_cases(self, other: tuple[tuple[str, str], ...] = ()) -> list[Case]:
        """Streamable HTTP probes that need sessions of their own: the session is deleted,
        then used again (it must get 404); two clients open sessions A and B, then A's id is
        used by B (refused only if ``other``, B's credentials, name another principal: without
        authorization the spec cannot tell clients apart), from a foreign ``Origin``, and
        deleted from one (both must get 403); session ids are judged for guessability."""
        if not self.rules.sessions or not self.rules.handshake:
            return []
        delete = Step(label="DELETE the session", expect=Expect.NOTHING, http_method="DELETE", timeout=5.0)
        stale = msgspec.structs.replace(
            self.ping(), label="liveness on the deleted session", check=Check.STATUS_404
        )
        cases = [Case(name="session deleted then reused", fresh=True, steps=(*self.opening(), delete, stale))]
        origin = (("origin", FOREIGN_ORIGIN),)
        a_open = self.opening()
        b_init, b_initialized = self.opening()
        b_steps = (
            msgspec.structs.replace(b_init, label="B: initialize", session="none", headers=other),
            msgspec.structs.replace(b_initialized, label="B: initialized", session="#1", headers=other),
        )
        ping = self.ping()
        borrowed = msgspec.structs.replace(
            ping,
            label="client B (another principal) uses A's session" if other else "client B uses A's session",
            session="#0",
            headers=(*ping.headers, *other),
            check=Check.OTHER_PRINCIPAL if other else Check.NONE,
            patient=True,
        )
        ping = self.ping()
        foreign = msgspec.structs.replace(
            ping,
            label=f"A's session used from Origin: {FOREIGN_ORIGIN}",
            session="#0",
            headers=(*ping.headers, *origin),
            check=Check.STATUS_403,
        )
        kill = Step(
            label=f"DELETE A's session from Origin: {FOREIGN_ORIGIN}",
            expect=Expect.NOTHING,
            http_method="DELETE",
            timeout=5.0,
            session="#0",
            headers=origin,
            check=Check.STATUS_403,
        )
        after = msgspec.structs.replace(
            self.ping(), label="A: liveness on its session", session="#0", check=Check.NONE, patient=True
        )
        cases.append(
            Case(
                name="another client's session",
                fresh=True,
                steps=(*a_open, *b_steps, borrowed, foreign, kill, after),
            )
        )
        return cases

    def _cancel(self, request_id: object, why: str) -> Step:
        return self.notification(
            "notifications/cancelled",
            {"requestId": request_id, "reason": "fuzz"},
            label=f"cancel {why} id {request_id}",
            cancels=request_id if isinstance(request_id, int | str) else None,
        )

    def _protocol_cases(self, surface: Surface, rng: Rng) -> list[Case]:
        out = [
            self._case(
                "unknown method",
                self.request("fuzz/unknown", label="unknown method", check=Check.UNKNOWN_METHOD),
            ),
            self._case("unknown notification", self.notification("notifications/fuzz_unknown", {})),
            self._case(
                "unknown params field",
                self.request(
                    "ping" if self.rules.ping else "server/discover",
                    {"fuzz_unknown": {"a": [1, None]}},
                    label="liveness with an unknown field",
                    check=Check.PING,
                ),
            ),
            self._case("cancel unknown id", self._cancel(10_000_000 + self._round, "unknown")),
        ]
        if "tools" in surface.capabilities:
            listed = {str(t.get("name")) for t in surface.tools}
            name = f"fuzz_unlisted_tool_{self._round}"
            while name in listed:
                name += "_"
            out.append(
                self._case(
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
        out.append(self._case("cancel finished", finished, self._cancel(finished.id, "finished")))
        twin = msgspec.structs.replace(
            self.ping(), label="two requests with one id", id=None, expect=Expect.ANY
        )
        out.append(self._case("duplicate ids", twin, twin))
        for label, data in garbage(rng, self.new_id):
            out.append(self._case(label, raw_step(data, label)))
        for label, rid, check in odd_ids(self.new_id()):
            method = "ping" if self.rules.ping else "server/discover"
            step = self.request(method, label=label, request_id=rid, check=check)
            if check is Check.INVALID_REQUEST:
                step = msgspec.structs.replace(step, id=None, expect=Expect.ANY)
            out.append(self._case(label, step))
        for method in LIST_METHODS:
            if surface.offers(method):
                out.append(
                    self._case(
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
                self._case(
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
                self._case(
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
                self._case(
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
                self._case(
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
            out.append(self._case("subscribe storm", *storm))
        return out

    def _prompt_cases(self, surface: Surface, rng: Rng) -> list[Case]:
        out = []
        for prompt in surface.prompts[:8]:
            name = prompt.get("name")
            args = prompt.get("arguments")
            specs = [a for a in args if isinstance(a, dict)] if isinstance(args, list) else []
            values = {str(a.get("name")): str(valid_value({"type": "string"}, rng)) for a in specs}
            out.append(
                self._case(
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
                    self._case(
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
