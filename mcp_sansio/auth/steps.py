"""What the OAuth planner hands the host, and what the host hands back.

Every step is a frozen Struct. An :class:`HttpStep` carries an :class:`HttpRequestPlan`
that the host performs (without following redirects) and answers with
:class:`HttpResponse`; :class:`Redirect` sends the user's browser to the authorization
server; :class:`Authorized` and :class:`Failed` end a flow. Secret values (tokens,
secrets, code verifiers, assertions, request bodies) never appear in a ``repr``.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator
from typing import ClassVar, Final, TypeAlias

import msgspec

__all__ = [
    "ENTROPY_BYTES",
    "AuthFailure",
    "AuthStep",
    "Authorized",
    "ExchangeCode",
    "Failed",
    "FetchMetadata",
    "Fresh",
    "Headers",
    "HttpRequestPlan",
    "HttpResponse",
    "HttpStep",
    "MetadataKind",
    "AuthorizationPending",
    "Redacted",
    "Redirect",
    "RefreshToken",
    "Register",
    "RequestToken",
    "AuthStepBase",
    "Token",
]

Headers: TypeAlias = tuple[tuple[str, str], ...]

# How many random bytes every :class:`Fresh` must carry: a PKCE verifier (32) and a
# ``state`` (16) for a redirect, or two JWT ids (16 + 16) for a token request.
ENTROPY_BYTES: Final = 64


class _Hidden:
    """Stands in for a secret value in a ``repr``."""

    def __repr__(self) -> str:
        return "<redacted>"


_HIDDEN = _Hidden()


class Redacted(msgspec.Struct, frozen=True, kw_only=True):
    """A Struct whose ``repr`` (and rich repr) hides the fields named in ``_secret``."""

    _secret: ClassVar[frozenset[str]] = frozenset()

    def _shown(self) -> Iterator[tuple[str, object]]:
        for name in self.__struct_fields__:
            value = getattr(self, name)
            yield name, (_HIDDEN if name in self._secret and value is not None else value)

    def __repr__(self) -> str:
        """The fields, secrets replaced by ``<redacted>``."""
        shown = ", ".join(f"{name}={value!r}" for name, value in self._shown())
        return f"{type(self).__name__}({shown})"

    def __rich_repr__(self) -> list[tuple[str, object]]:
        """What ``rich`` prints: the same redacted fields."""
        return list(self._shown())


class AuthFailure(enum.Enum):
    """Why an authorization flow ended in :class:`Failed`."""

    INSECURE_ENDPOINT = "insecure_endpoint"
    """An authorization URL is plain ``http`` and not on this machine."""
    RESOURCE_MISMATCH = "resource_mismatch"
    """The protected resource metadata names another resource (RFC 9728 section 3.3)."""
    METADATA_NOT_FOUND = "metadata_not_found"
    """No authorization server metadata at any well-known location."""
    INVALID_METADATA = "invalid_metadata"
    """Metadata that does not decode or lacks what the flow needs."""
    ISSUER_MISMATCH = "issuer_mismatch"
    """The metadata's ``issuer`` is not the server it was fetched for (RFC 8414 section 3.3)."""
    HTTP_ERROR = "http_error"
    """A metadata request got a server error (5xx or 429)."""
    PKCE_UNSUPPORTED = "pkce_unsupported"
    """The authorization server does not list ``S256`` in ``code_challenge_methods_supported``."""
    NO_CLIENT = "no_client"
    """No way to identify the client: no matching credentials, metadata document or DCR."""
    REGISTRATION_FAILED = "registration_failed"
    """Dynamic client registration (RFC 7591) was refused or answered nonsense."""
    STATE_MISMATCH = "state_mismatch"
    """The redirect carried another ``state`` than the one sent."""
    ISS_MISMATCH = "iss_mismatch"
    """The redirect's ``iss`` is wrong, or missing though advertised (RFC 9207)."""
    ACCESS_DENIED = "access_denied"
    """The authorization server redirected back with an ``error``."""
    INVALID_REDIRECT = "invalid_redirect"
    """The redirect has no ``code``, repeats a parameter or goes elsewhere."""
    TOKEN_REQUEST_FAILED = "token_request_failed"
    """The token endpoint refused the request."""
    INVALID_TOKEN_RESPONSE = "invalid_token_response"
    """The token endpoint answered 200 with something that is not a usable token."""
    INSUFFICIENT_SCOPE = "insufficient_scope"
    """The server kept answering 403 ``insufficient_scope`` after the attempts allowed."""
    TOKEN_REJECTED = "token_rejected"
    """The server kept answering 401 to fresh tokens after the attempts allowed."""
    CANCELLED = "cancelled"
    """The host cancelled the flow."""


class MetadataKind(enum.Enum):
    """Which document a :class:`FetchMetadata` step fetches."""

    PROTECTED_RESOURCE = "protected_resource"
    """RFC 9728 protected resource metadata of the MCP server."""
    AUTHORIZATION_SERVER = "authorization_server"
    """RFC 8414 / OpenID Connect Discovery metadata of the authorization server."""


class HttpRequestPlan(Redacted, frozen=True, kw_only=True):
    """An HTTP request for the host to perform, exactly as given, without following redirects.

    Attributes:
        method: ``"GET"`` or ``"POST"``.
        url: the absolute URL.
        headers: lower-case names; the host adds ``Host``, ``Content-Length`` and
            ``User-Agent``.
        body: the request body (form-encoded or JSON), ``b""`` for a GET.
    """

    method: str
    url: str
    headers: Headers = ()
    body: bytes = b""

    def __repr__(self) -> str:
        """Method, URL, header names and the body's length; no values that may be secret."""
        names = ", ".join(name for name, _ in self.headers)
        return f"HttpRequestPlan({self.method} {self.url}, headers=[{names}], body={len(self.body)} bytes)"

    def __rich_repr__(self) -> list[tuple[str, object]]:
        """What ``rich`` prints: the same as ``repr``."""
        return [("method", self.method), ("url", self.url), ("headers", [name for name, _ in self.headers]),
                ("body", f"{len(self.body)} bytes")]


class HttpResponse(Redacted, frozen=True, kw_only=True):
    """The answer to an :class:`HttpRequestPlan`, or to an MCP request.

    Attributes:
        status: the HTTP status code.
        headers: the response headers; names in any case, repeated names allowed.
        body: the whole body.
    """

    _secret: ClassVar[frozenset[str]] = frozenset({"body"})

    status: int
    headers: Headers = ()
    body: bytes = b""


class Fresh(Redacted, frozen=True, kw_only=True):
    """What only the host can supply for each call: wall-clock time and random bytes.

    JWTs (client assertions, DPoP proofs) carry ``iat``/``exp`` in Unix time, which the
    monotonic ``now`` cannot give; PKCE verifiers, ``state`` and JWT ids need entropy.

    Attributes:
        unix_time: ``time.time()`` at the call.
        random: at least 64 bytes from ``os.urandom``, never reused.
    """

    _secret: ClassVar[frozenset[str]] = frozenset({"random"})

    unix_time: float
    random: bytes


class Token(Redacted, frozen=True, kw_only=True):
    """An access token and what came with it.

    Attributes:
        access_token: the token itself (hidden in ``repr``).
        token_type: ``"Bearer"`` or ``"DPoP"``.
        expires_at: when it expires on the monotonic clock, or ``None`` if not said.
        scopes: the scopes granted (those requested when the server did not say).
        refresh_token: the refresh token, if one was issued (hidden in ``repr``).
        issuer: the authorization server that issued it.
        serial: 1 for the first token of a flow object, then one more for each new one.
    """

    _secret: ClassVar[frozenset[str]] = frozenset({"access_token", "refresh_token"})

    access_token: str
    token_type: str
    expires_at: float | None
    scopes: tuple[str, ...]
    refresh_token: str | None
    issuer: str
    serial: int


class AuthStepBase(msgspec.Struct, frozen=True, kw_only=True):
    """Base of everything the planner returns."""


class HttpStep(AuthStepBase, frozen=True, kw_only=True):
    """Perform ``request`` and pass the response to :meth:`OAuthFlow.receive`."""

    request: HttpRequestPlan


class FetchMetadata(HttpStep, frozen=True, kw_only=True):
    """GET a metadata document; ``kind`` says which."""

    kind: MetadataKind


class Register(HttpStep, frozen=True, kw_only=True):
    """POST a dynamic client registration (RFC 7591)."""


class ExchangeCode(HttpStep, frozen=True, kw_only=True):
    """POST the authorization code to the token endpoint."""


class RefreshToken(HttpStep, frozen=True, kw_only=True):
    """POST the refresh token to the token endpoint."""


class RequestToken(HttpStep, frozen=True, kw_only=True):
    """POST a token request for a grant with no browser (client credentials, JWT bearer,
    token exchange at an identity provider); ``grant_type`` names it."""

    grant_type: str


class Redirect(AuthStepBase, frozen=True, kw_only=True):
    """Send the user's browser to ``authorization_url``.

    The authorization server redirects back to ``redirect_uri``; pass the query of that
    redirect to :meth:`OAuthFlow.receive_redirect` (or the whole ``Location`` to
    :meth:`OAuthFlow.receive_redirect_location`).
    """

    authorization_url: str
    state: str
    redirect_uri: str


class Authorized(AuthStepBase, frozen=True, kw_only=True):
    """A usable token is held: (re)send the MCP request with
    :meth:`OAuthFlow.authorize_request_headers`."""

    token: Token


class Failed(AuthStepBase, frozen=True, kw_only=True):
    """The flow ended without a token; ``message`` holds no secret."""

    reason: AuthFailure
    message: str


class AuthorizationPending(AuthStepBase, frozen=True, kw_only=True):
    """An authorization is already under way: hold the refused request and send it again
    once the flow ends in :class:`Authorized`."""


AuthStep: TypeAlias = (
    FetchMetadata | Register | ExchangeCode | RefreshToken | RequestToken | Redirect | Authorized | Failed
    | AuthorizationPending
)
