"""The OAuth 2.1 authorization planner of an MCP client (MCP authorization spec, 2025-11-25).

:class:`OAuthFlow` is fed the MCP server's refusals, the answers to the HTTP requests it
plans and the browser's redirect, and returns the next :data:`~.steps.AuthStep` each time:
discovery (:mod:`.discovery`), client identity (:mod:`.clients`), then the authorization
code grant with PKCE ``S256``, ``state`` and RFC 8707 ``resource`` (RFC 9207 ``iss``
checked), or a grant with no browser (:mod:`.tokens`). It does no I/O, reads no clock
and makes no randomness: ``now`` and a :class:`~.steps.Fresh` come in with each call.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from mcp_sansio.errors import LocalProtocolError, RemoteProtocolError
from mcp_sansio.urls import Url

from .clients import preregistered, registered_client, registration_method, registration_request
from .config import AuthorizationCodeGrant, IdJagGrant, JwtBearerGrant, OAuthConfig, SigningKey, is_secure
from .discovery import AuthorizationServer, Discovered, Discovery, canonical_uri
from .jose import Entropy, dpop_proof, pkce_challenge
from .metadata import (
    ProtectedResourceMetadata,
    TokenResponse,
    decode,
    decode_error,
    describe_refusal,
)
from .requests import ClientAuth, TokenRequestSpec, authorization_url, render_token_request
from .responses import authorization_code, challenge_params, dpop_nonce, redirect_query, scope_tokens, union
from .state import ALLOWED, DISCOVERY_PHASES, RESTING, Attempt, CallInputs, Phase, Trigger
from .steps import (
    AuthFailure,
    AuthorizationPending,
    Authorized,
    AuthStep,
    ExchangeCode,
    Failed,
    FetchMetadata,
    Fresh,
    Headers,
    HttpRequestPlan,
    HttpResponse,
    Redirect,
    RefreshToken,
    Register,
    RequestToken,
    Token,
)
from .tokens import ID_JAG, JWT_BEARER, TOKEN_EXCHANGE, id_jag_exchange, machine_grant, make_token

__all__ = ["OAuthFlow", "Phase"]

_MAX_NONCE_RETRIES: Final = 2


class OAuthFlow:
    """Plans the authorization of one MCP server URL; holds its token between flows.

    A flow starts with :meth:`receive_resource_response` (a 401, or a 403
    ``insufficient_scope``) or :meth:`start`, and each answer goes to :meth:`receive`
    (HTTP) or :meth:`receive_redirect` (browser) until the step is :class:`Authorized` or
    :class:`Failed`. In between flows, :meth:`authorize_request_headers` gives the headers
    for MCP requests and :meth:`needs_refresh` / :meth:`refresh` renew the token early.

    Every response to an MCP request sent with a token should be reported to
    :meth:`receive_resource_response` with its ``token_serial``: a success resets the count
    of authorization attempts, which otherwise ends in :class:`Failed` after
    ``max_authorization_attempts`` in a row.
    """

    def __init__(self, server_url: Url, config: OAuthConfig) -> None:
        """Create a planner for the MCP endpoint ``server_url``; nothing is sent yet."""
        self.server_url = server_url
        self.config = config
        self._phase = Phase.IDLE
        self._attempt = Attempt()
        self._server: AuthorizationServer | None = None
        self._client: ClientAuth | None = None
        self._prm: ProtectedResourceMetadata | None = None
        self._discovery: Discovery | None = None
        self._resource = canonical_uri(server_url)
        self._token: Token | None = None
        self._token_dpop: SigningKey | None = None
        self._refresh: str | None = None
        self._refresh_at: float | None = None
        self._requested: tuple[str, ...] | None = None
        self._serial = 0
        self._attempts = 0
        self._as_nonce: str | None = None
        self._rs_nonce: str | None = None
        self._rs_nonce_retries = 0

    def __repr__(self) -> str:
        return f"OAuthFlow({self.server_url}, phase={self._phase.name})"

    # ---------------------------------------------------------------- queries

    @property
    def phase(self) -> Phase:
        """Where the flow stands."""
        return self._phase

    @property
    def in_progress(self) -> bool:
        """Whether a flow is under way (the last step was neither Authorized nor Failed)."""
        return self._phase not in RESTING

    @property
    def token(self) -> Token | None:
        """The token in use, if any."""
        return self._token

    @property
    def token_serial(self) -> int:
        """The serial of the token :meth:`authorize_request_headers` uses now; 0 for none.

        Read it when sending a request and pass it back with the answer to
        :meth:`receive_resource_response`."""
        return self._token.serial if self._token is not None else 0

    @property
    def resource(self) -> str:
        """The RFC 8707 ``resource`` sent: as the protected resource metadata spells it,
        else the canonical server URL."""
        return self._resource

    def authorize_request_headers(self, *, method: str, url: Url, fresh: Fresh) -> Headers:
        """The authorization headers for one MCP request, ``()`` while no token is held.

        Args:
            method: the request method (bound into a DPoP proof).
            url: the request URL (likewise).
            fresh: time and entropy for a DPoP proof.

        Returns:
            ``authorization: Bearer ...``, or ``authorization: DPoP ...`` and ``dpop``.

        Raises:
            LocalProtocolError: ``fresh`` has too few random bytes.
        """
        entropy = Entropy(fresh)
        token = self._token
        if token is None:
            return ()
        if self._token_dpop is None:
            return (("authorization", f"Bearer {token.access_token}"),)
        proof = dpop_proof(self._token_dpop, method=method, url=url, unix_time=fresh.unix_time,
                           jti=entropy.token(16), nonce=self._rs_nonce, access_token=token.access_token)
        return (("authorization", f"DPoP {token.access_token}"), ("dpop", proof))

    def needs_refresh(self, now: float) -> bool:
        """Whether the token is due for renewal (see :attr:`OAuthConfig.refresh_margin`)."""
        deadline = self.next_deadline()
        return deadline is not None and now >= deadline

    def next_deadline(self) -> float | None:
        """When the token should be renewed, if it can be renewed without the user."""
        renewable = self._refresh is not None or not isinstance(self.config.grant, AuthorizationCodeGrant)
        if self._token is not None and not self.in_progress and renewable:
            return self._refresh_at
        return None

    # ---------------------------------------------------------------- inputs

    def start(self, *, now: float, fresh: Fresh) -> AuthStep:
        """Authorize before any request was refused (discovery without a challenge's hints).

        Raises:
            LocalProtocolError: a token is held or a flow is under way; or ``fresh`` is short.
        """
        self._check(Trigger.START)
        call = CallInputs(now, fresh)
        return self._begin({}, step_up=False, call=call)

    def receive_resource_response(
        self, status: int, headers: Headers, *, token_serial: int | None = None, now: float, fresh: Fresh
    ) -> AuthStep | None:
        """Look at the MCP server's answer to a request; start a flow if it asks for one.

        Args:
            status: the HTTP status.
            headers: the response headers (``WWW-Authenticate``, ``DPoP-Nonce`` are read).
            token_serial: :attr:`token_serial` as read when the request was sent (0: it went
                without a token), or ``None`` if the host does not track it. An answer to an
                older token only asks for a resend; only a success with the current token
                resets the count of authorization attempts.
            now: the monotonic time.
            fresh: time and entropy, should a step need them.

        Returns:
            ``None`` when the answer is no authorization matter; :class:`Authorized` when the
            request only needs sending again (a newer token or DPoP nonce is there);
            :class:`AuthorizationPending` during a flow; else the first step of a new flow: on a 401 the
            token is dropped and refreshed or replaced, on a 403 ``insufficient_scope`` a new
            authorization asks for the union of the scopes held and those challenged.

        Raises:
            LocalProtocolError: ``fresh`` has too few random bytes.
        """
        call = CallInputs(now, fresh)
        nonce = dpop_nonce(headers)
        if nonce is not None:
            self._rs_nonce = nonce
        token = self._token
        current = token is not None and token_serial == token.serial
        if status < 400:
            if current:
                self._attempts = 0
                self._rs_nonce_retries = 0
            return None
        params = challenge_params(headers, prefer_dpop=self._token_dpop is not None)
        error = params.get("error")
        if status not in {401, 403} or (status == 403 and error != "insufficient_scope"):
            return None
        if self.in_progress:
            return AuthorizationPending()
        if token is not None and token_serial is not None and not current:
            return Authorized(token=token)
        if (status == 401 and error == "use_dpop_nonce" and nonce is not None and token is not None
                and self._token_dpop is not None and self._rs_nonce_retries < _MAX_NONCE_RETRIES):
            self._rs_nonce_retries += 1
            return Authorized(token=token)
        if status == 401:
            self._token = None
            self._token_dpop = None
        return self._begin(params, step_up=status == 403, call=call)

    def receive(self, response: HttpResponse, *, now: float, fresh: Fresh) -> AuthStep:
        """Take the answer to the last :class:`~.steps.HttpStep`'s request.

        Raises:
            LocalProtocolError: no HTTP request is outstanding, or ``fresh`` is short.
        """
        self._check(Trigger.RECEIVE)
        call = CallInputs(now, fresh)
        if self._discovery is not None:
            return self._discovering(self._discovery.receive(response), call)
        if self._phase is Phase.REGISTER:
            return self._on_registration(response, call)
        if self._phase is Phase.EXCHANGE_ID_TOKEN:
            return self._on_id_jag(response, call)
        return self._on_token(response, call)

    def receive_redirect(self, params: Mapping[str, str], *, now: float, fresh: Fresh) -> AuthStep:
        """Take the query parameters of the redirect back to ``redirect_uri``.

        ``state`` must match; ``iss`` must equal the issuer when present, and be present
        when the server advertised it (RFC 9207); then the code is exchanged.

        Raises:
            LocalProtocolError: no redirect is awaited, or ``fresh`` is short.
        """
        self._check(Trigger.RECEIVE_REDIRECT)
        call = CallInputs(now, fresh)
        attempt, server = self._attempt, self._known_server()
        code = authorization_code(params, state=attempt.state, server=server)
        if isinstance(code, Failed):
            return self._fail(code.reason, code.message)
        grant = self.config.grant
        assert isinstance(grant, AuthorizationCodeGrant)  # only that grant redirects
        attempt.spec = TokenRequestSpec(
            endpoint=server.token_endpoint, client=self._client, audience=server.issuer, dpop=server.dpop,
            params=(("grant_type", "authorization_code"), ("code", code),
                    ("redirect_uri", grant.redirect_uri), ("code_verifier", attempt.verifier),
                    ("resource", self._resource)))
        self._phase = Phase.EXCHANGE_CODE
        return ExchangeCode(request=self._render(attempt.spec, call))

    def receive_redirect_location(self, location: str, *, now: float, fresh: Fresh) -> AuthStep:
        """Take the ``Location`` the authorization endpoint redirected to (a headless host
        that issued the authorization request itself); it must point at ``redirect_uri``.

        Raises:
            LocalProtocolError: no redirect is awaited, or ``fresh`` is short.
        """
        self._check(Trigger.RECEIVE_REDIRECT)
        Entropy(fresh)
        grant = self.config.grant
        assert isinstance(grant, AuthorizationCodeGrant)  # only that grant redirects
        params = redirect_query(location, grant.redirect_uri)
        if params is None:
            return self._fail(AuthFailure.INVALID_REDIRECT, "the redirect is not one to the redirect_uri")
        return self.receive_redirect(params, now=now, fresh=fresh)

    def refresh(self, *, now: float, fresh: Fresh) -> AuthStep:
        """Renew the token before it expires: a refresh, or the grant again for grants with
        no user.

        Raises:
            LocalProtocolError: no token is held, it cannot be renewed without the user, or
                ``fresh`` is short.
        """
        self._check(Trigger.REFRESH)
        if self.next_deadline() is None:
            raise LocalProtocolError("the token cannot be renewed without the user")
        call = CallInputs(now, fresh)
        self._attempt = Attempt()
        if self._refresh is not None:
            return self._start_refresh(call)
        return self._authorize(call, renewal=True)

    def cancel(self) -> Failed:
        """Abandon the flow under way (for example, the user closed the browser).

        Raises:
            LocalProtocolError: no flow is under way.
        """
        self._check(Trigger.CANCEL)
        return self._fail(AuthFailure.CANCELLED, "the authorization was cancelled")

    # ---------------------------------------------------------------- discovery

    def _begin(self, params: Mapping[str, str], *, step_up: bool, call: CallInputs) -> AuthStep:
        self._attempt = Attempt(scope=params.get("scope"), step_up=step_up)
        if not is_secure(self.server_url):
            return self._fail(AuthFailure.INSECURE_ENDPOINT, "OAuth needs an https (or loopback) MCP server")
        if step_up and self._server is not None:
            return self._authorize(call)
        self._discovery = Discovery(self.server_url, hint=params.get("resource_metadata"), known=self._server,
                                    dpop_key=self.config.dpop_key, max_bytes=self.config.max_response_bytes)
        return self._discovering(self._discovery.begin(), call)

    def _discovering(self, step: FetchMetadata | Failed | Discovered, call: CallInputs) -> AuthStep:
        if isinstance(step, Failed):
            return self._fail(step.reason, step.message)
        if isinstance(step, FetchMetadata):
            self._phase = DISCOVERY_PHASES[step.kind]
            return step
        self._discovery = None
        if self._server is None or step.server.lookup != self._server.lookup:
            # A new authorization server: what the old one issued or registered is no good there.
            self._token = self._token_dpop = self._refresh = self._as_nonce = None
            if self._client is not None and self._client.issuer is not None:
                self._client = None
        self._server, self._prm, self._resource = step.server, step.resource_metadata, step.resource
        if self._refresh is not None and not self._attempt.step_up:
            return self._start_refresh(call)
        return self._authorize(call)

    # ---------------------------------------------------------------- authorization

    def _authorize(self, call: CallInputs, *, renewal: bool = False) -> AuthStep:
        """A new authorization (or, with ``renewal``, a repeat of a grant with no user)."""
        attempt, server = self._attempt, self._known_server()
        if not renewal and self._attempts >= self.config.max_authorization_attempts:
            reason = AuthFailure.INSUFFICIENT_SCOPE if attempt.step_up else AuthFailure.TOKEN_REJECTED
            return self._fail(reason, f"gave up after {self._attempts} authorization attempts")
        # A renewal asks again for what was asked before (as a refresh does), not for the
        # scope selection's answer without a challenge: every scope the resource lists.
        scopes = self._requested if renewal else self._scopes()
        grant = self.config.grant
        if isinstance(grant, AuthorizationCodeGrant):
            return self._authorize_code(grant, scopes, call)
        client = preregistered(self.config.client, server)
        if client is None and not isinstance(grant, JwtBearerGrant):
            return self._fail(AuthFailure.NO_CLIENT, f"the client credentials are not for {server.lookup}")
        self._attempts += not renewal
        self._requested = scopes
        if isinstance(grant, IdJagGrant):
            attempt.spec = id_jag_exchange(grant, server=server, resource=self._resource, scopes=scopes)
            self._phase = Phase.EXCHANGE_ID_TOKEN
            return RequestToken(request=self._render(attempt.spec, call), grant_type=TOKEN_EXCHANGE)
        return self._request_token(machine_grant(grant, scopes), client, call)

    def _request_token(self, params: tuple[tuple[str, str], ...], client: ClientAuth | None,
                       call: CallInputs) -> AuthStep:
        server = self._known_server()
        self._attempt.spec = spec = TokenRequestSpec(endpoint=server.token_endpoint, client=client,
                                                     audience=server.issuer, dpop=server.dpop,
                                                     params=(*params, ("resource", self._resource)))
        self._phase = Phase.REQUEST_TOKEN
        return RequestToken(request=self._render(spec, call), grant_type=params[0][1])

    def _scopes(self) -> tuple[str, ...] | None:
        """The MCP spec's scope selection: the challenge's, else the resource's
        ``scopes_supported``, else none; on a step-up the union with those held (SEP-2350)."""
        attempt = self._attempt
        challenged = scope_tokens(attempt.scope.split()) if attempt.scope is not None else None
        if attempt.step_up:
            held = self._token.scopes if self._token is not None else ()
            scopes: tuple[str, ...] | None = union(self._requested or (), held, challenged or ())
        elif challenged is not None:
            scopes = challenged
        else:
            listed = self._prm.scopes_supported if self._prm is not None else None
            scopes = None if listed is None else scope_tokens(listed)
        return scopes or None

    def _authorize_code(self, grant: AuthorizationCodeGrant, scopes: tuple[str, ...] | None,
                        call: CallInputs) -> AuthStep:
        server = self._known_server()
        metadata = server.metadata
        if server.authorization_endpoint is None:
            return self._fail(AuthFailure.INVALID_METADATA, "the server has no authorization_endpoint")
        if metadata is not None and "S256" not in (metadata.code_challenge_methods_supported or ()):
            return self._fail(AuthFailure.PKCE_UNSUPPORTED, "the server does not list PKCE S256")
        offered = metadata.scopes_supported if metadata is not None else None
        if (scopes and self.config.request_offline_access and "offline_access" in (offered or ())
                and "offline_access" not in scopes):
            scopes = (*scopes, "offline_access")
        if self._client is None:
            self._client = preregistered(self.config.client, server)
        if (self._client is None and grant.client_metadata_url is not None and metadata is not None
                and metadata.client_id_metadata_document_supported):
            self._client = ClientAuth(client_id=grant.client_metadata_url, method="none")
        if self._client is not None:
            return self._redirect(grant, scopes, call)
        if server.registration_endpoint is None:
            return self._fail(AuthFailure.NO_CLIENT, "no client credentials, metadata document or DCR")
        method = registration_method(server)
        if method is None:
            return self._fail(AuthFailure.NO_CLIENT, "no token endpoint auth method to register with")
        attempt = self._attempt
        attempt.scopes, attempt.registration_method = scopes, method
        self._phase = Phase.REGISTER
        return Register(request=registration_request(server, redirect_uri=grant.redirect_uri,
                                                     client_name=self.config.client_name, method=method))

    def _on_registration(self, response: HttpResponse, call: CallInputs) -> AuthStep:
        attempt, server = self._attempt, self._known_server()
        client = registered_client(response, server=server, method=attempt.registration_method,
                                   max_bytes=self.config.max_response_bytes)
        if isinstance(client, Failed):
            return self._fail(client.reason, client.message)
        self._client = client
        grant = self.config.grant
        assert isinstance(grant, AuthorizationCodeGrant)  # only that grant registers
        return self._redirect(grant, attempt.scopes, call)

    def _redirect(self, grant: AuthorizationCodeGrant, scopes: tuple[str, ...] | None,
                  call: CallInputs) -> AuthStep:
        attempt, server, client = self._attempt, self._known_server(), self._client
        assert client is not None and server.authorization_endpoint is not None  # checked by the callers
        attempt.verifier = call.entropy.token(32)
        attempt.state = call.entropy.token(16)
        params = [("response_type", "code"), ("client_id", client.client_id),
                  ("redirect_uri", grant.redirect_uri), ("code_challenge", pkce_challenge(attempt.verifier)),
                  ("code_challenge_method", "S256"),
                  ("state", attempt.state), *((("scope", " ".join(scopes)),) if scopes else ()),
                  ("resource", self._resource)]
        if scopes and "offline_access" in scopes:
            # OpenID Connect Core section 11: without prompt=consent a provider ignores
            # offline_access, and no refresh token comes.
            params.append(("prompt", "consent"))
        self._requested = scopes
        self._attempts += 1
        self._phase = Phase.AWAIT_REDIRECT
        return Redirect(authorization_url=authorization_url(server.authorization_endpoint, params),
                        state=attempt.state, redirect_uri=grant.redirect_uri)

    # ---------------------------------------------------------------- tokens

    def _start_refresh(self, call: CallInputs) -> AuthStep:
        server = self._known_server()
        assert self._refresh is not None  # checked by the callers
        self._attempt.spec = spec = TokenRequestSpec(
            endpoint=server.token_endpoint, client=self._client, audience=server.issuer, dpop=server.dpop,
            params=(("grant_type", "refresh_token"), ("refresh_token", self._refresh),
                    ("resource", self._resource)))
        self._phase = Phase.REFRESH
        return RefreshToken(request=self._render(spec, call))

    def _render(self, spec: TokenRequestSpec, call: CallInputs) -> HttpRequestPlan:
        return render_token_request(spec, entropy=call.entropy, unix_time=call.unix_time,
                                    assertion_lifetime=self.config.assertion_lifetime,
                                    nonce=self._as_nonce if spec.dpop is not None else None)

    def _on_token(self, response: HttpResponse, call: CallInputs) -> AuthStep:
        attempt, server = self._attempt, self._known_server()
        spec = attempt.spec
        assert spec is not None  # every token phase sets it
        nonce = dpop_nonce(response.headers)
        if nonce is not None:
            self._as_nonce = nonce
        refreshing = self._phase is Phase.REFRESH
        max_bytes = self.config.max_response_bytes
        if 200 <= response.status < 300:
            try:
                token = make_token(decode(TokenResponse, response.body, max_bytes=max_bytes),
                                   dpop=spec.dpop is not None, requested=self._requested,
                                   kept_refresh=self._refresh if refreshing else None, issuer=server.issuer,
                                   serial=self._serial + 1, now=call.now)
            except RemoteProtocolError as exc:
                if refreshing:
                    return self._refresh_failed(call)
                return self._fail(AuthFailure.INVALID_TOKEN_RESPONSE, str(exc))
            return self._authorized(token, spec.dpop, call.now)
        error = decode_error(response.body, max_bytes=max_bytes)
        if (error is not None and error.error == "use_dpop_nonce" and nonce is not None
                and spec.dpop is not None and not attempt.nonce_retried):
            attempt.nonce_retried = True
            request = self._render(spec, call)
            if self._phase is Phase.EXCHANGE_CODE:
                return ExchangeCode(request=request)
            if refreshing:
                return RefreshToken(request=request)
            return RequestToken(request=request, grant_type=spec.params[0][1])
        if refreshing:
            return self._refresh_failed(call)
        refusal = describe_refusal(response.status, response.body, max_bytes=max_bytes)
        return self._fail(AuthFailure.TOKEN_REQUEST_FAILED, f"the token request was refused, {refusal}")

    def _authorized(self, token: Token, dpop: SigningKey | None, now: float) -> Authorized:
        self._token, self._serial, self._refresh = token, token.serial, token.refresh_token
        self._token_dpop = dpop if token.token_type == "DPoP" else None
        lifetime = None if token.expires_at is None else token.expires_at - now
        self._refresh_at = None if lifetime is None else now + max(lifetime - self.config.refresh_margin,
                                                                   lifetime / 2)
        self._phase = Phase.AUTHORIZED
        self._attempt = Attempt()
        return Authorized(token=token)

    def _refresh_failed(self, call: CallInputs) -> AuthStep:
        """A refused refresh falls back to a new authorization."""
        self._refresh = None
        self._token = self._token_dpop = None
        return self._authorize(call)

    def _on_id_jag(self, response: HttpResponse, call: CallInputs) -> AuthStep:
        max_bytes = self.config.max_response_bytes
        if not 200 <= response.status < 300:
            refusal = describe_refusal(response.status, response.body, max_bytes=max_bytes)
            return self._fail(AuthFailure.TOKEN_REQUEST_FAILED, f"the identity provider refused, {refusal}")
        try:
            exchanged = decode(TokenResponse, response.body, max_bytes=max_bytes)
        except RemoteProtocolError as exc:
            return self._fail(AuthFailure.INVALID_TOKEN_RESPONSE, str(exc))
        if exchanged.issued_token_type != ID_JAG:
            return self._fail(AuthFailure.INVALID_TOKEN_RESPONSE, "the identity provider issued no ID-JAG")
        params = (("grant_type", JWT_BEARER), ("assertion", exchanged.access_token))
        scope = (("scope", " ".join(self._requested)),) if self._requested else ()
        client = preregistered(self.config.client, self._known_server())
        return self._request_token(params + scope, client, call)

    # ---------------------------------------------------------------- helpers

    def _check(self, trigger: Trigger) -> None:
        if self._phase not in ALLOWED[trigger]:
            raise LocalProtocolError(f"{trigger.value} is not allowed while {self._phase.value}")

    def _fail(self, reason: AuthFailure, message: str) -> Failed:
        self._phase = Phase.FAILED
        self._discovery = None
        self._attempt = Attempt()
        return Failed(reason=reason, message=message)

    def _known_server(self) -> AuthorizationServer:
        server = self._server
        assert server is not None  # every phase past discovery has one
        return server
