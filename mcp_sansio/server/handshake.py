"""What a handshake-era client and the server agreed on, as one piece of a session's state.

The phase moves by the table in :mod:`.phases` (``machines.step``); ``initialize``
records the negotiated revision and the client's identity and capabilities,
``logging/setLevel`` its log level, ``resources/subscribe`` its subscriptions; a session
rebuilt from a shared session store resumes all of it at once. Stateless 2026-07-28
requests carry all of this per request and read none of it.
"""

from __future__ import annotations

from collections.abc import Set
from typing import Final

from ..errors import McpSansioError
from ..machines import step
from ..types import ClientCapabilities, Implementation, LoggingLevel
from ..versions import VERSIONS, VersionRules
from .phases import PEER, TRANSITIONS, Phase, Trigger

__all__ = ["Handshake"]

_NO_CAPABILITIES: Final = ClientCapabilities()
_SUBJECT: Final = "the session is "


class Handshake:
    """The handshake era's state of one session: read-only views, and the methods that
    move it.

    Args:
        session_id: the ``Mcp-Session-Id`` of a handshake-era HTTP session, if it is one.
    """

    __slots__ = ("_capabilities", "_client_info", "_log_level", "_phase", "_rules", "_session_id",
                 "_subscriptions", "_version", "revision")

    def __init__(self, session_id: str | None = None) -> None:
        self._phase = Phase.NEW
        self._session_id = session_id
        self._version: str | None = None
        self._rules: VersionRules | None = None
        self._client_info: Implementation | None = None
        self._capabilities: ClientCapabilities = _NO_CAPABILITIES
        self._log_level: LoggingLevel | None = None
        self._subscriptions: set[str] = set()
        self.revision = 0
        """Moves whenever what a session store keeps of the session changes (its version,
        client, capabilities, log level, subscriptions): unchanged, nothing needs saving."""

    @property
    def phase(self) -> Phase:
        """Where the handshake is."""
        return self._phase

    @property
    def session_id(self) -> str | None:
        """The ``Mcp-Session-Id`` of a handshake-era HTTP session, if it is one."""
        return self._session_id

    @property
    def protocol_version(self) -> str | None:
        """The revision ``initialize`` negotiated, if it happened."""
        return self._version

    @property
    def rules(self) -> VersionRules | None:
        """The rules of :attr:`protocol_version`."""
        return self._rules

    @property
    def client_info(self) -> Implementation | None:
        """Who the client said it is."""
        return self._client_info

    @property
    def client_capabilities(self) -> ClientCapabilities:
        """What the client declared."""
        return self._capabilities

    @property
    def log_level(self) -> LoggingLevel | None:
        """The least severe level the client wants logs at (``logging/setLevel``)."""
        return self._log_level

    @property
    def subscriptions(self) -> Set[str]:
        """The resources the client subscribed to."""
        return self._subscriptions

    def advance(self, trigger: Trigger) -> bool:
        """Move the phase as ``trigger`` says (``machines.step`` over the table); whether
        the table allows it (the phase is unchanged when it does not: the caller answers
        or ignores the message)."""
        try:
            self._phase = step(TRANSITIONS, self._phase, trigger, peer=PEER, subject=_SUBJECT)
        except McpSansioError:
            return False
        return True

    def initialize(self, version: str, rules: VersionRules, client_info: Implementation,
                   capabilities: ClientCapabilities) -> None:
        """``initialize`` negotiated ``version`` with the client.

        Raises:
            RemoteProtocolError: the session is past ``initialize`` (the session refuses a
                second one before it gets here).
        """
        self._phase = step(TRANSITIONS, self._phase, Trigger.RECV_INITIALIZE, peer=PEER, subject=_SUBJECT)
        self._version, self._rules = version, rules
        self._client_info, self._capabilities = client_info, capabilities
        self.revision += 1

    def resume(self, *, protocol_version: str, client_info: Implementation | None,
               client_capabilities: ClientCapabilities, log_level: LoggingLevel | None,
               subscriptions: Set[str]) -> None:
        """Rebuild an initialized session from what a session store kept of it.

        Raises:
            LocalProtocolError: this is no fresh session.
        """
        self._phase = step(TRANSITIONS, self._phase, Trigger.RESUME, subject=_SUBJECT)
        self._version, self._rules = protocol_version, VERSIONS.get(protocol_version)
        self._client_info, self._capabilities = client_info, client_capabilities
        self._log_level, self._subscriptions = log_level, set(subscriptions)
        self.revision += 1

    def set_log_level(self, level: LoggingLevel) -> None:
        """``logging/setLevel``: the client wants logs at ``level`` and above."""
        self._log_level = level
        self.revision += 1

    def subscribe(self, uri: str) -> None:
        """The client subscribed to ``uri``."""
        self._subscriptions.add(uri)
        self.revision += 1

    def unsubscribe(self, uri: str) -> None:
        """The client no longer wants updates of ``uri``."""
        self._subscriptions.discard(uri)
        self.revision += 1
