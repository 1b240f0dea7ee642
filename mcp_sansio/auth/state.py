"""The phases of an :class:`~.flow.OAuthFlow`, where each call is legal, and per-flow memory."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Final

from .jose import Entropy
from .requests import TokenRequestSpec
from .steps import Fresh, MetadataKind

__all__ = ["ALLOWED", "AWAITING_HTTP", "DISCOVERY_PHASES", "RESTING", "Attempt", "CallInputs", "Phase",
           "Trigger"]


class Phase(enum.Enum):
    """Where an :class:`OAuthFlow` stands."""

    IDLE = "idle"
    DISCOVER_RESOURCE = "fetching protected resource metadata"
    DISCOVER_SERVER = "fetching authorization server metadata"
    REGISTER = "registering the client"
    AWAIT_REDIRECT = "waiting for the authorization redirect"
    EXCHANGE_CODE = "exchanging the authorization code"
    EXCHANGE_ID_TOKEN = "exchanging the ID token at the identity provider"
    REQUEST_TOKEN = "requesting a token"
    REFRESH = "refreshing the token"
    AUTHORIZED = "authorized"
    FAILED = "failed"


class Trigger(enum.Enum):
    """The calls whose legality depends on the phase."""

    START = "start()"
    RECEIVE = "receive()"
    RECEIVE_REDIRECT = "receive_redirect()"
    REFRESH = "refresh()"
    CANCEL = "cancel()"


DISCOVERY_PHASES: Final = {MetadataKind.PROTECTED_RESOURCE: Phase.DISCOVER_RESOURCE,
                            MetadataKind.AUTHORIZATION_SERVER: Phase.DISCOVER_SERVER}
RESTING: Final = frozenset({Phase.IDLE, Phase.AUTHORIZED, Phase.FAILED})
AWAITING_HTTP: Final = frozenset({Phase.DISCOVER_RESOURCE, Phase.DISCOVER_SERVER, Phase.REGISTER,
                                   Phase.EXCHANGE_CODE, Phase.EXCHANGE_ID_TOKEN, Phase.REQUEST_TOKEN,
                                   Phase.REFRESH})
# Where each call is legal. The phase a call moves to depends on what was received, so the
# handlers set it; receive_resource_response() is legal everywhere (during a flow it answers
# AuthorizationPending) and authorize_request_headers() is a query.
ALLOWED: Final[Mapping[Trigger, frozenset[Phase]]] = {
    Trigger.START: frozenset({Phase.IDLE, Phase.FAILED}),
    Trigger.RECEIVE: AWAITING_HTTP,
    Trigger.RECEIVE_REDIRECT: frozenset({Phase.AWAIT_REDIRECT}),
    Trigger.REFRESH: frozenset({Phase.AUTHORIZED, Phase.FAILED}),
    Trigger.CANCEL: frozenset(Phase) - RESTING,
}


class Attempt:
    """What one flow (from a refusal to a token) remembers between steps."""

    __slots__ = ("nonce_retried", "registration_method", "scope", "scopes", "spec", "state", "step_up",
                 "verifier")

    def __init__(self, *, scope: str | None = None, step_up: bool = False) -> None:
        self.scope = scope  # the challenge's scope= parameter
        self.step_up = step_up  # a 403 insufficient_scope started it
        self.scopes: tuple[str, ...] | None = None  # to ask for once registered
        self.registration_method = ""
        self.verifier = ""
        self.state = ""
        self.spec: TokenRequestSpec | None = None
        self.nonce_retried = False


class CallInputs:
    """The host's inputs to one call."""

    __slots__ = ("entropy", "now", "unix_time")

    def __init__(self, now: float, fresh: Fresh) -> None:
        self.now = now
        self.unix_time = fresh.unix_time
        self.entropy = Entropy(fresh)
