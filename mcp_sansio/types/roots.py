"""Roots: the filesystem boundaries a client exposes (``roots/list``, client feature "Roots")."""

import msgspec

from ._base import WireStruct, required_list

__all__ = ["ListRootsResult", "Root"]


class Root(WireStruct, kw_only=True, omit_defaults=True):
    """A directory or file the server may work in; ``uri`` is a ``file://`` URI."""

    uri: str
    name: str | None = None
    meta: dict[str, object] | None = msgspec.field(default=None, name="_meta")


class ListRootsResult(WireStruct, kw_only=True, omit_defaults=True):
    """The result of ``roots/list``."""

    roots: list[Root] = required_list()
    meta: dict[str, object] | None = msgspec.field(default=None, name="_meta")
