"""The handshake as a pure planner: which revision to ask for, and what an answer means.

A client opens a session by probing with ``server/discover`` (the stateless 2026-07-28
revision) or by sending ``initialize`` (the handshake era), and may go back and forth:
an ``auto`` client falls back to ``initialize`` when the probe finds no modern server, a
server that names other revisions is asked again at a mutual one, once. :class:`Negotiation`
holds those sub-states as data (what was tried, what is out, the connect's deadline and the
steps it took) and answers each event with a typed step the session carries out:
:class:`SendDiscover`, :class:`SendInitialize`, :class:`Adopt` or :class:`Fail`. It sends
nothing, allocates no id and reads no clock: time comes in as ``now``.
"""

from __future__ import annotations

from typing import Final

import msgspec
from msgspec import UNSET

from . import jsonrpc, modern
from .config import ClientConfig
from .events import ErrorData, FailureReason
from .jsonrpc import Envelope
from .types import Implementation, InitializeResult
from .versions import SUPPORTED_VERSIONS, VersionRules, rules_for

__all__ = ["Adopt", "Decision", "Fail", "Negotiation", "SendDiscover", "SendInitialize"]

_INIT_DECODER: Final = msgspec.json.Decoder(InitializeResult)
_DISCOVER_DECODER: Final = msgspec.json.Decoder(modern.DiscoverResult)


class SendDiscover(msgspec.Struct, frozen=True, kw_only=True):
    """Probe with ``server/discover`` at ``version`` (``retry``: not the connect's first request)."""

    version: str
    retry: bool = False


class SendInitialize(msgspec.Struct, frozen=True, kw_only=True):
    """Send ``initialize`` offering ``version`` (``retry``: not the connect's first request)."""

    version: str
    retry: bool = False


class Adopt(msgspec.Struct, frozen=True, kw_only=True):
    """The handshake is done: ``result`` at ``rules`` (``modern``: the stateless era, which
    sends no ``notifications/initialized``)."""

    result: InitializeResult
    rules: VersionRules
    modern: bool


class Fail(msgspec.Struct, frozen=True, kw_only=True):
    """The handshake cannot succeed (``InitializeFailed`` with these fields)."""

    reason: FailureReason
    message: str
    error: ErrorData | None = None
    offered: str = ""
    received: tuple[str, ...] = ()


Decision = SendDiscover | SendInitialize | Adopt | Fail
"""What the negotiation decided the session does next."""


class Negotiation:
    """One connect's handshake: the revisions tried, the request out, the deadline.

    Attributes:
        probing: the version the ``server/discover`` that is out asked for, or ``None``
            (``initialize`` is out, or nothing is).
        deadline: when the request out times out (a blind probe's share, or the connect's).
        connect_at: when the connect began (its first handshake request).
        connect_by: when the whole connect must be done (``initialize_timeout`` later).
        unanswered: the version a blind probe asked for when it timed out and the
            client fell back to ``initialize``, until its late answer comes (or ``None``).
        late_modern: what that late answer proved (a modern server at that version):
            adopted if the ``initialize`` out is refused.
    """

    def __init__(self, config: ClientConfig) -> None:
        self.config = config
        self.probing: str | None = None
        self.deadline: float | None = None
        self.connect_at = 0.0
        self.connect_by = 0.0
        self.unanswered: str | None = None
        self.late_modern: Adopt | None = None
        self._tried_versions: list[str] = []
        self._tried_modern: list[str] = []
        self._steps: list[tuple[str, float]] = []  # (method, sent at), for the timeout's message

    # ---------------------------------------------------------------- the plan

    def opening(self) -> SendDiscover | SendInitialize:
        """The connect's first request, the way ``config.protocol`` says: ``auto`` probes at
        the preferred stateless revision (or initializes when it may speak none), a fixed
        handshake-era revision initializes, a fixed stateless one probes."""
        protocol = self.config.protocol
        if protocol == "auto":
            if self.config.modern_versions:
                return SendDiscover(version=self.config.modern_versions[0])
            return SendInitialize(version=self.config.protocol_versions[0])
        if protocol in SUPPORTED_VERSIONS:
            return SendInitialize(version=protocol)
        return SendDiscover(version=protocol)

    def restart(self) -> SendInitialize:
        """The server forgot the session: ``initialize`` again, as on a first connect."""
        self._tried_versions = []
        return SendInitialize(version=self.config.protocol_versions[0])

    def answered(self, env: Envelope) -> Decision:
        """The answer to the handshake request that is out."""
        if self.probing is not None:
            return self._discover_answered(env)
        return self._initialize_answered(env)

    def probe_failed(self, why: str) -> Decision | None:
        """The transport saw the probe fail without a JSON-RPC answer (e.g. HTTP 404):
        ``auto`` falls back, a pinned revision fails; ``None`` when no probe is out."""
        version = self.probing
        if version is None:
            return None
        if self.config.protocol == "auto":
            return self._fall_back()
        return Fail(reason=FailureReason.UNSUPPORTED_VERSION, message=why, offered=version)

    def timed_out(self) -> SendInitialize | None:
        """The request out passed :attr:`deadline`: a blind probe falls back (a handshake-era
        server may ignore it); anything else is the connect's timeout (``None``)."""
        if self.probing is not None and self.probing_blind:
            self.unanswered = self.probing  # a slow modern server may still answer it
            return self._fall_back()
        return None

    def late_answer(self, env: Envelope) -> None:
        """The blind probe was answered after the fallback (a modern server slower than
        ``discover_timeout``: a loaded machine, a slow start). A result naming the probed
        revision proves a modern server: should the ``initialize`` now out be refused (a
        modern-only server refuses it), that revision is adopted instead of failing; a
        dual-era server's ``initialize`` result still wins."""
        version, self.unanswered = self.unanswered, None
        if version is None or not isinstance(env.error, msgspec.UnsetType):
            return
        try:
            found = _DISCOVER_DECODER.decode(env.result)  # type: ignore[arg-type]  # a RESULT kind has a result
        except (msgspec.DecodeError, RecursionError):
            return
        if version in found.supported_versions:
            self.late_modern = _adopt_modern(found, version)

    @property
    def probing_blind(self) -> bool:
        """An ``auto`` client's first probe is out: the server's era is still unknown."""
        return self.config.protocol == "auto" and len(self._tried_modern) == 1

    # ---------------------------------------------------------------- bookkeeping

    def sent(self, step: SendDiscover | SendInitialize, now: float) -> None:
        """``step`` went out at ``now``: note it, and (re)arm :attr:`deadline`."""
        method = "server/discover" if isinstance(step, SendDiscover) else "initialize"
        if not step.retry:
            self.connect_at = now
            self.connect_by = now + self.config.initialize_timeout
            self._steps = []
            self.unanswered = self.late_modern = None
        self._steps.append((method, now))
        if isinstance(step, SendInitialize):
            self._tried_versions.append(step.version)
            self.probing = None
            self.deadline = self.connect_by
            return
        self._tried_modern.append(step.version)
        self.probing = step.version
        # Only an auto client's first probe may go unanswered by a legacy server; once the
        # server named versions it is modern, and its silence is a handshake timeout. The
        # blind probe takes at most half the connect's time, so ``initialize`` has the rest.
        cfg = self.config
        blind = min(cfg.discover_timeout, cfg.initialize_timeout / 2)
        self.deadline = min(now + blind, self.connect_by) if self.probing_blind else self.connect_by

    def settled(self) -> None:
        """The handshake ended (done, failed, or the connection went): nothing is out."""
        self.probing = None
        self.deadline = None

    def extend(self, until: float) -> None:
        """Let a handshake under way run until at least ``until`` (the user is authorizing)."""
        self.connect_by = max(self.connect_by, until)
        if self.deadline is not None:
            self.deadline = max(self.deadline, until)

    def timeout_message(self, now: float, stall: str) -> str:
        """What the stalled handshake did, for its ``InitializeFailed(reason=TIMEOUT)``;
        ``stall`` is where the transport stands (``"; ..."``, or empty)."""
        steps = self._steps
        method, at = steps[-1]
        earlier = [f"{m} ({steps[i + 1][1] - t:.1f} s)" for i, (m, t) in enumerate(steps[:-1])]
        return (f"the server did not complete the handshake within {now - self.connect_at:.1f} s"
                f" (initialize_timeout {self.config.initialize_timeout:g} s): {method} went unanswered"
                f" for {now - at:.1f} s{', after ' + ', '.join(earlier) if earlier else ''}{stall}")

    # ---------------------------------------------------------------- decisions

    def _fall_back(self) -> SendInitialize:
        """The probe says "not modern": the handshake era, as ``auto`` promises."""
        self.probing = None
        return SendInitialize(version=self.config.protocol_versions[0], retry=True)

    def _modern_choices(self) -> tuple[str, ...]:
        """The stateless revisions this client may speak, preferred first."""
        protocol = self.config.protocol
        return self.config.modern_versions if protocol == "auto" else (protocol,)

    def _discover_answered(self, env: Envelope) -> Decision:
        """Adopt a mutual modern revision, ask at another, or give up.

        A ``DiscoverResult`` naming a mutual modern revision, or ``-32022``
        (``UnsupportedProtocolVersionError``) listing what the server speaks, prove a
        modern server; anything else sends an ``auto`` client to ``initialize`` (the stdio
        "Backward Compatibility" rules) and fails a pinned one.
        """
        version = self.probing or ""
        auto = self.config.protocol == "auto"
        err = env.error
        if not isinstance(err, msgspec.UnsetType):
            supported = err.data.get("supported") if isinstance(err.data, dict) else None
            listed = tuple(str(v) for v in supported) if isinstance(supported, list) else ()
            if err.code == modern.UNSUPPORTED_PROTOCOL_VERSION and listed:
                legacy = auto and any(v in self.config.protocol_versions for v in listed)
                return self._retry_discover(listed, version, legacy=legacy)
            if auto:
                return self._fall_back()
            return Fail(reason=FailureReason.ERROR_RESPONSE,
                        message=f"server/discover failed: {err.message} (JSON-RPC error {err.code})",
                        error=ErrorData(code=err.code, message=err.message, data=err.data))
        try:
            found = _DISCOVER_DECODER.decode(env.result)  # type: ignore[arg-type]  # a RESULT kind has a result
        except (msgspec.DecodeError, RecursionError) as exc:
            if auto:
                return self._fall_back()  # e.g. a legacy server answering {} to anything
            return Fail(reason=FailureReason.INVALID_RESULT, message=f"invalid server/discover result: {exc}")
        listed = tuple(found.supported_versions)
        if version in listed:
            return _adopt_modern(found, version)
        # No mutual modern revision: a dual-era server (or none at all) for ``auto``.
        legacy = auto and not any(v in self._modern_choices() for v in listed)
        return self._retry_discover(listed, version, legacy=legacy)

    def _retry_discover(self, listed: tuple[str, ...], version: str, *, legacy: bool) -> Decision:
        """The server named the revisions it speaks, without ``version``: ask again at a
        mutual modern one not tried yet, else fall back to ``initialize`` when ``legacy``
        says so, else fail."""
        tried = self._tried_modern
        mutual = next((v for v in self._modern_choices() if v in listed and v not in tried), None)
        if mutual is None and len(tried) < 2:
            # A server may turn down even the version it lists, once: ask again at it.
            mutual = next((v for v in self._modern_choices() if v in listed), None)
        if mutual is not None:
            return SendDiscover(version=mutual, retry=True)
        if legacy:
            return self._fall_back()
        return Fail(reason=FailureReason.UNSUPPORTED_VERSION,
                    message=f"the server supports only {', '.join(listed) or 'no revision at all'}",
                    offered=version, received=listed)

    def _initialize_answered(self, env: Envelope) -> Decision:
        offered = self._tried_versions[-1]
        if env.error is not UNSET and self.late_modern is not None:
            return self.late_modern  # a modern-only server refused initialize: its late probe answer stands
        if env.error is not UNSET:
            err = env.error
            data = err.data
            supported = data.get("supported") if isinstance(data, dict) else None
            if err.code == jsonrpc.INVALID_PARAMS and isinstance(supported, list):
                listed = tuple(str(v) for v in supported)
                # Retried once: a server that rejects a version it listed gets no second try.
                tried = self._tried_versions
                retry = None if len(tried) > 1 else next(
                    (v for v in self.config.protocol_versions if v in listed and v not in tried), None)
                if retry is not None:
                    return SendInitialize(version=retry, retry=True)
                return Fail(reason=FailureReason.UNSUPPORTED_VERSION,
                            message=f"the server supports only {', '.join(listed)}",
                            offered=offered, received=listed)
            return Fail(reason=FailureReason.ERROR_RESPONSE,
                        message=f"initialize failed: {err.message} (JSON-RPC error {err.code})",
                        error=ErrorData(code=err.code, message=err.message, data=err.data))
        try:
            result = _INIT_DECODER.decode(env.result)  # type: ignore[arg-type]  # a RESULT kind has a result
        except (msgspec.DecodeError, RecursionError) as exc:
            return Fail(reason=FailureReason.INVALID_RESULT, message=f"invalid initialize result: {exc}")
        rules = rules_for(result.protocol_version)
        if rules is None or result.protocol_version not in self.config.protocol_versions:
            return Fail(reason=FailureReason.UNSUPPORTED_VERSION,
                        message=(f"the server answered with protocol version {result.protocol_version!r},"
                                 f" which this client does not support"),
                        offered=offered, received=(result.protocol_version,))
        return Adopt(result=result, rules=rules, modern=False)


def _adopt_modern(found: modern.DiscoverResult, version: str) -> Adopt:
    """A discover result at a mutual ``version``, as the handshake's result."""
    info = (found.meta or {}).get(modern.SERVER_INFO_KEY)
    try:
        server_info = msgspec.convert(info, Implementation) if info is not None else None
    except msgspec.ValidationError:
        server_info = None
    result = InitializeResult(
        protocol_version=version, capabilities=found.capabilities,
        server_info=server_info or Implementation(name="", version=""), instructions=found.instructions,
    )
    rules = rules_for(version)
    assert rules is not None  # a mutual modern revision is one this client knows
    return Adopt(result=result, rules=rules, modern=True)
