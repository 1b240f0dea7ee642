"""The record of a client request the application is running (a call), and its rounds.

A call lives from the event that hands it to the driver until ``respond``/``fail``/
``input_required`` or a cancellation. A stateless-era call that may ask for input has a
:class:`Round`: the answers known for this run (sealed earlier ones plus the retry's
``inputResponses``) and the questions this run left unanswered.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING

from ..events import RequestId
from ..versions import VersionRules
from .context import Ask
from .events import RequestInfo
from .registry import RegisteredPrompt, RegisteredTool
from .wire import InputResponses

if TYPE_CHECKING:
    from .tasks import TaskRecord

__all__ = ["Call", "CallKind", "Round"]


class CallKind(enum.Enum):
    """Which method a call answers, so ``respond`` knows what to make of a value."""

    TOOL = "tools/call"
    PROMPT = "prompts/get"
    READ = "resources/read"
    COMPLETE = "completion/complete"


class Round:
    """One run of a multi round-trip request (2026-07-28).

    Attributes:
        binding: the digest that ties a ``requestState`` to this request.
        answers: the answers this run can use, by ``inputRequests`` key.
        used: the answers it asked for and got (what the next ``requestState`` keeps).
        pending: the questions it asked without an answer, by key.
    """

    __slots__ = ("answers", "binding", "pending", "used")

    def __init__(self, binding: str, answers: InputResponses) -> None:
        self.binding = binding
        self.answers = answers
        self.used: InputResponses = {}
        self.pending: dict[str, Ask] = {}


class Call:
    """A request being run by the application.

    Attributes:
        call: the handle (unique in the endpoint).
        request_id: the client's JSON-RPC id.
        channel: where its messages go.
        key: its entry in the session's id table.
        info: what the handler was told.
        rules: the rules of its revision.
        kind: the method.
        tool: the tool (``TOOL`` calls).
        prompt: the prompt (``PROMPT`` calls).
        uri: the resource read (``READ`` calls).
        mime_type: the default MIME type of what the read returns.
        cache: the caching hints of its result (``ttlMs``, ``cacheScope``), if cacheable.
        round: its multi round-trip bookkeeping (stateless era, input-capable methods).
        tickets: questions sent to the client and not yet answered.
        asked: questions asked so far in this run (numbers the default keys).
        task: the task it became (tasks extension), if it did.
    """

    __slots__ = ("asked", "cache", "call", "channel", "info", "key", "kind", "mime_type", "prompt",
                 "request_id", "round", "rules", "task", "tickets", "tool", "uri")

    def __init__(self, call: int, request_id: RequestId, channel: int | None,
                 key: tuple[int | None, RequestId], info: RequestInfo, rules: VersionRules,
                 kind: CallKind) -> None:
        self.call = call
        self.request_id = request_id
        self.channel = channel
        self.key = key
        self.info = info
        self.rules = rules
        self.kind = kind
        self.tool: RegisteredTool | None = None
        self.prompt: RegisteredPrompt | None = None
        self.uri = ""
        self.mime_type: str | None = None
        self.cache: tuple[int, str] | None = None
        self.round: Round | None = None
        self.tickets: set[int] = set()
        self.asked = 0
        self.task: TaskRecord | None = None

    @property
    def modern_rules(self) -> VersionRules | None:
        """The rules when the call is a stateless-era request (its result carries more)."""
        return self.rules if self.info.modern else None
