"""How ``mcp-sansio`` shows things: tables that never cut a name, results block by block.

Tables pad every column but the last to its widest cell and wrap the last one in the room
left by the terminal (``COLUMNS``), or below the row when too little is left; so names,
which are identifiers, are never cut. A tool result prints each block once: text as text,
images and audio as type, MIME type and size, resources as URI, MIME type and size, and
structured content once, indented (a text block that only repeats it is left out).

Everything a server supplies (names, descriptions, instructions, results, errors, its
stderr) goes through :func:`shown` on its way out, so no control character reaches the
terminal: no escape sequence can clear the screen, retitle the window, hide text or move
the cursor, and no newline or carriage return can fake a row or overwrite a line.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
import sys
import textwrap
from collections.abc import Sequence
from typing import Final

import msgspec

from mcp_sansio.types import (
    AudioContent,
    CallToolResult,
    ContentBlock,
    GetPromptResult,
    ImageContent,
    LoggingMessageNotificationParams,
    ReadResourceResult,
    ResourceLink,
    TextContent,
)

__all__ = [
    "Activity", "ShownFormatter", "block_text", "one_line", "print_json", "print_prompt", "print_resource",
    "print_result", "report_error", "shown", "table",
]

_GAP: Final = "  "
_MIN_LAST: Final = 30  # narrower than this, the last column goes below its row
_INDENT: Final = "    "


# C0 and C1 controls, DEL, and the invisible marks that reorder or split lines (bidi
# overrides and isolates, the Unicode line and paragraph separators); a block keeps its
# newlines and tabs, a line (a table cell, a header) keeps neither.
_INVISIBLE: Final = "\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
_IN_BLOCK: Final = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_INVISIBLE}]")
_IN_LINE: Final = re.compile(f"[\x00-\x1f\x7f-\x9f{_INVISIBLE}]")
_NAMED: Final = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\x00": "\\0"}


def shown(text: str, *, block: bool = False) -> str:
    """``text`` from a server, safe to print: each control character written as an escape
    (``\\x1b``, ``\\r``, ``\\n``, ``\\u202e``), newlines and tabs kept only in a ``block``."""
    return (_IN_BLOCK if block else _IN_LINE).sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


# What JSON may carry raw but a terminal may act on: C1 controls, DEL, the invisible marks.
_JSON_RAW: Final = re.compile(f"[\x7f-\x9f{_INVISIBLE}]")


def print_json(value: object) -> None:
    """Write ``value`` (Structs included) as one line of JSON; the control characters the
    encoder leaves raw (C1, DEL, bidi marks: only ever inside strings) are ``\\u`` escapes
    too, so the JSON is the same and the terminal safe."""
    text = msgspec.json.encode(value).decode()
    sys.stdout.write(_JSON_RAW.sub(lambda match: f"\\u{ord(match.group()):04x}", text) + "\n")


class ShownFormatter(logging.Formatter):
    """Log records as their message alone (as Python's last-resort handler writes them),
    :func:`shown`: a warning may quote what a server sent."""

    def __init__(self) -> None:
        super().__init__("%(message)s")

    def format(self, record: logging.LogRecord) -> str:
        return shown(super().format(record), block=True)


def one_line(text: str, size: int = 500) -> str:
    """``text`` on one line, whitespace collapsed, at most ``size`` characters."""
    return " ".join(text.split())[:size]


def report_error(message: str, details: Sequence[str] = ()) -> None:
    """Write ``mcp-sansio: error: <message>`` on stderr, then each detail line indented."""
    lines = [f"mcp-sansio: error: {shown(one_line(message))}", *(_INDENT + shown(line) for line in details)]
    sys.stderr.write("\n".join(lines) + "\n")


def table(title: str, headers: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """Print a table (see the module docstring); the last column may be empty. Every cell
    is :func:`shown` (one row stays one row), the last one on one line first."""
    lines = [f"{title} ({len(rows)})"]
    if rows:
        safe = [[*map(shown, row[:-1]), shown(one_line(row[-1], size=10_000))] for row in rows]
        lines += _rows([headers, *safe], shutil.get_terminal_size((80, 24)).columns)
    sys.stdout.write("\n".join(lines) + "\n")


def _rows(rows: Sequence[Sequence[str]], width: int) -> list[str]:
    widths = [max(len(row[index]) for row in rows) for index in range(len(rows[0]) - 1)]
    lead = sum(widths) + len(_GAP) * len(widths)
    room = width - lead
    out: list[str] = []
    for row in rows:
        head = _GAP.join(cell.ljust(size) for cell, size in zip(row, widths, strict=False))
        last = one_line(row[-1], size=10_000)
        if not last:
            out.append(head.rstrip())
        elif room >= _MIN_LAST:
            wrapped = textwrap.wrap(last, room, break_on_hyphens=False) or [""]
            out.append(head + _GAP + wrapped[0])
            out += [" " * lead + piece for piece in wrapped[1:]]
        else:
            out.append(head.rstrip())
            out += textwrap.wrap(last, max(width, _MIN_LAST), initial_indent=_INDENT,
                                 subsequent_indent=_INDENT, break_on_hyphens=False)
    return out


def _decoded_size(data: str) -> int:
    """Bytes in base64 ``data``, without decoding it."""
    return len(data.rstrip("=")) * 3 // 4


def block_text(block: ContentBlock) -> str:
    """One content block, readably (see the module docstring)."""
    if isinstance(block, TextContent):
        return block.text
    if isinstance(block, ImageContent | AudioContent):
        return f"[{block.type} {block.mime_type}, {_decoded_size(block.data)} bytes]"
    if isinstance(block, ResourceLink):
        mime = f", {block.mime_type}" if block.mime_type else ""
        size = "" if block.size is None else f", {block.size} bytes"
        return f"[resource link {block.uri}{mime}{size}]"
    resource = block.resource
    length = len(resource.text.encode()) if resource.text is not None else _decoded_size(resource.blob or "")
    kind = f", {resource.mime_type}" if resource.mime_type else ""
    return f"[resource {resource.uri}{kind}, {length} bytes]"


def print_result(result: CallToolResult, as_json: bool) -> None:
    """Write a tool result to stdout: its wire shape, or each block once, readably."""
    if as_json:
        print_json(result)
        return
    structured = result.structured_content
    for block in result.content:
        if structured is not None and isinstance(block, TextContent) and _same_json(block.text, structured):
            continue  # the text form of the structured content, printed below
        sys.stdout.write(shown(block_text(block), block=True) + "\n")
    if structured is not None:
        sys.stdout.write(shown(json.dumps(structured, indent=2, ensure_ascii=False), block=True) + "\n")


def print_prompt(result: GetPromptResult, as_json: bool) -> None:
    """Write a prompt's messages to stdout: its wire shape, or ``role: content`` lines."""
    if as_json:
        print_json(result)
        return
    if result.description:
        sys.stdout.write(shown(result.description, block=True) + "\n")
    for message in result.messages:
        sys.stdout.write(f"{message.role}: {shown(block_text(message.content), block=True)}\n")


def print_resource(result: ReadResourceResult, as_json: bool) -> None:
    """Write what ``resources/read`` gave: its wire shape, or each text as it is and each
    blob as ``[blob MIME, N bytes]`` (with the URI first when there are several)."""
    if as_json:
        print_json(result)
        return
    several = len(result.contents) > 1
    for contents in result.contents:
        if several:
            sys.stdout.write(f"[{shown(contents.uri)}]\n")
        text = contents.text
        if text is not None or contents.blob is None:
            text = text or ""
            sys.stdout.write(shown(text, block=True) + ("" if text.endswith("\n") else "\n"))
        else:
            mime = shown(contents.mime_type or "application/octet-stream")
            sys.stdout.write(f"[blob {mime}, {_decoded_size(contents.blob)} bytes]\n")


class Activity:
    """What ``call`` shows on stderr while it waits: each log message of the server
    (``notifications/message``) on a line of its own, and the progress: on a terminal a
    live line, redrawn in place and cleared at the end; elsewhere, a line per report when
    ``verbose``, else nothing."""

    _BAR: Final = 20

    def __init__(self, *, verbose: bool) -> None:
        self._live = sys.stderr.isatty()
        self._verbose = verbose
        self._line = ""  # the live line now on the terminal

    @property
    def log_level(self) -> str:
        """The least severe log message to ask the server for: ``debug`` when verbose."""
        return "debug" if self._verbose else "info"

    def progress(self, progress: float, total: float | None, message: str | None) -> None:
        """A ``notifications/progress`` of the call (its ``on_progress``)."""
        if total:
            done = round(self._BAR * min(max(progress / total, 0.0), 1.0))
            text = f"[{'#' * done}{'-' * (self._BAR - done)}] {progress:g}/{total:g}"
        else:
            text = f"progress {progress:g}"
        if message:
            text += " " + shown(one_line(message))
        if self._live:
            self._line = text[: max(shutil.get_terminal_size((80, 24)).columns - 1, 10)]
            sys.stderr.write("\r" + self._line + "\x1b[K")
            sys.stderr.flush()
        elif self._verbose:
            sys.stderr.write(text + "\n")

    def log(self, params: object, server: str | None = None) -> None:
        """A ``notifications/message`` (its params), from ``server`` when there are several."""
        if not isinstance(params, LoggingMessageNotificationParams):
            return
        data = params.data if isinstance(params.data, str) else json.dumps(params.data, ensure_ascii=False)
        source = ":".join(part for part in (server, params.logger) if part)
        text = f"{params.level}" + (f" {source}" if source else "") + f": {data}"
        self._clear()
        sys.stderr.write(shown(one_line(text, size=2000)) + "\n")
        if self._line:
            sys.stderr.write(self._line + "\x1b[K")
        sys.stderr.flush()

    def end(self) -> None:
        """The call is over: take the live line away."""
        self._clear()
        self._line = ""

    def _clear(self) -> None:
        if self._line:
            sys.stderr.write("\r\x1b[K")


def _same_json(text: str, value: object) -> bool:
    try:
        return bool(json.loads(text) == value)
    except ValueError:
        return False
