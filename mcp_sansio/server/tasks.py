"""The tasks extension (``io.modelcontextprotocol/tasks``, SEP-2663), server side.

A stateless-era ``tools/call`` of a task-capable tool becomes a task when its handler
calls ``ctx.start_task()``: the request is answered at once with a flat
``CreateTaskResult`` (``resultType: "task"``) and the handler runs on in the background.
``tasks/get`` reports the task (with the result or error inlined once it ends, and the
open questions while it waits for input), ``tasks/update`` delivers answers to those
questions, ``tasks/cancel`` asks it to stop. ``tasks/result`` and ``tasks/list`` do not
exist in this revision of the extension. Tasks live in the session that created them.
Timestamps are wall-clock time derived from ``now`` and the endpoint's ``wall_offset``.

With a shared :class:`~mcp_sansio.server.stores.TaskStore` (``session.task_store``, several
workers behind a balancer) the worker running a task keeps its handler's bookkeeping here
and writes every change of status to the store; ``tasks/get``, ``tasks/update`` and
``tasks/cancel`` at any worker read and change the store, which carries answers and
cancellations to the running worker (:func:`receive_messages`). A task whose worker stopped
beating (killed) fails at the next ``tasks/get``, with an internal error.
"""

from __future__ import annotations

import datetime
import enum
from collections.abc import Mapping
from typing import TYPE_CHECKING, Final

import msgspec

from .. import jsonrpc
from ..errors import LocalProtocolError
from ..machines import step
from ..modern import MISSING_CLIENT_CAPABILITY
from ..types import RESULT_TYPES
from .app import TASKS_EXTENSION
from .calls import Call, CallKind
from .context import Ask
from .events import ANSWER_TYPES, AnswerReceived
from .stores import StoreUnavailable, TaskMessage, TaskSnapshot, TaskStore
from .wire import TaskParams, TaskUpdateParams

if TYPE_CHECKING:
    from .port import Request, SessionPort

__all__ = [
    "TRANSITIONS", "TaskRecord", "TaskState", "TaskTrigger", "declares_tasks", "expire", "finish",
    "receive_messages", "require_tasks", "required_data", "running", "start_task", "task_ask",
    "tasks_cancel", "tasks_get", "tasks_update",
]

_REQUIRED: Final[dict[str, object]] = {"extensions": {TASKS_EXTENSION: {}}}


class TaskState(enum.Enum):
    """A task's ``status``; the last three are terminal."""

    WORKING = "working"
    INPUT_REQUIRED = "input_required"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


class TaskTrigger(enum.Enum):
    """What moves a task's status."""

    ASK = "ask for input"
    ANSWERED = "all answers in"
    COMPLETE = "complete"
    FAIL = "fail"
    CANCEL = "cancel"


_LIVE: Final = (TaskState.WORKING, TaskState.INPUT_REQUIRED)
TRANSITIONS: Final[Mapping[tuple[TaskState, TaskTrigger], TaskState]] = {
    (TaskState.WORKING, TaskTrigger.ASK): TaskState.INPUT_REQUIRED,
    (TaskState.INPUT_REQUIRED, TaskTrigger.ASK): TaskState.INPUT_REQUIRED,
    (TaskState.INPUT_REQUIRED, TaskTrigger.ANSWERED): TaskState.WORKING,
    (TaskState.WORKING, TaskTrigger.ANSWERED): TaskState.WORKING,
    **{(state, TaskTrigger.COMPLETE): TaskState.COMPLETED for state in _LIVE},
    **{(state, TaskTrigger.FAIL): TaskState.FAILED for state in _LIVE},
    **{(state, TaskTrigger.CANCEL): TaskState.CANCELLED for state in _LIVE},
}
"""A task's status moves (``machines.step``). A terminal status has no row: it never
changes again, and a move from it is ignored (a late answer, a cancellation after the end)."""
_TERMINAL: Final = frozenset({TaskState.COMPLETED, TaskState.FAILED, TaskState.CANCELLED})
_TERMINAL_NAMES: Final = frozenset(state.value for state in _TERMINAL)
TaskEnd = tuple[str, str, float, bytes | None, bytes | None]
"""A task's end for the task store: its id, terminal status, wall time, result, error."""
MAX_TASK_ENDS: Final = 1024
"""Task ends a session keeps while the task store does not take them."""
TASK_END_RETRY: Final = 1.0
"""Seconds between offers of those ends to the store."""
_encode: Final = msgspec.json.Encoder().encode
_decode_ask: Final = msgspec.json.Decoder(dict[str, object]).decode
WORKER_LOST: Final = "the server process running this task stopped"
"""The message of the error a task fails with when its worker stopped (killed)."""


class TaskRecord:
    """One task: its state, and what ``tasks/get`` inlines.

    Attributes:
        task_id: the unguessable id the client polls with.
        call: the handler's call handle while it runs (``None`` once it ended).
        state: the status.
        created_at: wall-clock creation time (seconds).
        updated_at: wall-clock time of the last status change.
        expires_at: ``now``-clock time after which the task is forgotten.
        result: the inlined result, once completed.
        error: the inlined JSON-RPC error object, once failed.
        pending: open questions by key, with their tickets.
        status_message: a message for people, if the handler set one.
        owner: the ``Principal.identity`` of the token that started it (auth on): only
            that principal may see, update or cancel it.
    """

    __slots__ = ("call", "created_at", "error", "expires_at", "owner", "pending", "result", "state",
                 "status_message", "task_id", "updated_at")

    def __init__(self, task_id: str, call: int, wall: float, expires_at: float) -> None:
        self.task_id = task_id
        self.call: int | None = call
        self.state = TaskState.WORKING
        self.created_at = self.updated_at = wall
        self.expires_at = expires_at
        self.result: object = None
        self.error: dict[str, object] | None = None
        self.pending: dict[str, tuple[int, Ask]] = {}
        self.status_message: str | None = None
        self.owner: str | None = None

    def move(self, trigger: TaskTrigger, wall: float) -> None:
        """Move the status as ``trigger`` says by :data:`TRANSITIONS` (a terminal status
        never changes again; ``updated_at`` changes with the status only)."""
        try:
            state = step(TRANSITIONS, self.state, trigger, subject="the task is ")
        except LocalProtocolError:
            return
        if state is not self.state:
            self.state, self.updated_at = state, wall


def declares_tasks(rec_or_meta_caps: object) -> bool:
    """Whether client capabilities name the tasks extension."""
    extensions = getattr(rec_or_meta_caps, "extensions", None)
    return isinstance(extensions, dict) and TASKS_EXTENSION in extensions


def require_tasks(session: SessionPort, req: Request) -> bool:
    """Refuse ``req`` with ``-32021`` unless its client declared the extension."""
    meta = req.params.meta
    if meta is not None and declares_tasks(meta.client_capabilities):
        return True
    message = f"the client did not declare the {TASKS_EXTENSION} extension"
    session.reject(req, MISSING_CLIENT_CAPABILITY, message, {"requiredCapabilities": _REQUIRED})
    return False


def required_data() -> dict[str, object]:
    """``data`` of the ``-32021`` error for a tool that must run as a task."""
    return {"requiredCapabilities": _REQUIRED}


def start_task(session: SessionPort, rec: Call, now: float, message: str | None) -> str | None:
    """Make ``rec`` a task: answer its request with ``CreateTaskResult`` now; its handler
    runs on. The task's id, or ``None`` when it cannot be one (the client did not declare
    the extension, or the server holds ``max_tasks`` already)."""

    if rec.task is not None:
        return rec.task.task_id
    tool = rec.tool
    capable = rec.kind is CallKind.TOOL and tool is not None and tool.task_support != "forbidden"
    if not capable or not rec.info.modern:
        raise LocalProtocolError("only a stateless-era call of a task-capable tool can become a task")
    config = session.config
    if not declares_tasks(rec.info.client_capabilities) or len(session.tasks) >= config.max_tasks:
        return None
    wall = now + session.host.wall_offset
    task_id = session.host.new_id("task")
    task = TaskRecord(task_id, rec.call, wall, now + config.task_ttl_ms / 1000)
    task.status_message = message
    task.owner = None if rec.info.principal is None else rec.info.principal.identity
    store = session.task_store
    if store is not None:  # durable before the client hears of it (a tasks/get anywhere finds it)
        snapshot = TaskSnapshot(task_id=task_id, status=task.state.value, created_at=wall, updated_at=wall,
                                owner=task.owner, status_message=message)
        try:
            store.create_task(snapshot, config.task_ttl_ms / 1000)
        except StoreUnavailable:
            return None  # it cannot be a task: the call goes on and answers directly
    session.add_task(task)
    session.timed()
    rec.task = task
    body = {**_task_fields(session, task), "resultType": "task"}
    data = session.encode_result(rec.request_id, body, rec.rules, result_type="task")
    session.release_request(rec)
    session.host.finish(rec.channel, data, 200, now)
    rec.channel = None
    return task_id


def task_ask(session: SessionPort, rec: Call, key: str, ask: Ask, now: float) -> int:
    """Park ``ask`` on ``rec``'s task until ``tasks/update`` answers it; its ticket."""
    task = rec.task
    assert task is not None  # only task calls come here
    wall = now + session.host.wall_offset
    if session.task_store is not None:  # (StoreUnavailable reaches the handler; nothing changed)
        request = _encode({"method": ask.method, "params": ask.params})
        session.task_store.ask_task(task.task_id, key, request, wall)
    ticket = session.host.new_ticket()
    task.pending[key] = (ticket, ask)
    task.move(TaskTrigger.ASK, wall)
    return ticket


def finish(session: SessionPort, rec: Call, now: float, result: object = None,
           error: Mapping[str, object] | None = None) -> None:
    """``rec``'s handler ended: inline its result (or protocol error) in the task."""
    task = rec.task
    assert task is not None  # only task calls come here
    task.call = None
    task.pending.clear()
    wall = now + session.host.wall_offset
    if error is not None:
        task.error = dict(error)
        task.move(TaskTrigger.FAIL, wall)
    else:
        task.result = result
        task.move(TaskTrigger.COMPLETE, wall)
    store = session.task_store
    if store is not None:
        end: TaskEnd = (
            (task.task_id, TaskState.FAILED.value, wall, None, _encode(task.error)) if error is not None
            else (task.task_id, TaskState.COMPLETED.value, wall, _encode(result), None))
        try:
            store.end_task(end[0], end[1], wall, result=end[3], error=end[4])
        except StoreUnavailable:  # offered again until it takes it (else: working until its TTL)
            session.keep_task_end(end, now + TASK_END_RETRY)


def running(session: SessionPort) -> bool:
    """Whether a handler of this session runs as a task (its worker then takes the task
    messages of a shared store)."""
    return any(task.call is not None for task in session.tasks.values())


def receive_messages(session: SessionPort, messages: list[TaskMessage], now: float) -> None:
    """Answers and cancellations another worker passed through the shared store to the
    tasks running here (those of tasks no longer running here are dropped).

    Events: ``AnswerReceived``, ``CallCancelled``.
    """
    wall = now + session.host.wall_offset
    for message in messages:
        task = session.tasks.get(message.task_id)
        if task is None or task.call is None:
            continue
        if message.key is None:
            task.move(TaskTrigger.CANCEL, wall)
            session.cancel_call(task.call, "the task was cancelled")
            task.call = None
            task.pending.clear()
            continue
        entry = task.pending.get(message.key)
        if entry is None:
            continue  # answered already
        ticket, ask = entry
        try:
            answer = msgspec.json.decode(message.answer, type=ANSWER_TYPES[ask.method])
        except msgspec.DecodeError:
            continue  # (the worker that took it checked it: not from a worker of this version)
        del task.pending[message.key]
        if not task.pending:
            task.move(TaskTrigger.ANSWERED, wall)
        session.host.emit(AnswerReceived(ticket=ticket, method=ask.method, result=answer))


def expire(session: SessionPort, now: float) -> None:
    """Forget the tasks whose time is up (cancelling any still running)."""
    for task in [t for t in session.tasks.values() if t.expires_at <= now]:
        session.drop_task(task.task_id)
        if task.call is not None:
            session.cancel_call(task.call, "the task expired")


def _task_fields(session: SessionPort, task: TaskRecord) -> dict[str, object]:
    fields: dict[str, object] = {
        "taskId": task.task_id, "status": task.state.value, "createdAt": _iso(task.created_at),
        "lastUpdatedAt": _iso(task.updated_at), "ttlMs": session.config.task_ttl_ms,
        "pollIntervalMs": session.config.task_poll_interval_ms,
    }
    if task.status_message is not None:
        fields["statusMessage"] = task.status_message
    return fields


def _iso(wall: float) -> str:
    return datetime.datetime.fromtimestamp(wall, datetime.UTC).isoformat(timespec="milliseconds")


def _find(session: SessionPort, req: Request) -> TaskRecord | None:
    params: TaskParams = req.params
    task = session.tasks.get(params.task_id)
    if task is not None and task.owner != (None if req.principal is None else req.principal.identity):
        task = None  # another principal's task is as good as unknown
    if task is None:
        session.reject(req, jsonrpc.INVALID_PARAMS, f"Unknown task: {params.task_id}")
    return task


def _find_shared(session: SessionPort, store: TaskStore, req: Request) -> TaskSnapshot | None:
    params: TaskParams = req.params
    task = store.load_task(params.task_id)
    if task is not None and task.owner != (None if req.principal is None else req.principal.identity):
        task = None  # another principal's task is as good as unknown
    if task is None:
        session.reject(req, jsonrpc.INVALID_PARAMS, f"Unknown task: {params.task_id}")
    return task


def _shared_fields(session: SessionPort, task: TaskSnapshot) -> dict[str, object]:
    fields: dict[str, object] = {
        "taskId": task.task_id, "status": task.status, "createdAt": _iso(task.created_at),
        "lastUpdatedAt": _iso(task.updated_at), "ttlMs": session.config.task_ttl_ms,
        "pollIntervalMs": session.config.task_poll_interval_ms,
    }
    if task.status_message is not None:
        fields["statusMessage"] = task.status_message
    return fields


def _shared_get(session: SessionPort, store: TaskStore, req: Request, now: float) -> None:
    task = _find_shared(session, store, req)
    if task is None:
        return
    if task.status not in _TERMINAL_NAMES and not task.alive:
        # its worker stopped beating (killed): the task fails, for this and every later look
        error = _encode({"code": jsonrpc.INTERNAL_ERROR, "message": WORKER_LOST})
        store.end_task(task.task_id, TaskState.FAILED.value, now + session.host.wall_offset, error=error)
        task = store.load_task(task.task_id) or task
    body = _shared_fields(session, task)
    if task.status == TaskState.COMPLETED.value and task.result is not None:
        body["result"] = msgspec.Raw(task.result)
    elif task.status == TaskState.FAILED.value and task.error is not None:
        body["error"] = msgspec.Raw(task.error)
    elif task.status not in _TERMINAL_NAMES and task.input_requests:
        body["inputRequests"] = {key: msgspec.Raw(request) for key, request in task.input_requests.items()}
    session.host.finish(req.channel, session.encode_result(req.request_id, body, req.rules), 200, now)


def _shared_update(session: SessionPort, store: TaskStore, req: Request, now: float) -> None:
    task = _find_shared(session, store, req)
    if task is None:
        return
    params: TaskUpdateParams = req.params
    answers: dict[str, bytes] = {}
    for key, answer in params.input_responses.items():
        request = task.input_requests.get(key)
        if request is None:
            continue
        try:
            method = _decode_ask(request).get("method")
            result = msgspec.convert(answer, RESULT_TYPES[method if isinstance(method, str) else ""])
        except (msgspec.DecodeError, KeyError):
            continue  # not an answer to that question: it stays open
        answers[key] = _encode(result)
    if answers and task.status not in _TERMINAL_NAMES:
        store.answer_task(task.task_id, answers, now + session.host.wall_offset)
    session.host.finish(req.channel, session.encode_result(req.request_id, {}, req.rules), 200, now)


def _shared_cancel(session: SessionPort, store: TaskStore, req: Request, now: float) -> None:
    task = _find_shared(session, store, req)
    if task is None:
        return
    if task.status not in _TERMINAL_NAMES:
        store.cancel_task(task.task_id, now + session.host.wall_offset)
    session.host.finish(req.channel, session.encode_result(req.request_id, {}, req.rules), 200, now)


def tasks_get(session: SessionPort, req: Request, now: float) -> None:
    """``tasks/get``: the task, its result or error inlined, or its open questions."""
    if not require_tasks(session, req):
        return
    if session.task_store is not None:
        _shared_get(session, session.task_store, req, now)
        return
    task = _find(session, req)
    if task is None:
        return
    body = _task_fields(session, task)
    if task.state is TaskState.COMPLETED:
        body["result"] = task.result
    elif task.state is TaskState.FAILED:
        body["error"] = task.error
    elif task.pending:
        body["inputRequests"] = {key: {"method": ask.method, "params": ask.params}
                                 for key, (_, ask) in task.pending.items()}
    session.host.finish(req.channel, session.encode_result(req.request_id, body, req.rules), 200, now)


def tasks_update(session: SessionPort, req: Request, now: float) -> None:
    """``tasks/update``: answers to open questions (unknown or answered keys are ignored)."""
    if not require_tasks(session, req):
        return
    if session.task_store is not None:
        _shared_update(session, session.task_store, req, now)
        return
    task = _find(session, req)
    if task is None:
        return
    params: TaskUpdateParams = req.params
    for key, answer in params.input_responses.items():
        entry = task.pending.get(key)
        if entry is None:
            continue
        ticket, ask = entry
        try:
            result = msgspec.convert(answer, ANSWER_TYPES[ask.method])
        except msgspec.ValidationError:
            continue  # not an answer to that question: it stays open
        del task.pending[key]
        session.host.emit(AnswerReceived(ticket=ticket, method=ask.method, result=result))
    if not task.pending:
        task.move(TaskTrigger.ANSWERED, now + session.host.wall_offset)
    session.host.finish(req.channel, session.encode_result(req.request_id, {}, req.rules), 200, now)


def tasks_cancel(session: SessionPort, req: Request, now: float) -> None:
    """``tasks/cancel``: stop the task if it runs; an acknowledgement either way."""
    if not require_tasks(session, req):
        return
    if session.task_store is not None:
        _shared_cancel(session, session.task_store, req, now)
        return
    task = _find(session, req)
    if task is None:
        return
    if task.state not in _TERMINAL:
        task.move(TaskTrigger.CANCEL, now + session.host.wall_offset)
        assert task.call is not None  # a task that has not ended is running
        session.cancel_call(task.call, "the task was cancelled")
        task.call = None
        task.pending.clear()
    session.host.finish(req.channel, session.encode_result(req.request_id, {}, req.rules), 200, now)

