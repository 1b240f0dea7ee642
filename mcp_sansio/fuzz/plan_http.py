"""The fuzzer's Streamable HTTP probes: headers, sessions and bodies a server must refuse.

State held: none; the cases are made with a connection's :class:`~.messages.Messages`
(whose id counter and generator they advance), apart from the planner's protocol-level
cases because only an HTTP target gets them and they speak of headers and sessions, not
of methods. See the "Transports" page of each revision of the MCP specification.
"""

from __future__ import annotations

from typing import Final

import msgspec

from .case import Case, CaseStep, Check, Expect
from .messages import Messages
from .surface import Surface
from .values import valid_value
from .wire import without_header

__all__ = ["FOREIGN_ORIGIN", "http_cases", "http_fresh_cases"]

FOREIGN_ORIGIN: Final = "http://fuzz-attacker.example"
HUGE_BODY: Final = 16 << 20


def http_cases(
    msgs: Messages, surface: Surface | None = None, *, auth: bool = False, endpoint: str = "/mcp"
) -> list[Case]:
    """Streamable HTTP probes on the open session: a wrong ``MCP-Protocol-Version``,
    a session id never issued, no session id, a forged ``Last-Event-ID``, a foreign
    ``Origin``, a 16 MiB body; with ``auth`` (the target is given credentials), no token
    and a forged one (each must get 401 and a way to find the resource metadata); in
    the stateless era, ``Mcp-Method`` and ``Mcp-Name`` headers that contradict the body."""
    out: list[Case] = []
    out.append(
        msgs.case(
            "foreign Origin",
            msgspec.structs.replace(
                msgs.ping(),
                label=f"liveness from Origin: {FOREIGN_ORIGIN}",
                check=Check.STATUS_403,
                headers=(*msgs.ping().headers, ("origin", FOREIGN_ORIGIN)),
            ),
        )
    )
    big = msgs.request(
        "ping" if msgs.rules.ping else "server/discover",
        {"fuzz_padding": "\x00PAD\x00"},
        label=f"a {HUGE_BODY >> 20} MiB body",
        check=Check.NONE,
        patient=True,
        timeout=0.0,
    )
    big = msgspec.structs.replace(
        big, data=big.data.replace(b'"\\u0000PAD\\u0000"', b'"' + b"p" * HUGE_BODY + b'"')
    )
    out.append(msgs.case("huge body", big))
    if auth:
        metadata = "/.well-known/oauth-protected-resource"
        lookups = [
            CaseStep(label=f"GET {path}", expect=Expect.NOTHING, http_method="GET", timeout=5.0, path=path)
            for path in dict.fromkeys((metadata + endpoint.rstrip("/"), metadata))
        ]
        for label, token in (("without a token", ""), ("with a forged token", "Bearer fuzz-forged")):
            ping = msgs.ping()
            credentials = (*without_header(ping.headers, "authorization"), ("authorization", token))
            out.append(
                msgs.case(
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
    if msgs.rules.protocol_version_header:
        ping = msgs.ping()
        out.append(
            msgs.case(
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
    if msgs.rules.standard_headers:
        ping = msgs.ping()
        out.append(
            msgs.case(
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
            call = msgs.call(
                tools[0], valid_value(tools[0].get("inputSchema") or {}, msgs.rng), "", Check.NONE
            )
            out.append(
                msgs.case(
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
    if msgs.rules.sessions:
        out.append(
            msgs.case(
                "forged session id",
                msgspec.structs.replace(
                    msgs.ping(),
                    label="liveness with a forged Mcp-Session-Id",
                    check=Check.NONE,
                    session="fuzz-forged-session",
                ),
            )
        )
        out.append(
            msgs.case(
                "no session id",
                msgspec.structs.replace(
                    msgs.ping(), label="liveness without Mcp-Session-Id", check=Check.NONE, session="none"
                ),
            )
        )
    for name, value in (("accept", "text/html"), ("content-type", "text/plain")):
        ping = msgs.ping()
        headers = (*without_header(ping.headers, name), (name, value))
        label = f"liveness with {name}: {value}"
        out.append(
            msgs.case(
                f"{name}: {value}",
                msgspec.structs.replace(ping, label=label, check=Check.NONE, headers=headers),
            )
        )
    if msgs.rules.resumable_streams:
        out.append(
            msgs.case(
                "forged Last-Event-ID",
                CaseStep(
                    label="GET with a forged Last-Event-ID",
                    expect=Expect.NOTHING,
                    http_method="GET",
                    timeout=0.0,
                    headers=(("last-event-id", "fuzz-forged-event-" + "9" * 40),),
                ),
            )
        )
    return out

def http_fresh_cases(msgs: Messages, other: tuple[tuple[str, str], ...] = ()) -> list[Case]:
    """Streamable HTTP probes that need sessions of their own: the session is deleted,
    then used again (it must get 404); two clients open sessions A and B, then A's id is
    used by B (refused only if ``other``, B's credentials, name another principal: without
    authorization the spec cannot tell clients apart), from a foreign ``Origin``, and
    deleted from one (both must get 403); session ids are judged for guessability."""
    if not msgs.rules.sessions or not msgs.rules.handshake:
        return []
    delete = CaseStep(label="DELETE the session", expect=Expect.NOTHING, http_method="DELETE", timeout=5.0)
    stale = msgspec.structs.replace(
        msgs.ping(), label="liveness on the deleted session", check=Check.STATUS_404
    )
    cases = [Case(name="session deleted then reused", fresh=True, steps=(*msgs.opening(), delete, stale))]
    origin = (("origin", FOREIGN_ORIGIN),)
    a_open = msgs.opening()
    b_init, b_initialized = msgs.opening()
    b_steps = (
        msgspec.structs.replace(b_init, label="B: initialize", session="none", headers=other),
        msgspec.structs.replace(b_initialized, label="B: initialized", session="#1", headers=other),
    )
    ping = msgs.ping()
    borrowed = msgspec.structs.replace(
        ping,
        label="client B (another principal) uses A's session" if other else "client B uses A's session",
        session="#0",
        headers=(*ping.headers, *other),
        check=Check.OTHER_PRINCIPAL if other else Check.NONE,
        patient=True,
    )
    ping = msgs.ping()
    foreign = msgspec.structs.replace(
        ping,
        label=f"A's session used from Origin: {FOREIGN_ORIGIN}",
        session="#0",
        headers=(*ping.headers, *origin),
        check=Check.STATUS_403,
    )
    kill = CaseStep(
        label=f"DELETE A's session from Origin: {FOREIGN_ORIGIN}",
        expect=Expect.NOTHING,
        http_method="DELETE",
        timeout=5.0,
        session="#0",
        headers=origin,
        check=Check.STATUS_403,
    )
    after = msgspec.structs.replace(
        msgs.ping(), label="A: liveness on its session", session="#0", check=Check.NONE, patient=True
    )
    cases.append(
        Case(
            name="another client's session",
            fresh=True,
            steps=(*a_open, *b_steps, borrowed, foreign, kill, after),
        )
    )
    return cases
