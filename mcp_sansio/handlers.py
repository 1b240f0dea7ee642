"""Pure helpers every driver shares for what the server asks of the client.

Which capabilities to declare from the handlers an application registered, and how a
handler's return value (a typed Struct or a plain wire-shape dict) becomes an answer.
Validation happens here so every driver rejects a malformed answer the same way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

import msgspec

from .errors import LocalProtocolError
from .types import (
    RESULT_TYPES,
    ClientCapabilities,
    ListRootsResult,
    Root,
    RootsCapability,
)

__all__ = ["client_capabilities", "coerce_result", "roots_result"]

_URL_AND_FORM: Final[dict[str, object]] = {"form": {}, "url": {}}


def client_capabilities(*, sampling: bool, elicitation: bool, roots: bool) -> ClientCapabilities:
    """The capabilities to declare: only what a handler exists for (no handler, no claim)."""
    return ClientCapabilities(
        sampling={} if sampling else None,
        elicitation=dict(_URL_AND_FORM) if elicitation else None,
        roots=RootsCapability(list_changed=True) if roots else None,
    )


def coerce_result(method: str, value: object) -> msgspec.Struct | Mapping[str, object]:
    """Check a handler's answer to the server's ``method`` request and return it to send.

    A Struct is sent as it is; a mapping must convert to the method's result type, and
    is then sent as given, so fields the types do not model survive.

    Raises:
        LocalProtocolError: the value is neither, or does not match the result type.
    """
    if isinstance(value, msgspec.Struct):
        return value
    if not isinstance(value, Mapping):
        raise LocalProtocolError(
            f"a {method} handler must return a result Struct or a dict, not {type(value).__name__}"
        )
    tp = RESULT_TYPES.get(method)
    if tp is not None:
        try:
            msgspec.convert(value, tp)
        except msgspec.ValidationError as exc:
            raise LocalProtocolError(f"invalid {method} result from the handler: {exc}") from exc
    return value


def roots_result(roots: Sequence[Root | Mapping[str, object]]) -> ListRootsResult:
    """``roots/list`` answer from ``Root`` Structs or ``{"uri", "name"}`` dicts.

    Raises:
        LocalProtocolError: a root is malformed.
    """
    out: list[Root] = []
    for root in roots:
        if isinstance(root, Root):
            out.append(root)
            continue
        try:
            out.append(msgspec.convert(root, Root))
        except msgspec.ValidationError as exc:
            raise LocalProtocolError(f"invalid root {root!r}: {exc}") from exc
    return ListRootsResult(roots=out)
