"""Pagination of the ``*/list`` results: opaque cursors over registration order.

A cursor is the list's kind and an offset, base64url-encoded: opaque to clients (MCP
"Pagination": they must not parse it), checked on return so that one list's cursor is
refused by another, and an offset past the end is an unknown cursor.
"""

from __future__ import annotations

import base64
import binascii
from typing import TYPE_CHECKING, Any

from .. import jsonrpc

if TYPE_CHECKING:
    from .port import Request, SessionPort

__all__ = ["page"]


def page(session: SessionPort, req: Request, kind: str,
         items: list[Any]) -> tuple[list[Any], str | None] | None:
    """The page of ``items`` the cursor asks for and the next cursor; ``None`` after
    refusing a cursor this server did not mint."""
    size = session.config.page_size
    cursor: str | None = req.params.cursor
    start: int | None = 0
    if cursor is not None:
        start = _offset(kind, cursor)
        if start is None or start > len(items):
            session.reject(req, jsonrpc.INVALID_PARAMS, "Invalid params: unknown cursor")
            return None
    assert start is not None  # checked above
    if size is None:
        return items[start:], None
    end = start + size
    following = _cursor(kind, end) if end < len(items) else None
    return items[start:end], following


def _cursor(kind: str, offset: int) -> str:
    return base64.urlsafe_b64encode(f"{kind}:{offset}".encode()).decode()


def _offset(kind: str, cursor: str) -> int | None:
    try:
        text = base64.urlsafe_b64decode(cursor.encode("ascii")).decode("ascii")
    except (binascii.Error, ValueError):
        return None
    prefix, _, offset = text.partition(":")
    return int(offset) if prefix == kind and offset.isdigit() else None
