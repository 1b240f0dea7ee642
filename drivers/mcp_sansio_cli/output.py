"""How ``mcp-sansio`` shows things: tables that never cut a name, results block by block.

Tables pad every column but the last to its widest cell and wrap the last one in the room
left by the terminal (``COLUMNS``), or below the row when too little is left; so names,
which are identifiers, are never cut. A tool result prints each block once: text as text,
images and audio as type, MIME type and size, resources as URI, MIME type and size, and
structured content once, indented (a text block that only repeats it is left out).
"""

from __future__ import annotations

import json
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
    ResourceLink,
    TextContent,
)

__all__ = ["block_text", "one_line", "print_json", "print_prompt", "print_result", "report_error", "table"]

_GAP: Final = "  "
_MIN_LAST: Final = 30  # narrower than this, the last column goes below its row
_INDENT: Final = "    "


def print_json(value: object) -> None:
    """Write ``value`` (Structs included) as one line of JSON."""
    sys.stdout.write(msgspec.json.encode(value).decode() + "\n")


def one_line(text: str, size: int = 500) -> str:
    """``text`` on one line, whitespace collapsed, at most ``size`` characters."""
    return " ".join(text.split())[:size]


def report_error(message: str, details: Sequence[str] = ()) -> None:
    """Write ``mcp-sansio: error: <message>`` on stderr, then each detail line indented."""
    lines = [f"mcp-sansio: error: {one_line(message)}", *(_INDENT + line for line in details)]
    sys.stderr.write("\n".join(lines) + "\n")


def table(title: str, headers: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """Print a table (see the module docstring); the last column may be empty."""
    lines = [f"{title} ({len(rows)})"]
    if rows:
        lines += _rows([headers, *rows], shutil.get_terminal_size((80, 24)).columns)
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
        sys.stdout.write(block_text(block) + "\n")
    if structured is not None:
        sys.stdout.write(json.dumps(structured, indent=2, ensure_ascii=False) + "\n")


def print_prompt(result: GetPromptResult, as_json: bool) -> None:
    """Write a prompt's messages to stdout: its wire shape, or ``role: content`` lines."""
    if as_json:
        print_json(result)
        return
    if result.description:
        sys.stdout.write(result.description + "\n")
    for message in result.messages:
        sys.stdout.write(f"{message.role}: {block_text(message.content)}\n")


def _same_json(text: str, value: object) -> bool:
    try:
        return bool(json.loads(text) == value)
    except ValueError:
        return False
