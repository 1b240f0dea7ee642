"""Which capability each method needs, on either side: the tables the client session
checks its requests and the server's requests against, written once."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from . import skills
from .types import ServerCapabilities

__all__ = ["INPUT_REQUESTS", "REQUIRES", "SERVER_REQUESTS", "listen_filter", "required_capability",
           "server_offers"]

REQUIRES: Final[Mapping[str, tuple[str, str]]] = {
    "tools/list": ("tools", ""),
    "tools/call": ("tools", ""),
    "resources/list": ("resources", ""),
    "resources/templates/list": ("resources", ""),
    "resources/read": ("resources", ""),
    "resources/subscribe": ("resources", "subscribe"),
    "resources/unsubscribe": ("resources", "subscribe"),
    "prompts/list": ("prompts", ""),
    "prompts/get": ("prompts", ""),
    "completion/complete": ("completions", ""),
    "logging/setLevel": ("logging", ""),
    "skills/list": ("extensions", skills.EXTENSION),
    "skills/get": ("extensions", skills.EXTENSION),
}
"""Which server capability a client request needs: (capability, sub-flag or extension, or "")."""

SERVER_REQUESTS: Final[Mapping[str, str]] = {
    "ping": "",
    "roots/list": "roots",
    "sampling/createMessage": "sampling",
    "elicitation/create": "elicitation",
}
"""Server -> client requests and the client capability each needs ("" = always allowed)."""

INPUT_REQUESTS: Final[Mapping[str, str]] = {
    "roots/list": "roots",
    "sampling/createMessage": "sampling",
    "elicitation/create": "elicitation",
}
"""The input requests a stateless-era result may carry (MRTR) and the client capability each needs."""


def server_offers(capabilities: ServerCapabilities | None, method: str) -> bool:
    """Whether a server that declared ``capabilities`` may be sent ``method``: it declared
    the capability the method needs, and the setting (``resources.subscribe``) or the
    extension (in ``extensions``) it needs within it. Methods that need none are offered."""
    need = REQUIRES.get(method)
    if need is None:
        return True
    capability, flag = need
    declared = getattr(capabilities, capability, None)
    if declared is None or not flag:
        return declared is not None
    return flag in declared if isinstance(declared, dict) else bool(getattr(declared, flag, None))


def required_capability(method: str) -> str:
    """The capability ``method`` needs, as a message names it (``resources.subscribe``)."""
    capability, flag = REQUIRES[method]
    return f"{capability}.{flag}" if flag else capability


def listen_filter(capabilities: ServerCapabilities | None, subscriptions: set[str]) -> dict[str, object]:
    """The ``notifications`` filter of ``subscriptions/listen`` (stateless era): every list
    change the server can announce, and the resources subscribed to."""
    caps = capabilities or ServerCapabilities()
    filt: dict[str, object] = {}
    if caps.tools is not None:
        filt["toolsListChanged"] = True
    if caps.prompts is not None:
        filt["promptsListChanged"] = True
    if caps.resources is not None:
        filt["resourcesListChanged"] = True
        if subscriptions:
            filt["resourceSubscriptions"] = sorted(subscriptions)
    return filt
