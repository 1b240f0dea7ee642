"""How long to wait for an answer: learnt from the server's own latency.

A fixed timeout either burns the budget (a server that answers with the wrong id leaves
every request waiting its full timeout) or flags slow servers. :class:`Latency` keeps the
round-trip times of the requests that must be answered promptly (pings, lists, unknown
methods) and waits ``factor`` times the slowest recent one, never less than ``floor`` and
never more than the step's own timeout. Requests that may legitimately take long (tool
calls, reads: ``CaseStep.patient``) keep their timeout. Times come in from the records.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Final

from .case import CaseStep, Expect
from .records import Received, Record, Sent, id_key
from .wire import decode_json

__all__ = ["Latency"]

_WARMUP: Final = 3


class Latency:
    """The server's recent round-trip times, and the waits they justify.

    Args:
        floor: the shortest wait, in seconds, however fast the server was.
        factor: how many times the slowest recent answer a request may take.
        window: how many recent answers count.
    """

    def __init__(self, floor: float = 2.0, factor: float = 10.0, window: int = 64) -> None:
        self.floor = floor
        self.factor = factor
        self._recent: deque[float] = deque(maxlen=window)

    def observe(self, seconds: float) -> None:
        """One prompt request's round-trip time."""
        self._recent.append(max(seconds, 0.0))

    def learn(self, steps: Sequence[CaseStep], records: Sequence[Record]) -> None:
        """Every prompt request's round-trip time in one case's records."""
        sent: dict[tuple[str, object], float] = {}
        for record in records:
            if isinstance(record, Sent):
                step = steps[record.step]
                if step.id is not None and step.expect is Expect.RESPONSE and not step.patient:
                    sent.setdefault(id_key(step.id), record.t)
            elif isinstance(record, Received):
                message = decode_json(record.data)
                if isinstance(message, dict) and "method" not in message and "id" in message:
                    started = sent.pop(id_key(message["id"]), None)
                    if started is not None:
                        self.observe(record.t - started)

    def bound(self) -> float | None:
        """How long a prompt request may take, once enough answers were seen."""
        if len(self._recent) < _WARMUP:
            return None
        return max(self.floor, self.factor * max(self._recent))

    def wait(self, step: CaseStep) -> float:
        """How long to wait for ``step``'s answer."""
        bound = self.bound()
        if step.patient or bound is None:
            return step.timeout
        return min(step.timeout, bound)
