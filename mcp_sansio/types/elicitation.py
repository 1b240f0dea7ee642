"""Elicitation: the server asks the user for input through the client (``elicitation/create``).

Form mode appeared in MCP 2025-06-18; URL mode and ``notifications/elicitation/complete``
in 2025-11-25.
"""

from typing import Literal, TypeAlias

import msgspec

from ._base import WireStruct
from .tasks import TaskMetadata

__all__ = [
    "ElicitAction",
    "ElicitRequestParams",
    "ElicitResult",
    "ElicitationCompleteNotificationParams",
    "URLElicitationRequiredErrorData",
]

ElicitAction: TypeAlias = Literal["accept", "decline", "cancel"]
"""What the user did with an elicitation."""


class ElicitRequestParams(WireStruct, kw_only=True, omit_defaults=True):
    """Params of ``elicitation/create``, in either mode.

    The schema's ``ElicitRequestFormParams | ElicitRequestURLParams`` is one struct here.

    Attributes:
        mode: ``"form"``, ``"url"``, or ``None`` (absent), which means form.
        requested_schema: Form mode: a flat JSON Schema object of primitive properties,
            exactly as sent.
        url: URL mode: the page the user should open.
        elicitation_id: URL mode: matches ``notifications/elicitation/complete``.
    """

    mode: str | None = None
    message: str
    requested_schema: dict[str, object] | None = None
    url: str | None = None
    elicitation_id: str | None = None
    task: TaskMetadata | None = None
    meta: dict[str, object] | None = msgspec.field(default=None, name="_meta")


class ElicitResult(WireStruct, kw_only=True, omit_defaults=True):
    """The result of ``elicitation/create``; ``content`` holds the form values on accept."""

    action: ElicitAction
    content: dict[str, object] | None = None
    meta: dict[str, object] | None = msgspec.field(default=None, name="_meta")


class ElicitationCompleteNotificationParams(WireStruct, kw_only=True, omit_defaults=True):
    """Params of ``notifications/elicitation/complete``: a URL-mode elicitation finished."""

    elicitation_id: str
    meta: dict[str, object] | None = msgspec.field(default=None, name="_meta")


class URLElicitationRequiredErrorData(WireStruct, kw_only=True, omit_defaults=True):
    """The ``data`` of JSON-RPC error -32042: URL elicitations needed before a retry."""

    elicitations: list[ElicitRequestParams]
