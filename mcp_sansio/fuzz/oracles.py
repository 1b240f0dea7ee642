"""The per-case oracle: pure judgements over what was sent and what came back.

A runner records a case as :data:`~.records.Record` values (what it sent and when, each
message it received, HTTP statuses, steps it stopped waiting for, and whether the server
was still alive at the end) and :func:`judge` turns them into :class:`~.rules.Finding`
values, each naming a rule of :data:`~.rules.RULES`. State held: one judgement's indexes
of the case (steps by id, the answers to each, when each was sent or given up on, the
HTTP answers) and its findings so far, built fresh per case. Whole-run properties
(memory, leftover processes, the tool list) are :mod:`.run_oracles`'. Nothing here reads
a clock: times come in the records.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence
from typing import Final

import msgspec

from ..modern import MISSING_CLIENT_CAPABILITY
from ..versions import VERSIONS
from .case import CaseStep, Check, Expect
from .records import Context, Ended, HttpAnswer, Received, Record, Sent, TimedOut, id_key, loose_id
from .rules import Finding
from .run_oracles import judge_tools
from .schemacheck import json_type, validate

__all__ = ["judge", "result_schema"]

_SERVER_REQUESTS: Final = {
    "sampling/createMessage": "sampling",
    "elicitation/create": "elicitation",
    "roots/list": "roots",
}
_RESULT_DEFS: Final = {
    "initialize": "InitializeResult",
    "server/discover": "DiscoverResult",
    "tools/list": "ListToolsResult",
    "tools/call": "CallToolResult",
    "resources/list": "ListResourcesResult",
    "resources/templates/list": "ListResourceTemplatesResult",
    "resources/read": "ReadResourceResult",
    "prompts/list": "ListPromptsResult",
    "prompts/get": "GetPromptResult",
    "completion/complete": "CompleteResult",
}
_decode: Final = msgspec.json.Decoder().decode


_LIST_METHODS: Final = ("tools/list", "resources/list", "resources/templates/list", "prompts/list")


def result_schema(schema: Mapping[str, object], method: str, version_modern: bool) -> object | None:
    """The schema a result of ``method`` must fit in ``schema`` (a revision's document),
    or ``None`` when the document defines none for it."""
    name = _RESULT_DEFS.get(method)
    defs_key = "$defs" if "$defs" in schema else "definitions"
    defs = schema.get(defs_key)
    if name is None or not isinstance(defs, dict) or name not in defs:
        return None
    target: object = {"$ref": f"#/{defs_key}/{name}"}
    if version_modern and method == "tools/call" and "InputRequiredResult" in defs:
        target = {"anyOf": [target, {"$ref": f"#/{defs_key}/InputRequiredResult"}]}
    return target


class _Judge:
    """One judgement: the indexes built from the records, and the findings so far."""

    def __init__(self, steps: Sequence[CaseStep], records: Sequence[Record], ctx: Context) -> None:
        self.steps = steps
        self.ctx = ctx
        self.findings: list[Finding] = []
        self.by_id: dict[tuple[str, object], int] = {}
        self.echoes: set[tuple[str, object]] = set()  # ids of malformed messages: echoing them is fine
        self.loose: dict[str, int] = {}
        for index, step in enumerate(steps):
            if step.id is not None and step.expect in (Expect.RESPONSE, Expect.CANCELLED):
                self.by_id.setdefault(id_key(step.id), index)
                self.loose.setdefault(loose_id(step.id) or "", index)
            elif step.expect is Expect.ANY:
                ids = _ids_in(step.data)
                self.echoes |= ids
                for key in ids:
                    self.loose.setdefault(loose_id(key[1]) or "", index)
        self.answers: dict[int, list[tuple[int, dict[str, object]]]] = {}
        self.sent_at: dict[int, int] = {}
        self.sent_t: dict[int, float] = {}
        self.timed_out: dict[int, float] = {}
        self.http: dict[int, HttpAnswer] = {}
        self.end: Ended | None = None
        self.records = records

    def add(self, rule: str, step: int | None, message: str, cause: str = "") -> None:
        method = self.steps[step].method if step is not None else None
        self.findings.append(Finding(rule=rule, method=method, message=message, step=step, cause=cause))

    def run(self) -> list[Finding]:
        initialized = self.ctx.initialized
        for position, record in enumerate(self.records):
            if isinstance(record, Sent):
                self.sent_at[record.step] = position
                self.sent_t[record.step] = record.t
                initialized = initialized or self.steps[record.step].method == "notifications/initialized"
            elif isinstance(record, Received):
                self._received(position, record, initialized)
            elif isinstance(record, HttpAnswer):
                if 0 <= record.step < len(self.steps):  # not a late answer from an earlier case
                    self.http[record.step] = record
            elif isinstance(record, TimedOut):
                self.timed_out.setdefault(record.step, record.t)
            else:
                self.end = record
        for index, step in enumerate(self.steps):
            if index in self.sent_at:
                self._step(index, step)
        self._session_ids()
        if (
            self.end is not None
            and not self.end.alive
            and self.sent_at
            and not any(f.rule == "server-crashed" for f in self.findings)
        ):
            last = max(self.sent_at)
            self.add("server-crashed", last, f"the server exited ({self._exit()}) after this message")
        return self.findings

    def _exit(self) -> str:
        code = self.end.returncode if self.end is not None else None
        return "connection lost" if code is None else f"exit status {code}"

    def _received(self, position: int, record: Received, initialized: bool) -> None:
        try:
            message = _decode(record.data)
        except (msgspec.DecodeError, RecursionError):
            rule = "stdout-not-mcp" if self.ctx.stdio else "malformed-message"
            self.add(rule, None, f"the server wrote something that is not JSON: {record.data[:80]!r}")
            return
        if isinstance(message, list) and message:  # a batch answer (2025-03-26 allows batches)
            for item in message:
                self._received(position, Received(t=record.t, data=msgspec.json.encode(item)), initialized)
            return
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            self.add("malformed-message", None, f"not a JSON-RPC 2.0 message: {record.data[:80]!r}")
            return
        method = message.get("method")
        if isinstance(method, str):
            if "id" in message:
                self._server_request(method, initialized)
            elif method == "notifications/progress":
                self._progress(position, message)
            return
        self._response(position, message)

    def _server_request(self, method: str, initialized: bool) -> None:
        capability = _SERVER_REQUESTS.get(method)
        if capability is not None and capability not in self.ctx.client_capabilities:
            self.findings.append(
                Finding(
                    rule="capability-not-negotiated",
                    method=method,
                    message=(
                        f"the server sent {method} but the client did not declare the {capability} capability"
                    ),
                )
            )
        if not initialized and method != "ping":
            self.findings.append(
                Finding(
                    rule="request-before-initialized",
                    method=method,
                    message=(f"the server sent {method} before notifications/initialized"),
                )
            )

    def _progress(self, position: int, message: Mapping[str, object]) -> None:
        params = message.get("params")
        token = params.get("progressToken") if isinstance(params, dict) else None
        owners = [
            i
            for i, s in enumerate(self.steps)
            if s.progress_token is not None
            and token is not None
            and id_key(s.progress_token) == id_key(token)
            and self.sent_at.get(i, position) < position
        ]
        if not owners and token is not None and id_key(token) in self.ctx.earlier_tokens:
            return
        if not owners:
            self.findings.append(
                Finding(
                    rule="progress-token",
                    method="notifications/progress",
                    message=(f"progress for token {token!r}, which no request in flight carries"),
                )
            )
        elif all(any(at < position for at, _ in self.answers.get(i, [])) for i in owners):
            self.findings.append(
                Finding(
                    rule="progress-token",
                    method="notifications/progress",
                    message=(f"progress for token {token!r} after its request was answered"),
                )
            )

    def _response(self, position: int, message: dict[str, object]) -> None:
        if "id" not in message and "error" in message and "result" not in message and not self.ctx.stdio:
            # Streamable HTTP: "The HTTP response body MAY comprise a JSON-RPC error response
            # that has no id" (an input the server cannot accept).
            return
        if "id" not in message or ("result" in message) == ("error" in message):
            self.add(
                "malformed-message",
                None,
                f"a response needs an id and one of result or error: {message!r:.120}",
            )
            return
        error = message.get("error")
        if "error" in message and not (
            isinstance(error, dict)
            and json_type(error.get("code")) == "integer"
            and isinstance(error.get("message"), str)
        ):
            self.add(
                "malformed-message", None, f"an error needs an integer code and a message: {error!r:.120}"
            )
            return
        rid = message["id"]
        index = self.by_id.get(id_key(rid))
        if index is None:
            self._unknown_id(rid, "result" in message, position)
            return
        self.answers.setdefault(index, []).append((position, message))

    def _answered_notification(self, position: int) -> int | None:
        """The notification a stray response at ``position`` most likely answers: the last
        one sent before it, unless a request sent after that notification was answered
        first (the server had moved past it)."""
        sent = sorted((at, i) for i, at in self.sent_at.items() if at < position)
        for at, index in reversed(sent):
            step = self.steps[index]
            if step.expect is Expect.NOTHING and step.method is not None and step.http_method == "POST":
                later = [i for a, i in sent if a > at]
                if any(p < position for i in later for p, _ in self.answers.get(i, [])):
                    return None
                return index
        return None

    def _unknown_id(self, rid: object, is_result: bool, position: int) -> None:
        """A response no request of ours carries, kept apart by what it most likely is: a
        request's answer with its id's type changed, an answer to a notification we just
        sent, a result with a null id, or an id from nowhere."""
        if id_key(rid) in self.ctx.earlier_ids or id_key(rid) in self.echoes:
            return
        if rid is not None and any(loose_id(key[1]) == loose_id(rid) for key in self.ctx.earlier_ids):
            return  # a late answer to an earlier case's request, its id's type changed
        twin = self.loose.get(loose_id(rid) or "\0")
        notification = self._answered_notification(position)
        if twin is not None:
            self.add(
                "unknown-response-id",
                twin,
                f"{self.steps[twin].label}: an id was answered as {rid!r}, another JSON type",
                cause="id-type",
            )
        elif notification is not None and (rid is not None or is_result):
            method = self.steps[notification].method
            self.add(
                "unknown-response-id",
                notification,
                f"a response (id {rid!r}) to the notification {method}, which takes none",
                cause="answered-notification",
            )
        elif rid is None and is_result:
            # A null id is allowed on an error when the request's id could not be read; a
            # result always answers a request whose id was read.
            self.add("unknown-response-id", None, "a result with a null id", cause="null-id")
        elif rid is not None:
            self.add("unknown-response-id", None, f"a response with id {rid!r}, which no request carries")

    def _step(self, index: int, step: CaseStep) -> None:
        answers = self.answers.get(index, [])
        status = self.http.get(index)
        if status is not None:
            self._status(index, step, status)
        if step.expect is Expect.CANCELLED:
            self._cancelled(index, answers)
            return
        if step.expect is not Expect.RESPONSE:
            return
        if len(answers) > 1:
            self.add("duplicate-response", index, f"{len(answers)} responses to id {step.id!r}")
        if not answers:
            self._unanswered(index, step)
            return
        self._check(index, step, answers[0][1])

    def _status(self, index: int, step: CaseStep, answer: HttpAnswer) -> None:
        if step.check in (Check.STATUS_403, Check.STATUS_401, Check.OTHER_PRINCIPAL):
            self._security(index, step, answer)
        elif step.check is Check.STATUS_400 and answer.status != 400:
            self.add("http-status", index, f"{step.label}: HTTP {answer.status}, not 400 Bad Request")
        elif step.check is Check.STATUS_404 and answer.status != 404 and self._deleted():
            self.add("session-reuse", index, f"{step.label}: HTTP {answer.status}, not 404 Not Found")
        elif (
            step.expect is Expect.NOTHING
            and step.http_method == "POST"
            and answer.status < 400
            and answer.status != 202
        ):
            self.add("http-status", index, f"a notification was answered with HTTP {answer.status}, not 202")

    def _security(self, index: int, step: CaseStep, answer: HttpAnswer) -> None:
        """Origin, authorization and session-binding checks (HTTP only)."""
        status = answer.status
        if step.check is Check.STATUS_403 and status < 400:
            cause = "delete" if step.http_method == "DELETE" else "request"
            self.add("origin-not-validated", index, f"{step.label}: HTTP {status}, not 403 Forbidden", cause)
        elif step.check is Check.STATUS_401 and status != 401:
            self.add("auth-status", index, f"{step.label}: HTTP {status}, not 401 Unauthorized")
        elif (
            step.check is Check.STATUS_401
            and "resource_metadata" not in answer.challenge.lower()
            and not self._well_known()
        ):
            got = f"WWW-Authenticate: {answer.challenge[:80]}" if answer.challenge else "no WWW-Authenticate"
            self.add(
                "auth-discovery",
                index,
                f"{step.label}: 401 with {got}, and no protected resource metadata at the well-known URI",
            )
        elif step.check is Check.OTHER_PRINCIPAL and status < 400:
            self.add(
                "session-not-bound",
                index,
                f"{step.label}: HTTP {status}: another principal's token was accepted with this session",
            )

    def _well_known(self) -> bool:
        return any(
            (self.steps[i].path or "").startswith("/.well-known/oauth-protected-resource") and a.status == 200
            for i, a in self.http.items()
        )

    def _session_ids(self) -> None:
        """Session ids must be visible ASCII, unique and not guessable (no counter, not short)."""
        issued = [
            (i, a.session)
            for i, a in sorted(self.http.items())
            if a.session and self.steps[i].method == "initialize" and a.status < 300
        ]
        for index, sid in issued:
            if not all(0x21 <= ord(c) <= 0x7E for c in sid):
                self.add("session-id", index, f"session id {sid[:40]!r} is not visible ASCII", "characters")
            elif len(sid) < 16:
                self.add(
                    "session-id",
                    index,
                    f"session id {sid!r} is {len(sid)} characters: too short to be unguessable",
                    "predictable",
                )
        ids = [sid for _, sid in issued]
        if len(ids) >= 2 and (len(set(ids)) < len(ids) or _counter(ids)):
            self.add(
                "session-id",
                issued[-1][0],
                f"session ids {', '.join(repr(i[:40]) for i in ids)} follow from each other",
                "predictable",
            )

    def _deleted(self) -> bool:
        """A DELETE of the session was accepted (a server may refuse it with 405)."""
        return any(
            self.steps[i].http_method == "DELETE" and 200 <= a.status < 300 for i, a in self.http.items()
        )

    def _cancelled(self, index: int, answers: list[tuple[int, dict[str, object]]]) -> None:
        later = [i for i in range(index + 1, len(self.steps)) if self.steps[i].check is Check.PING]
        cancel = [i for i in range(index + 1, len(self.steps)) if self.steps[i].cancels is not None]
        if not later or not cancel or not answers:
            return
        ping_answers = self.answers.get(later[0], [])
        ping_cancel_order = cancel[0] < later[0]
        # Over HTTP each message has its own exchange: the cancellation counts as delivered
        # before the ping only if its 202 came back before the ping was sent.
        accepted = self.http.get(cancel[0])
        delivered = accepted is None or accepted.t <= self.sent_t.get(later[0], accepted.t)
        if ping_cancel_order and delivered and ping_answers and answers[0][0] > ping_answers[0][0]:
            self.add(
                "answered-cancelled",
                index,
                "the cancelled request was answered after the server had "
                "answered a ping sent after the cancellation",
            )
            return
        position, answer = answers[0]
        error = answer.get("error")
        text = str(error.get("message", "")).lower() if isinstance(error, dict) else ""
        says_cancelled = isinstance(error, dict) and (error.get("code") == -32800 or "cancel" in text)
        if says_cancelled and self.sent_at.get(cancel[0], position) < position:
            self.add(
                "answered-cancelled",
                index,
                f"the server answered the cancelled request with an error saying so: {error!r:.120}",
            )

    def _refused_without_session(self, index: int) -> bool:
        """A Streamable HTTP server refused a request sent before its session opened with
        400, as the transport says it should ("Servers that require a session ID SHOULD
        respond to requests without an Mcp-Session-Id header (other than initialization)
        with HTTP 400 Bad Request"): a ping then gets no answer, and that is no finding."""
        answer = self.http.get(index)
        if self.ctx.stdio or self.ctx.initialized or answer is None or answer.status != 400:
            return False
        return not any(step.method == "initialize" for step in self.steps[:index])

    def _unanswered(self, index: int, step: CaseStep) -> None:
        if step.check in (
            Check.STATUS_400,
            Check.STATUS_404,
            Check.STATUS_403,
            Check.STATUS_401,
            Check.OTHER_PRINCIPAL,
        ) or (
            index in self.http and self.http[index].status >= 400
        ):
            return
        dead = self.end is not None and not self.end.alive
        if dead:
            if any(f.rule == "server-crashed" for f in self.findings):
                return  # one crash, blamed on the first message it left unanswered
            self.add(
                "server-crashed", index, f"{step.label}: the server exited ({self._exit()}) without answering"
            )
        elif index in self.timed_out and not step.patient:
            rule = "ping-unanswered" if step.check is Check.PING else "no-response"
            waited = self.timed_out[index] - self.sent_t.get(index, self.timed_out[index])
            self.add(rule, index, f"{step.label}: no answer within {waited:.1f} s")
            if waited < step.timeout - 0.05:  # a learnt wait: only a replay with the full one confirms
                self.findings[-1] = msgspec.structs.replace(self.findings[-1], conclusive=False)

    def _check(self, index: int, step: CaseStep, answer: dict[str, object]) -> None:
        error = answer.get("error")
        code = error.get("code") if isinstance(error, dict) else None
        result = answer.get("result")
        label = step.label
        if step.check is Check.PING and error is not None and not self._refused_without_session(index):
            self.add("ping-unanswered", index, f"{label}: answered with an error {error!r:.120}")
        elif step.check is Check.UNKNOWN_METHOD and code != -32601:
            got = f"error {code}" if error is not None else "a result"
            self.add("method-not-found-code", index, f"{label}: {got}, not -32601")
        elif step.check is Check.INVALID_REQUEST and error is None:
            self.add("invalid-request-accepted", index, f"{label}: answered with a result")
        elif step.check is Check.FORGED_CURSOR and error is not None and code != -32602:
            self.add("invalid-cursor-code", index, f"{label}: error {code}, not -32602")
        elif step.check is Check.INVALID_ARGS:
            if error is None and not (isinstance(result, dict) and result.get("isError") is True):
                self.add("accepted-invalid-arguments", index, f"{label}: a successful result")
            elif error is not None and code != -32602 and not _needs_capability(error):
                self.add("invalid-arguments-code", index, f"{label}: error {code}, not -32602 or isError")
        elif (
            step.check is Check.BOGUS_VERSION
            and isinstance(result, dict)
            and result.get("protocolVersion") == _bogus(step)
        ):
            self.add("version-negotiation", index, f"{label}: the server echoed {_bogus(step)!r}")
        elif step.check is Check.UNKNOWN_TOOL and error is None and not (
            isinstance(result, dict) and result.get("isError") is True
        ):
            self.add("unknown-tool-accepted", index, f"{label}: a successful result")
        if step.method == "initialize" and isinstance(result, dict):
            negotiated = result.get("protocolVersion")
            if isinstance(negotiated, str) and negotiated != _bogus(step) and negotiated not in VERSIONS:
                self.add(
                    "unknown-version",
                    index,
                    f"{label}: asked for {_bogus(step)!r}, answered {negotiated!r}, which no revision has",
                )
        if step.method in _LIST_METHODS and isinstance(result, dict):
            self._cursor(index, step, result.get("nextCursor"))
        if error is None and step.check in (Check.RESULT, Check.BOGUS_VERSION, Check.INVALID_ARGS):
            self._result(index, step, result)

    def _cursor(self, index: int, step: CaseStep, cursor: object) -> None:
        """A ``nextCursor`` equal to a cursor this case already followed for the same list:
        following it goes round in a circle (or stays in place) for ever."""
        if not isinstance(cursor, str) or not cursor:
            return
        followed = [
            i
            for i in range(index + 1)
            if self.steps[i].method == step.method and _cursor_of(self.steps[i]) == cursor
        ]
        if followed:
            again = "the cursor it was asked with" if followed[-1] == index else "a cursor already followed"
            self.add("cursor-loop", index, f"{step.label}: nextCursor {cursor[:40]!r} is {again}")

    def _result(self, index: int, step: CaseStep, result: object) -> None:
        tools = result.get("tools") if isinstance(result, dict) and step.method == "tools/list" else None
        if isinstance(tools, list):
            listed = [tool for tool in tools if isinstance(tool, dict)]
            self.findings += [msgspec.structs.replace(f, step=index) for f in judge_tools(listed)]
        if isinstance(result, dict) and result.get("resultType") == "input_required":
            self._input_required(index, step, result)
        if self.ctx.schema is None or step.method is None:
            return
        target = result_schema(self.ctx.schema, step.method, not self._handshake())
        problems = validate(result, target, self.ctx.schema) if target is not None else []
        if problems:
            self.add(
                "result-schema",
                index,
                f"{step.label}: the result does not fit the "
                f"{self.ctx.version} schema: {'; '.join(problems[:3])}",
            )
        tool = self.ctx.tools.get(step.tool or "")
        output = tool.get("outputSchema") if tool is not None else None
        if (
            isinstance(output, dict)
            and isinstance(result, dict)
            and result.get("isError") is not True
            and result.get("resultType") in (None, "complete")
        ):
            structured = result.get("structuredContent")
            misfits = (
                validate(structured, output) if structured is not None else ["structuredContent is missing"]
            )
            if misfits:
                self.add("structured-content", index, f"{step.label}: {'; '.join(misfits[:3])}")

    def _input_required(self, index: int, step: CaseStep, result: Mapping[str, object]) -> None:
        requests = result.get("inputRequests")
        if requests is None and result.get("requestState") is None:
            self.add(
                "input-required",
                index,
                f"{step.label}: input_required with neither inputRequests nor requestState",
            )
        for key, request in requests.items() if isinstance(requests, dict) else []:
            method = request.get("method") if isinstance(request, dict) else None
            capability = _SERVER_REQUESTS.get(str(method))
            if capability is not None and capability not in self.ctx.client_capabilities:
                self.add(
                    "input-required",
                    index,
                    f"{step.label}: inputRequests[{key!r}] is {method}, but the "
                    f"client did not declare {capability}",
                )

    def _handshake(self) -> bool:
        return not self.ctx.version.startswith("2026")


def _ids_in(data: bytes) -> set[tuple[str, object]]:
    """The readable ids of a message we sent (of each message, for a batch)."""
    try:
        value = _decode(data)
    except (msgspec.DecodeError, RecursionError):
        return set()
    items = value if isinstance(value, list) else [value]
    return {id_key(item["id"]) for item in items if isinstance(item, dict) and "id" in item}


def _counter(ids: Sequence[str]) -> bool:
    """Whether session ids differ only by a number that counts up (``s-7``, ``s-8``)."""
    parts = [re.fullmatch(r"(.*?)(\d+)", sid) for sid in ids]
    if not all(parts):
        return False
    heads = {m.group(1) for m in parts if m is not None}
    numbers = [int(m.group(2)) for m in parts if m is not None]
    return len(heads) == 1 and all(0 < b - a <= 16 for a, b in itertools.pairwise(numbers))


def _params(step: CaseStep) -> dict[str, object]:
    try:
        message = _decode(step.data)
    except (msgspec.DecodeError, RecursionError):
        return {}
    params = message.get("params") if isinstance(message, dict) else None
    return params if isinstance(params, dict) else {}


def _bogus(step: CaseStep) -> object:
    return _params(step).get("protocolVersion")


def _cursor_of(step: CaseStep) -> object:
    return _params(step).get("cursor")


def judge(steps: Sequence[CaseStep], records: Sequence[Record], ctx: Context) -> list[Finding]:
    """Every finding in one case's records, in the order found."""
    return _Judge(steps, records, ctx).run()


def _needs_capability(error: object) -> bool:
    """A 2026-07-28 ``-32021`` naming ``requiredCapabilities``: the call was refused before its
    arguments were read (a tool that runs only as a task, for a client without the tasks
    extension), which says nothing about argument validation."""
    data = error.get("data") if isinstance(error, dict) else None
    return (isinstance(error, dict) and error.get("code") == MISSING_CLIENT_CAPABILITY
            and isinstance(data, dict) and "requiredCapabilities" in data)
