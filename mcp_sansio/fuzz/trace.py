"""The trace format: a reproducer as one JSON object per line.

The first line is a header (``{"mcp-sansio-trace": 1, ...}``: rule, method, message, spec,
transport, era, seed). Each further line is one message with its direction and its time in
seconds since the trace began: ``{"dir": "send", "t": 0.012, "msg": {...}, "step": {...}}``
for what the fuzz client sent (the step's expectations ride along, so a replay judges the
answers the same way) and ``{"dir": "recv", "t": ..., "msg": {...}}`` for what came back.
A message whose bytes are not exactly the compact JSON of their value is kept as
``"text"`` (UTF-8) or ``"b64"`` (anything else), so every byte replays unchanged.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import Final

import msgspec

from .case import CaseStep, encode
from .errors import TraceError
from .records import Received, Record, Sent

__all__ = ["FORMAT", "Trace", "TraceError", "dump_trace", "load_trace"]

FORMAT: Final = 1
_decode: Final = msgspec.json.Decoder().decode


class Trace(msgspec.Struct, kw_only=True):
    """A parsed trace: its header and the steps to send, in order."""

    header: dict[str, object]
    steps: list[CaseStep]


def _payload(data: bytes) -> dict[str, object]:
    try:
        value = _decode(data)
        if encode(value) == data:
            return {"msg": value}
    except (msgspec.DecodeError, RecursionError):
        pass
    try:
        return {"text": data.decode("utf-8")}
    except UnicodeDecodeError:
        return {"b64": base64.b64encode(data).decode("ascii")}


def _data(entry: Mapping[str, object]) -> bytes:
    if "msg" in entry:
        return encode(entry["msg"])
    if isinstance(entry.get("text"), str):
        return str(entry["text"]).encode("utf-8")
    if isinstance(entry.get("b64"), str):
        return base64.b64decode(str(entry["b64"]), validate=True)
    return b""


def dump_trace(header: Mapping[str, object], steps: Sequence[CaseStep],
               records: Sequence[Record] = ()) -> bytes:
    """The trace of ``steps`` (and, when given, the records of a run of them, which add
    the times and what came back)."""
    lines = [encode({"mcp-sansio-trace": FORMAT, **header})]
    start = next((r.t for r in records if isinstance(r, Sent | Received)), 0.0)
    sent: set[int] = set()
    for record in records:
        if isinstance(record, Sent):
            lines.append(_send_line(steps[record.step], record.t - start))
            sent.add(record.step)
        elif isinstance(record, Received):
            lines.append(encode({"dir": "recv", "t": round(record.t - start, 6), **_payload(record.data)}))
    lines += [_send_line(step, None) for index, step in enumerate(steps) if index not in sent]
    return b"\n".join(lines) + b"\n"


def _send_line(step: CaseStep, t: float | None) -> bytes:
    meta = msgspec.to_builtins(msgspec.structs.replace(step, data=b""))
    meta.pop("data", None)
    entry: dict[str, object] = {"dir": "send"}
    if t is not None:
        entry["t"] = round(t, 6)
    return encode({**entry, **_payload(step.data), "step": meta})


def load_trace(data: bytes) -> Trace:
    """Parse a trace written by :func:`dump_trace`.

    Raises:
        TraceError: the text is not a trace of a known format, or a line is broken.
    """
    lines = [line for line in data.splitlines() if line.strip()]
    try:
        header = _decode(lines[0]) if lines else None
        if not isinstance(header, dict) or header.get("mcp-sansio-trace") != FORMAT:
            raise TraceError('not an mcp-sansio trace (the first line has no "mcp-sansio-trace": 1)')
        steps = []
        for number, line in enumerate(lines[1:], start=2):
            entry = _decode(line)
            if not isinstance(entry, dict) or entry.get("dir") != "send":
                continue
            meta = entry.get("step")
            steps.append(
                msgspec.convert(
                    {
                        **(meta if isinstance(meta, dict) else {"label": f"line {number}"}),
                        "data": _data(entry),
                    },
                    CaseStep,
                    from_attributes=True,
                )
            )
    except (msgspec.DecodeError, msgspec.ValidationError, ValueError) as exc:
        raise TraceError(f"broken trace: {exc}") from exc
    return Trace(header=header, steps=steps)
