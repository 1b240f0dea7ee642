"""Protocol utilities: progress, cancellation and logging notifications, ``logging/setLevel``."""

from typing import Literal, TypeAlias

import msgspec

from ._base import WireStruct
from .common import ProgressToken, RequestId

__all__ = [
    "CancelledNotificationParams",
    "LoggingLevel",
    "LoggingMessageNotificationParams",
    "ProgressNotificationParams",
    "SetLevelRequestParams",
]

LoggingLevel: TypeAlias = Literal[
    "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"
]
"""A syslog severity (RFC 5424), from least to most severe."""


class ProgressNotificationParams(WireStruct, kw_only=True, omit_defaults=True):
    """Params of ``notifications/progress``: how far the request ``progress_token`` got.

    ``progress`` increases with every notification; ``total`` is the end value if known;
    ``message`` appeared in 2025-03-26.
    """

    progress_token: ProgressToken
    progress: float
    total: float | None = None
    message: str | None = None
    meta: dict[str, object] | None = msgspec.field(default=None, name="_meta")


class CancelledNotificationParams(WireStruct, kw_only=True, omit_defaults=True):
    """Params of ``notifications/cancelled``: the sender gave up on ``request_id``.

    ``request_id`` is required up to 2025-06-18; 2025-11-25 makes it optional (tasks are
    cancelled with ``tasks/cancel`` instead).
    """

    request_id: RequestId | None = None
    reason: str | None = None
    meta: dict[str, object] | None = msgspec.field(default=None, name="_meta")


class SetLevelRequestParams(WireStruct, kw_only=True, omit_defaults=True):
    """Params of ``logging/setLevel``: the least severe level the client wants to receive."""

    level: LoggingLevel
    meta: dict[str, object] | None = msgspec.field(default=None, name="_meta")


class LoggingMessageNotificationParams(WireStruct, kw_only=True, omit_defaults=True):
    """Params of ``notifications/message``: one log entry; ``data`` is any JSON value."""

    level: LoggingLevel
    logger: str | None = None
    data: object
    meta: dict[str, object] | None = msgspec.field(default=None, name="_meta")
