"""What an application gives a connection to answer its server, and the options of
every ``connect_*``: written once, for every driver.

:class:`Handlers` holds the four answers (sampling, elicitation, roots, notifications);
a capability is declared only when its handler is given. The ``connect_*`` functions take
their options as keyword arguments typed by the ``*Options`` dicts below (the transport
keys come from :mod:`mcp_sansio_base.options`), so each option is declared and documented
once; :func:`resolve` fills in the defaults.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypedDict

from mcp_sansio import ClientConfig
from mcp_sansio.errors import LocalProtocolError
from mcp_sansio.events import NotificationReceived
from mcp_sansio.handlers import client_capabilities
from mcp_sansio.types import (
    ClientCapabilities,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestParams,
    ElicitResult,
    Root,
)

from ..options import HttpKeys, StdioKeys, WebSocketKeys

__all__ = [
    "ConnectOptions",
    "ElicitationHandler",
    "Handlers",
    "HttpOptions",
    "NotificationHandler",
    "ProgressCallback",
    "RootsArg",
    "SamplingHandler",
    "Settings",
    "StdioOptions",
    "WebSocketOptions",
    "resolve",
]

SamplingHandler = Callable[
    [CreateMessageRequestParams], Awaitable[CreateMessageResult | Mapping[str, object]]
]
"""Answers ``sampling/createMessage``: an LLM completion."""
ElicitationHandler = Callable[[ElicitRequestParams], Awaitable[ElicitResult | Mapping[str, object]]]
"""Answers ``elicitation/create`` (form or URL mode)."""
NotificationHandler = Callable[[NotificationReceived], Awaitable[object]]
"""Sees every notification from the server."""
ProgressCallback = Callable[[float, float | None, str | None], object]
"""``(progress, total, message)`` for one request's progress notifications."""
RootsArg = Sequence[Root | Mapping[str, object]]
"""The roots offered to the server: ``Root`` Structs or ``{"uri", "name"}`` dicts."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Handlers:
    """How the application answers what the server asks; ``None``: not offered."""

    on_sampling: SamplingHandler | None = None
    on_elicitation: ElicitationHandler | None = None
    roots: RootsArg | None = None
    on_notification: NotificationHandler | None = None

    def capabilities(self) -> ClientCapabilities:
        """The client capabilities these handlers make true (and no others)."""
        return client_capabilities(sampling=self.on_sampling is not None,
                                   elicitation=self.on_elicitation is not None, roots=self.roots is not None)


class ConnectOptions(TypedDict, total=False):
    """The options of every ``connect_*``.

    ``config`` holds every limit and timeout (default ``ClientConfig()``); the handlers
    come as one ``handlers=Handlers(...)`` or as the four keyword arguments
    ``on_sampling``, ``on_elicitation``, ``roots``, ``on_notification`` (not both).
    """

    config: ClientConfig | None
    handlers: Handlers
    on_sampling: SamplingHandler | None
    on_elicitation: ElicitationHandler | None
    roots: RootsArg | None
    on_notification: NotificationHandler | None


class StdioOptions(ConnectOptions, StdioKeys, total=False):
    """The options of ``connect_stdio``."""


class HttpOptions(ConnectOptions, HttpKeys, total=False):
    """The options of ``connect_http``."""


class WebSocketOptions(ConnectOptions, WebSocketKeys, total=False):
    """The options of ``connect_websocket``."""


@dataclass(frozen=True, slots=True)
class Settings:
    """The options every connection needs, defaults filled in."""

    config: ClientConfig
    handlers: Handlers


def resolve(options: ConnectOptions) -> Settings:
    """The config and handlers of ``options``, defaults filled in.

    Raises:
        LocalProtocolError: ``handlers`` is given together with a handler argument.
    """
    loose = Handlers(on_sampling=options.get("on_sampling"), on_elicitation=options.get("on_elicitation"),
                     roots=options.get("roots"), on_notification=options.get("on_notification"))
    handlers = options.get("handlers")
    if handlers is None:
        handlers = loose
    elif loose != _NONE:
        raise LocalProtocolError("give handlers=Handlers(...) or the handler arguments, not both")
    return Settings(config=options.get("config") or ClientConfig(), handlers=handlers)


_NONE = Handlers()
