"""Argument completion: ``completion/complete`` (MCP server utility "Completion").

The two references carry their tag as a read-only ``type`` class attribute, as content blocks do.
"""

from typing import ClassVar, Literal

import msgspec

from ._base import WireStruct, required_list

__all__ = [
    "CompleteRequestParams",
    "CompleteResult",
    "Completion",
    "CompletionArgument",
    "CompletionContext",
    "PromptReference",
    "ResourceTemplateReference",
]


class PromptReference(WireStruct, kw_only=True, omit_defaults=True, tag_field="type", tag="ref/prompt"):
    """Completion target: an argument of the prompt ``name``."""

    type: ClassVar[Literal["ref/prompt"]] = "ref/prompt"
    name: str
    title: str | None = None


class ResourceTemplateReference(
    WireStruct, kw_only=True, omit_defaults=True, tag_field="type", tag="ref/resource"
):
    """Completion target: a variable of the resource template ``uri`` (``ResourceReference``
    before 2025-06-18)."""

    type: ClassVar[Literal["ref/resource"]] = "ref/resource"
    uri: str


class CompletionArgument(WireStruct, kw_only=True, omit_defaults=True):
    """The argument being completed and the text typed so far."""

    name: str
    value: str


class CompletionContext(WireStruct, kw_only=True, omit_defaults=True):
    """Arguments already resolved, to narrow the completion (since 2025-06-18)."""

    arguments: dict[str, str] | None = None


class CompleteRequestParams(WireStruct, kw_only=True, omit_defaults=True):
    """Params of ``completion/complete``."""

    ref: PromptReference | ResourceTemplateReference
    argument: CompletionArgument
    context: CompletionContext | None = None
    meta: dict[str, object] | None = msgspec.field(default=None, name="_meta")


class Completion(WireStruct, kw_only=True, omit_defaults=True):
    """Completion values (at most 100); ``total`` and ``has_more`` tell if there are more."""

    values: list[str] = required_list()
    total: int | None = None
    has_more: bool | None = None


class CompleteResult(WireStruct, kw_only=True, omit_defaults=True):
    """The result of ``completion/complete``."""

    completion: Completion
    meta: dict[str, object] | None = msgspec.field(default=None, name="_meta")
