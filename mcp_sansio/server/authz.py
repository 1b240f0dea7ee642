"""Authorization for servers: the resource-server side of MCP authorization (2025-11-25).

An HTTP-based server with :class:`AuthSettings` serves its OAuth 2.0 Protected Resource
Metadata (RFC 9728) without a token, and takes every other request only with a valid
``Authorization: Bearer`` token (RFC 6750): none is 401 with ``WWW-Authenticate: Bearer
resource_metadata="...", scope="..."``; a bad, expired or foreign one 401
``invalid_token``; one lacking a scope 403 ``insufficient_scope`` naming the scopes needed
(the client's step-up); a malformed header 400 ``invalid_request``. The core never checks
a signature nor fetches anything: :class:`AuthGate` holds a request whose token is new,
emits :class:`TokenVerificationRequired`, and the driver runs the settings' verifier and
answers with the transport's ``token_verified(ticket, verdict, now=...)``. Verdicts are
cached per token (by its SHA-256, bounded, never past the token's expiry), so a known
token costs one dict lookup (a refusal for an unknown signing key excepted: after a key
rotation the same token may pass a moment later). No token text is kept in a repr, a log
record or an error.
"""

from __future__ import annotations

import enum
import hashlib
import logging
import re
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Final, Generic, Protocol, TypeVar

import msgspec

from ..errors import LocalProtocolError
from ..events import Event

if TYPE_CHECKING:
    from .registry import Registry

__all__ = [
    "PROTECTED_RESOURCE_PATH",
    "Allowed",
    "AsyncTokenVerifier",
    "AuthGate",
    "AuthSettings",
    "Principal",
    "Refusal",
    "RejectReason",
    "TokenRejected",
    "TokenVerdict",
    "TokenVerificationRequired",
    "TokenVerifier",
    "VerifierUnavailable",
    "protected_resource_metadata",
    "protected_resource_paths",
    "resource_metadata_url",
]

log = logging.getLogger(__name__)

PROTECTED_RESOURCE_PATH: Final = "/.well-known/oauth-protected-resource"
_TOKEN68: Final = re.compile(r"[A-Za-z0-9\-._~+/]+=*")
_SCOPE_TOKEN: Final = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]+")  # RFC 6749 scope-token (NQCHAR)
_URL: Final = re.compile(r"https?://[^\s\"\\]+")
_HIDDEN: Final = "<redacted>"


class Principal(msgspec.Struct, frozen=True, kw_only=True):
    """Who a verified access token speaks for.

    Attributes:
        subject: the token's ``sub`` (the user, or the client of a client-credentials
            grant), if it names one.
        client_id: the OAuth client it was issued to (``client_id`` / ``azp``).
        issuer: the authorization server that issued it (``iss``).
        scopes: the scopes it grants.
        claims: every claim of the token (or introspection answer), for the application.
        expires_at: when the server stops accepting it, in POSIX seconds (its ``exp``,
            plus the clock skew its verifier allows); ``None``: never.
    """

    subject: str | None
    client_id: str | None = None
    issuer: str | None = None
    scopes: tuple[str, ...] = ()
    claims: Mapping[str, object] = msgspec.field(default_factory=dict)
    expires_at: float | None = None

    @property
    def identity(self) -> str:
        """What a session is bound to: the issuer and the subject (the client when the
        token names no subject), so that a refreshed or stepped-up token of the same user
        keeps its sessions and no other user's token reaches them."""
        who = self.subject if self.subject is not None else f"client:{self.client_id}"
        return msgspec.json.encode([self.issuer, who]).decode()


class RejectReason(enum.Enum):
    """Why a verifier refused a token (the client sees the reason's description)."""

    MALFORMED = "the access token is malformed"
    BAD_SIGNATURE = "the access token's signature is invalid"
    UNKNOWN_KEY = "the access token is signed with an unknown key"
    BAD_ALGORITHM = "the access token's algorithm is not accepted"
    EXPIRED = "the access token expired"
    NOT_YET_VALID = "the access token is not valid yet"
    WRONG_ISSUER = "the access token was issued by another authorization server"
    WRONG_AUDIENCE = "the access token was issued for another resource"
    INACTIVE = "the access token is not active"
    INVALID = "the access token is invalid"


class TokenRejected(msgspec.Struct, frozen=True, kw_only=True):
    """The verifier's verdict: the token is not acceptable (401 ``invalid_token``).

    Attributes:
        reason: why.
        detail: more, for the operator's DEBUG log only (it never reaches the client);
            it must not contain the token.
    """

    reason: RejectReason
    detail: str = ""


class VerifierUnavailable(msgspec.Struct, frozen=True, kw_only=True):
    """The verifier could not decide (the key set or the introspection endpoint is
    unreachable): 503, not cached, so the next request tries again.

    Attributes:
        detail: for the operator's log; it must not contain the token.
    """

    detail: str = ""


TokenVerdict = Principal | TokenRejected | VerifierUnavailable
"""What a verifier answers."""


class TokenVerifier(Protocol):
    """Decides what an access token is worth (driver side: it may block on I/O).

    The drivers call :meth:`verify` once per token until its verdict expires: in a worker
    thread on the async drivers, inline on the blocking one. An exception counts as
    :class:`VerifierUnavailable`.
    """

    def verify(self, token: str) -> TokenVerdict:
        """The verdict on ``token``."""
        ...


class AsyncTokenVerifier(Protocol):
    """A verifier whose ``verify`` is a coroutine function (``async def``): the async drivers
    await it on their loop (it must not block); the blocking driver cannot run it and
    answers 503."""

    def verify(self, token: str) -> Awaitable[TokenVerdict]:
        """The verdict on ``token``, awaited."""
        ...


class AuthSettings(msgspec.Struct, frozen=True, kw_only=True):
    """How a server is protected (``MCPServer(..., auth=AuthSettings(...))``).

    Attributes:
        resource: the canonical URI of the MCP endpoint (RFC 8707, as clients name it in
            their ``resource`` parameter: ``https://mcp.example.com/mcp``); the metadata's
            ``resource``, and what the verifiers expect as the token's audience.
        authorization_servers: the issuers clients may get tokens from (at least one).
        verifier: what checks a token (``JwtVerifier``, ``IntrospectionVerifier`` of
            ``mcp_sansio_authz``, or any :class:`TokenVerifier` or
            :class:`AsyncTokenVerifier`); the core only holds it.
        required_scopes: scopes every request needs.
        scopes_supported: the metadata's ``scopes_supported`` (default: the required
            scopes and every tool's).
        resource_name: the metadata's ``resource_name``.
        resource_documentation: the metadata's ``resource_documentation`` URL.
        cache_size: verdicts kept at once (the least recently used go first).
        cache_ttl: how long a verdict is reused at most (never past the token's expiry):
            a revoked token is refused again within this time.
        verify_timeout: how long a request waits for its token's verdict before a 503.
    """

    resource: str
    authorization_servers: tuple[str, ...]
    verifier: TokenVerifier | AsyncTokenVerifier
    required_scopes: tuple[str, ...] = ()
    scopes_supported: tuple[str, ...] | None = None
    resource_name: str | None = None
    resource_documentation: str | None = None
    cache_size: int = 4096
    cache_ttl: float = 300.0
    verify_timeout: float = 30.0

    def __post_init__(self) -> None:
        if not _URL.fullmatch(self.resource) or "#" in self.resource:
            raise LocalProtocolError("resource must be an absolute http(s) URI without a fragment")
        if not self.authorization_servers or not all(_URL.fullmatch(a) for a in self.authorization_servers):
            raise LocalProtocolError("authorization_servers must name at least one http(s) issuer")
        check_scopes(self.required_scopes)
        check_scopes(self.scopes_supported or ())
        if self.cache_size < 1 or self.cache_ttl < 0 or self.verify_timeout <= 0:
            raise LocalProtocolError("cache_size and verify_timeout must be positive, cache_ttl not negative")


def check_scopes(scopes: Iterable[str]) -> None:
    """Refuse scopes that are no RFC 6749 scope tokens (they would break the challenge).

    Raises:
        LocalProtocolError: a scope is empty or has a space, a quote or a backslash.
    """
    for scope in scopes:
        if not _SCOPE_TOKEN.fullmatch(scope):
            raise LocalProtocolError(f"{scope!r} is no valid OAuth scope")


class TokenVerificationRequired(Event, frozen=True, kw_only=True):
    """A request waits for the verdict on its bearer token: run the verifier of
    ``app.auth`` on ``token``, then call the transport's ``token_verified(ticket, verdict,
    now=...)``. Its repr hides the token."""

    ticket: int
    token: str

    def __repr__(self) -> str:
        """The ticket, the token hidden."""
        return f"TokenVerificationRequired(ticket={self.ticket!r}, token={_HIDDEN})"

    def __rich_repr__(self) -> list[tuple[str, object]]:
        """What ``rich`` prints: the same, hidden."""
        return [("ticket", self.ticket), ("token", _HIDDEN)]


# ---------------------------------------------------------------- metadata and challenges


def resource_metadata_url(settings: AuthSettings) -> str:
    """Where the protected resource metadata of ``settings.resource`` is (RFC 9728
    section 3.1: the well-known segment between the origin and the resource's path)."""
    scheme, _, rest = settings.resource.partition("://")
    authority, slash, path = rest.partition("/")
    path = (slash + path).split("?", 1)[0].rstrip("/")
    return f"{scheme}://{authority}{PROTECTED_RESOURCE_PATH}{path}"


def protected_resource_paths(settings: AuthSettings, endpoint_path: str) -> frozenset[str]:
    """The paths the metadata is served at: the root well-known path, and the path-suffixed
    forms for the resource's path and the endpoint's (``.../oauth-protected-resource/mcp``)."""
    suffixed = resource_metadata_url(settings).split("://", 1)[1]
    suffixed = "/" + suffixed.partition("/")[2]
    return frozenset({PROTECTED_RESOURCE_PATH, suffixed, PROTECTED_RESOURCE_PATH + endpoint_path.rstrip("/")})


def supported_scopes(settings: AuthSettings, registry: Registry) -> list[str]:
    """``scopes_supported`` of the metadata: as configured, or the required scopes and
    every tool's, in that order."""
    if settings.scopes_supported is not None:
        return list(settings.scopes_supported)
    return _unique([*settings.required_scopes, *(s for tool in registry.tools.values() for s in tool.scopes)])


def protected_resource_metadata(settings: AuthSettings, registry: Registry) -> bytes:
    """The RFC 9728 document (JSON) for ``settings``."""
    doc: dict[str, object] = {
        "resource": settings.resource,
        "authorization_servers": list(settings.authorization_servers),
        "bearer_methods_supported": ["header"],
    }
    scopes = supported_scopes(settings, registry)
    if scopes:
        doc["scopes_supported"] = scopes
    if settings.resource_name is not None:
        doc["resource_name"] = settings.resource_name
    if settings.resource_documentation is not None:
        doc["resource_documentation"] = settings.resource_documentation
    return msgspec.json.encode(doc)


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


class Refusal(msgspec.Struct, frozen=True, kw_only=True):
    """An HTTP answer instead of the request: ``status``, ``headers`` (with
    ``WWW-Authenticate``) and a JSON ``body`` (``{"error": ..., "error_description": ...}``)."""

    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes


class Allowed(msgspec.Struct, frozen=True, kw_only=True):
    """The request may go on, on behalf of ``principal``."""

    principal: Principal


def _refusal(settings: AuthSettings, status: int, error: str | None, description: str,
             scopes: Sequence[str]) -> Refusal:
    params = [f"resource_metadata={_quote(resource_metadata_url(settings))}"]
    if scopes:
        params.append(f"scope={_quote(' '.join(scopes))}")
    if error is not None:
        params += [f"error={_quote(error)}", f"error_description={_quote(description)}"]
    headers = [("www-authenticate", "Bearer " + ", ".join(params)), ("content-type", "application/json"),
               ("cache-control", "no-store")]
    body = msgspec.json.encode({"error": error or "invalid_token", "error_description": description})
    return Refusal(status=status, headers=tuple(headers), body=body)


def unauthorized(settings: AuthSettings) -> Refusal:
    """401 for a request without a bearer token: where the metadata is, which scopes."""
    return _refusal(settings, 401, None, "an access token is needed", settings.required_scopes)


def invalid_token(settings: AuthSettings, reason: RejectReason) -> Refusal:
    """401 ``invalid_token``."""
    return _refusal(settings, 401, "invalid_token", reason.value, settings.required_scopes)


def invalid_request(settings: AuthSettings, description: str) -> Refusal:
    """400 ``invalid_request`` (a malformed ``Authorization`` header)."""
    return _refusal(settings, 400, "invalid_request", description, settings.required_scopes)


def insufficient_scope(settings: AuthSettings, principal: Principal, needed: Sequence[str],
                       registry: Registry) -> Refusal:
    """403 ``insufficient_scope``: the scope parameter names what the request needs plus
    what the token already has of this server's scopes, so that a step-up loses nothing
    (the spec's recommended approach)."""
    known = set(supported_scopes(settings, registry)) | set(needed)
    kept = [s for s in principal.scopes if s in known]
    scopes = _unique([*settings.required_scopes, *kept, *needed])
    missing = " ".join(s for s in needed if s not in principal.scopes)
    description = f"the access token lacks the scopes {missing}"
    return _refusal(settings, 403, "insufficient_scope", description, scopes)


def unavailable() -> Refusal:
    """503: the verdict could not be had (its verifier is unreachable, or was too slow)."""
    body = msgspec.json.encode({"error": "temporarily_unavailable",
                                "error_description": "the access token could not be verified now"})
    return Refusal(status=503, headers=(("content-type", "application/json"), ("retry-after", "5"),
                                        ("cache-control", "no-store")), body=body)


def missing_scopes(principal: Principal, needed: Iterable[str]) -> list[str]:
    """The scopes of ``needed`` that ``principal`` lacks."""
    granted = set(principal.scopes)
    return [s for s in needed if s not in granted]


# ---------------------------------------------------------------- the gate

T = TypeVar("T")


class _Cached(msgspec.Struct):
    verdict: Principal | TokenRejected
    until: float  # on the driver's clock


class _Waiting(Generic[T]):
    __slots__ = ("deadline", "items", "key")

    def __init__(self, key: bytes, deadline: float) -> None:
        self.key = key
        self.deadline = deadline
        self.items: list[T] = []


class AuthGate(Generic[T]):
    """The bearer check of one transport: parses ``Authorization``, caches verdicts, holds
    the requests (``T``: whatever the transport must resume) whose token is being verified.

    Args:
        settings: the protection.
        registry: the app's registry (for the scopes of the metadata).
        wall_offset: add to ``now`` for POSIX time (a token's expiry is POSIX).
        new_ticket: the transport's ticket source.
        emit: the transport's event queue.
    """

    def __init__(self, settings: AuthSettings, registry: Registry, wall_offset: float,
                 new_ticket: _TicketSource, emit: _Emit) -> None:
        self.settings = settings
        self._registry = registry
        self._wall_offset = wall_offset
        self._new_ticket = new_ticket
        self._emit = emit
        self._cache: OrderedDict[bytes, _Cached] = OrderedDict()
        self._waiting: dict[int, _Waiting[T]] = {}  # ticket -> requests
        self._ticket_of: dict[bytes, int] = {}

    def check(self, authorization: Sequence[str], item: T, now: float) -> Allowed | Refusal | None:
        """The verdict on a request with these ``Authorization`` header values, or ``None``
        when ``item`` is held until :meth:`verified` (or :meth:`handle_timeout`).

        Events: ``TokenVerificationRequired`` for a token not seen (or not cached) before.
        """
        settings = self.settings
        if not authorization:
            return unauthorized(settings)
        if len(authorization) > 1:
            return invalid_request(settings, "send one Authorization header")
        scheme, _, token = authorization[0].strip().partition(" ")
        if scheme.lower() != "bearer":
            return unauthorized(settings)  # an unsupported scheme is no bearer attempt (RFC 6750 3.1)
        token = token.strip()
        if not _TOKEN68.fullmatch(token):
            return invalid_request(settings, "the bearer token is malformed")
        key = hashlib.sha256(token.encode()).digest()
        cached = self._cache.get(key)
        if cached is not None and cached.until > now:
            self._cache.move_to_end(key)
            return self._judge(cached.verdict, now)
        ticket = self._ticket_of.get(key)
        if ticket is None:
            ticket = self._new_ticket()
            self._ticket_of[key] = ticket
            self._waiting[ticket] = _Waiting(key, now + settings.verify_timeout)
            self._emit(TokenVerificationRequired(ticket=ticket, token=token))
        self._waiting[ticket].items.append(item)
        return None

    def verified(self, ticket: int, verdict: TokenVerdict, now: float) -> list[tuple[T, Allowed | Refusal]]:
        """The verifier's ``verdict`` for ``ticket``: what each held request gets (nothing
        for an unknown or timed-out ticket)."""
        waiting = self._waiting.pop(ticket, None)
        if waiting is None:
            return []
        del self._ticket_of[waiting.key]
        if isinstance(verdict, VerifierUnavailable):
            log.debug("token verification unavailable (ticket %d)", ticket)
            return [(item, unavailable()) for item in waiting.items]
        until = now + self.settings.cache_ttl
        if isinstance(verdict, Principal):
            if verdict.expires_at is not None:
                until = min(until, verdict.expires_at - self._wall_offset)
        else:
            log.debug("token refused (ticket %d): %s", ticket, verdict.reason.name)
        # A key unknown now may be published in a moment (a rotation the verifier has not
        # refetched yet): that refusal is not remembered. The verifier rate-limits its refetches.
        if not isinstance(verdict, TokenRejected) or verdict.reason is not RejectReason.UNKNOWN_KEY:
            self._cache[waiting.key] = _Cached(verdict, until)
            if len(self._cache) > self.settings.cache_size:
                self._cache.popitem(last=False)
        return [(item, self._judge(verdict, now)) for item in waiting.items]

    def discard(self, gone: Callable[[T], bool]) -> None:
        """Forget the held requests for which ``gone`` is true (their client left)."""
        for waiting in self._waiting.values():
            waiting.items = [item for item in waiting.items if not gone(item)]

    def next_deadline(self) -> float | None:
        """When the oldest held request times out; changes nothing."""
        return min((w.deadline for w in self._waiting.values()), default=None)

    def handle_timeout(self, now: float) -> list[tuple[T, Refusal]]:
        """503 for the requests whose verdict is overdue (a late verdict is ignored)."""
        late: list[tuple[T, Refusal]] = []
        for ticket in [t for t, w in self._waiting.items() if w.deadline <= now]:
            waiting = self._waiting.pop(ticket)
            del self._ticket_of[waiting.key]
            late += [(item, unavailable()) for item in waiting.items]
        return late

    def scope_check(self, principal: Principal, needed: Sequence[str]) -> Refusal | None:
        """403 when ``principal`` lacks a scope of ``needed`` (a tool's), else ``None``."""
        if missing_scopes(principal, needed):
            return insufficient_scope(self.settings, principal, needed, self._registry)
        return None

    def _judge(self, verdict: Principal | TokenRejected, now: float) -> Allowed | Refusal:
        settings = self.settings
        if isinstance(verdict, TokenRejected):
            return invalid_token(settings, verdict.reason)
        if verdict.expires_at is not None and verdict.expires_at <= now + self._wall_offset:
            return invalid_token(settings, RejectReason.EXPIRED)
        if missing_scopes(verdict, settings.required_scopes):
            return insufficient_scope(settings, verdict, settings.required_scopes, self._registry)
        return Allowed(principal=verdict)


class _TicketSource(Protocol):
    def __call__(self) -> int: ...


class _Emit(Protocol):
    def __call__(self, event: TokenVerificationRequired, /) -> None: ...
