"""The steps of one connection of the fuzzer's: requests, notifications, probes, openings.

State held: the connection's request-id counter (the planner owns ids, one counter per
connection, so the steps it makes are exact bytes that replay unchanged), the protocol
revision's rules it speaks by, and the run's seeded generator. Handshake-era sessions open
with ``initialize`` / ``notifications/initialized``; the 2026-07-28 era has no handshake,
puts the protocol version, client capabilities and client info in every request's
``_meta`` and uses ``server/discover`` as its liveness probe (``versions.py`` rows say
which). The families of cases built from these steps are :mod:`.plan`'s and
:mod:`.plan_http`'s.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Final

import msgspec

from ..modern import request_meta, standard_headers
from ..versions import VersionRules, rules_for
from .case import Case, CaseStep, Check, message_step
from .rng import Rng

__all__ = ["CLIENT_CAPABILITIES", "CLIENT_INFO", "Messages"]

CLIENT_INFO: Final = {"name": "mcp-sansio-fuzz", "version": "0.1.0"}
CLIENT_CAPABILITIES: Final = {"sampling": {}, "elicitation": {"form": {}}, "roots": {"listChanged": True}}
_AUTO: Final = object()


class Messages:
    """Makes the steps of one connection's life, for one protocol revision.

    Args:
        rng: the run's generator (forked for each family of cases).
        version: the revision to speak (a row of ``versions.py``).
        ping_timeout: seconds a liveness probe may take ("promptly", says the spec).
    """

    def __init__(self, rng: Rng, version: str, ping_timeout: float = 5.0) -> None:
        rules = rules_for(version)
        if rules is None:
            raise ValueError(f"unknown protocol version {version!r}")
        self.rules: VersionRules = rules
        self.version = version
        self.rng = rng
        self._next_id = 0
        self.ping_timeout = ping_timeout

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
    ) -> CaseStep:
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
    ) -> CaseStep:
        """A notification step (no answer expected)."""
        message: dict[str, object] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = dict(params)
        if self.rules.standard_headers:
            fields["headers"] = (("mcp-protocol-version", self.version), *standard_headers(method, params))
        return message_step(message, label or method, **fields)

    def ping(self) -> CaseStep:
        """The liveness probe: ``ping``, or ``server/discover`` where ping does not exist."""
        method = "ping" if self.rules.ping else "server/discover"
        return self.request(method, label=f"liveness {method}", check=Check.PING, timeout=self.ping_timeout)

    def opening(
        self,
        version: str | None = None,
        check: Check = Check.RESULT,
        capabilities: Mapping[str, object] | None = None,
    ) -> list[CaseStep]:
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

    def list_page(self, method: str, cursor: str | None) -> CaseStep:
        """One page of a list method."""
        return self.request(method, {"cursor": cursor} if cursor else None, check=Check.RESULT, timeout=10.0)

    def case(self, name: str, *steps: CaseStep) -> Case:
        """A case of ``steps`` that ends with a liveness probe."""
        return Case(name=name, steps=(*steps, self.ping()))

    def call(
        self,
        tool: Mapping[str, object],
        arguments: object,
        label: str,
        check: Check,
        *,
        data: Callable[[bytes], bytes] | None = None,
        capabilities: Mapping[str, object] | None = None,
        **fields: object,
    ) -> CaseStep:
        """A ``tools/call`` of ``tool`` with ``arguments`` (``data`` rewrites its bytes)."""
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

    def cancel(self, request_id: object, why: str) -> CaseStep:
        """``notifications/cancelled`` for ``request_id``."""
        return self.notification(
            "notifications/cancelled",
            {"requestId": request_id, "reason": "fuzz"},
            label=f"cancel {why} id {request_id}",
            cancels=request_id if isinstance(request_id, int | str) else None,
        )
