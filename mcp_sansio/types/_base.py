"""The base class and field helpers shared by every MCP wire type.

Wire types are plain msgspec Structs decoded on the hot path, so they carry no validation
beyond their annotations. Attributes are snake_case; their JSON names are camelCase, and
``_meta`` is spelled out on each type that has it.
"""

from typing import Any

import msgspec

__all__ = ["WireStruct", "required_list"]


class WireStruct(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """Base of every MCP wire type: keyword-only, camelCase JSON, unset fields left out.

    msgspec does not inherit ``kw_only`` at runtime, so every subclass repeats
    ``kw_only=True, omit_defaults=True``.
    """


def _new_list() -> list[Any]:
    """Return a fresh empty list (a factory msgspec cannot recognise as ``list``)."""
    return []


def required_list() -> list[Any]:
    """Default for a list the schema requires but a lenient reader may find missing.

    Decoding fills in ``[]`` when the peer left the list out. Encoding always writes the
    list, even when empty: ``omit_defaults`` drops an empty list whose factory is ``list``
    itself, and the schema (and strict peers) would then reject the message.
    """
    return msgspec.field(default_factory=_new_list)
