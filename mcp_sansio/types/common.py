"""Identifiers and the generic params and results that many MCP methods share.

Covers ``RequestId``, ``ProgressToken`` and the ``_meta``-only params and results of the
base protocol (MCP 2024-11-05 to 2025-11-25, schema ``Request``/``Notification``/``Result``).
"""

from typing import TypeAlias

import msgspec

from ._base import WireStruct

__all__ = [
    "EmptyResult",
    "NotificationParams",
    "PaginatedRequestParams",
    "ProgressToken",
    "RequestId",
    "RequestParams",
]

RequestId: TypeAlias = str | int
"""A JSON-RPC request id: a string or an integer."""

ProgressToken: TypeAlias = str | int
"""The token a requester puts in ``_meta.progressToken`` to receive progress for a request."""


class RequestParams(WireStruct, kw_only=True, omit_defaults=True):
    """Params of a request that takes nothing but ``_meta`` (``ping``, ``roots/list``)."""

    meta: dict[str, object] | None = msgspec.field(default=None, name="_meta")


class NotificationParams(WireStruct, kw_only=True, omit_defaults=True):
    """Params of a notification that carries nothing but ``_meta`` (the ``list_changed`` family)."""

    meta: dict[str, object] | None = msgspec.field(default=None, name="_meta")


class PaginatedRequestParams(WireStruct, kw_only=True, omit_defaults=True):
    """Params of a ``*/list`` request: the opaque ``cursor`` from the previous page, if any."""

    cursor: str | None = None
    meta: dict[str, object] | None = msgspec.field(default=None, name="_meta")


class EmptyResult(WireStruct, kw_only=True, omit_defaults=True):
    """The result of a request that returns nothing (``ping``, ``logging/setLevel``, ...)."""

    meta: dict[str, object] | None = msgspec.field(default=None, name="_meta")
