"""The authorization code grant: client identity, PKCE, state, scopes, RFC 8707 resource,
RFC 9207 iss, the code exchange and token validation (conformance ``auth/basic-cimd``,
``auth/pre-registration``, ``auth/token-endpoint-auth-*``, ``auth/scope-*``,
``auth/offline-access-*``, ``auth/iss-*``)."""

from __future__ import annotations

import pytest
from core.test_auth_support import (
    AS,
    MCP,
    REDIRECT_URI,
    answer,
    as_metadata,
    authorized,
    basic_credentials,
    body_json,
    challenge,
    failed,
    form,
    fresh,
    header,
    new_flow,
    prm,
    query,
    refuse,
    to_exchange,
    to_metadata,
    to_redirect,
    token,
    url_of,
)

from mcp_sansio.auth import (
    AuthFailure,
    AuthorizationCodeGrant,
    Authorized,
    AuthStep,
    ClientCredentials,
    ExchangeCode,
    Fresh,
    OAuthFlow,
    Phase,
    Redirect,
    Register,
    pkce_challenge,
)
from mcp_sansio.errors import LocalProtocolError

CIMD = "https://conformance-test.local/client-metadata.json"


# -- client identity


def test_registration_sends_exactly_the_redirect_uri_as_a_native_app() -> None:
    step = to_metadata(new_flow())
    assert isinstance(step, Register)
    assert step.request.method == "POST"
    assert header(step.request, "content-type") == "application/json"
    assert body_json(step.request) == {
        "client_name": "mcp-sansio",
        "redirect_uris": [REDIRECT_URI],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        "application_type": "native",
    }


def test_https_redirect_uri_registers_a_web_app() -> None:
    flow = new_flow(grant=AuthorizationCodeGrant(redirect_uri="https://app.example/cb"))
    step = to_metadata(flow)
    assert isinstance(step, Register)
    assert body_json(step.request)["application_type"] == "web"


@pytest.mark.parametrize(
    ("listed", "asked"),
    [
        (["client_secret_post", "client_secret_basic"], "client_secret_basic"),
        (["private_key_jwt", "client_secret_post"], "client_secret_post"),
        (None, "client_secret_basic"),
    ],
)
def test_registration_asks_for_a_listed_method(listed: list[str] | None, asked: str) -> None:
    step = to_metadata(new_flow(), as_metadata(token_endpoint_auth_methods_supported=listed))
    assert isinstance(step, Register)
    assert body_json(step.request)["token_endpoint_auth_method"] == asked


def test_registration_needs_a_method_it_can_use() -> None:
    step = to_metadata(new_flow(), as_metadata(token_endpoint_auth_methods_supported=["private_key_jwt"]))
    failed(step, AuthFailure.NO_CLIENT)


def test_refused_registration_fails_with_the_error() -> None:
    flow = new_flow()
    to_metadata(flow)
    step = failed(
        answer(flow, 400, {"error": "invalid_redirect_uri", "error_description": "no"}),
        AuthFailure.REGISTRATION_FAILED,
    )
    assert "invalid_redirect_uri" in step.message


def test_undecodable_registration_fails() -> None:
    flow = new_flow()
    to_metadata(flow)
    failed(answer(flow, 201, {"client_secret": "s"}), AuthFailure.REGISTRATION_FAILED)


@pytest.mark.parametrize(
    "answered",
    [
        {"client_id": "c", "token_endpoint_auth_method": "private_key_jwt"},
        {"client_id": "c", "token_endpoint_auth_method": "client_secret_basic"},
    ],
)
def test_registration_with_an_unusable_method_fails(answered: dict[str, object]) -> None:
    flow = new_flow()
    to_metadata(flow)
    failed(answer(flow, 201, answered), AuthFailure.REGISTRATION_FAILED)


def test_client_id_metadata_document_replaces_registration_where_supported() -> None:
    flow = new_flow(grant=AuthorizationCodeGrant(redirect_uri=REDIRECT_URI, client_metadata_url=CIMD))
    step = to_metadata(flow, as_metadata(client_id_metadata_document_supported=True))
    assert isinstance(step, Redirect)
    assert query(step.authorization_url)["client_id"] == CIMD


def test_client_id_metadata_document_is_not_used_where_unsupported() -> None:
    flow = new_flow(grant=AuthorizationCodeGrant(redirect_uri=REDIRECT_URI, client_metadata_url=CIMD))
    assert isinstance(to_metadata(flow), Register)


def test_preregistered_client_comes_before_registration_and_uses_basic() -> None:
    flow = new_flow(
        client=ClientCredentials(client_id="pre-registered-client", client_secret="pre-registered-secret")
    )
    exchange = to_exchange(
        flow,
        as_metadata(
            registration_endpoint=None, token_endpoint_auth_methods_supported=["client_secret_basic"]
        ),
    )
    assert basic_credentials(exchange.request) == "pre-registered-client:pre-registered-secret"
    assert form(exchange.request)["client_id"] == "pre-registered-client"
    assert "client_secret" not in form(exchange.request)


def test_preregistered_client_for_another_server_is_not_used() -> None:
    flow = new_flow(client=ClientCredentials(client_id="c", issuer="https://other.example"))
    assert isinstance(to_metadata(flow), Register)


def test_no_way_to_identify_the_client_fails() -> None:
    failed(to_metadata(new_flow(), as_metadata(registration_endpoint=None)), AuthFailure.NO_CLIENT)


# -- token endpoint authentication


def registered(method: str | None, secret: str | None) -> ExchangeCode:
    flow = new_flow()
    to_metadata(flow)
    answered: dict[str, object] = {"client_id": "test-client-1"}
    if secret is not None:
        answered["client_secret"] = secret
    if method is not None:
        answered["token_endpoint_auth_method"] = method
    redirect = answer(flow, 201, answered)
    assert isinstance(redirect, Redirect)
    step = flow.receive_redirect({"code": "c", "state": redirect.state}, now=0.0, fresh=fresh())
    assert isinstance(step, ExchangeCode)
    return step


def test_client_secret_basic_sends_the_secret_in_the_header_only() -> None:
    request = registered("client_secret_basic", "test-secret-1").request
    assert basic_credentials(request) == "test-client-1:test-secret-1"
    assert "client_secret" not in form(request)


def test_client_secret_basic_also_names_the_client_in_the_form() -> None:
    request = registered("client_secret_basic", "test-secret-1").request
    assert form(request)["client_id"] == "test-client-1"


def test_client_secret_post_sends_the_secret_in_the_body_only() -> None:
    request = registered("client_secret_post", "test-secret-1").request
    assert header(request, "authorization") is None
    assert (form(request)["client_id"], form(request)["client_secret"]) == ("test-client-1", "test-secret-1")


def test_none_sends_the_client_id_alone() -> None:
    request = registered("none", None).request
    assert header(request, "authorization") is None
    assert form(request)["client_id"] == "test-client-1"
    assert "client_secret" not in form(request)


def test_registered_secret_without_a_method_uses_the_method_asked_for() -> None:
    request = registered(None, "test-secret-1").request
    assert form(request)["client_id"] == "test-client-1"
    assert "client_secret" not in form(request)


def test_basic_credentials_are_form_encoded_first() -> None:
    flow = new_flow(client=ClientCredentials(client_id="id:1", client_secret="p@ss word"))
    exchange = to_exchange(flow, as_metadata(token_endpoint_auth_methods_supported=["client_secret_basic"]))
    assert basic_credentials(exchange.request) == "id%3A1:p%40ss%20word"


def test_preregistered_secret_uses_post_when_only_post_is_listed() -> None:
    flow = new_flow(client=ClientCredentials(client_id="c", client_secret="s"))
    exchange = to_exchange(flow, as_metadata(token_endpoint_auth_methods_supported=["client_secret_post"]))
    assert form(exchange.request)["client_secret"] == "s"


def test_preregistered_method_can_be_forced() -> None:
    flow = new_flow(
        client=ClientCredentials(
            client_id="c", client_secret="s", token_endpoint_auth_method="client_secret_post"
        )
    )
    assert form(to_exchange(flow).request)["client_secret"] == "s"


def test_preregistered_public_client_sends_its_id() -> None:
    flow = new_flow(client=ClientCredentials(client_id="public"))
    assert form(to_exchange(flow).request)["client_id"] == "public"


# -- the authorization request and the redirect back


def test_authorization_url_carries_pkce_state_and_resource() -> None:
    redirect = to_redirect(new_flow())
    assert redirect.redirect_uri == REDIRECT_URI
    assert redirect.authorization_url.startswith(AS + "/authorize?")
    params = query(redirect.authorization_url)
    assert params["response_type"] == "code"
    assert params["client_id"] == "test-client-id"
    assert params["redirect_uri"] == REDIRECT_URI
    assert params["code_challenge_method"] == "S256"
    assert len(params["code_challenge"]) == 43
    assert params["state"] == redirect.state
    assert params["resource"] == MCP
    assert "scope" not in params


def test_authorization_endpoint_query_is_kept() -> None:
    redirect = to_redirect(new_flow(), as_metadata(authorization_endpoint=AS + "/authorize?tenant=a"))
    assert redirect.authorization_url.startswith(AS + "/authorize?tenant=a&response_type=code&")


def test_code_exchange_proves_the_challenge_and_repeats_the_resource() -> None:
    flow = new_flow()
    redirect = to_redirect(flow)
    exchange = flow.receive_redirect(
        {"code": "test-auth-code", "state": redirect.state}, now=0.0, fresh=fresh()
    )
    assert isinstance(exchange, ExchangeCode)
    assert exchange.request.url == AS + "/token"
    assert header(exchange.request, "content-type") == "application/x-www-form-urlencoded"
    sent = form(exchange.request)
    assert sent["grant_type"] == "authorization_code"
    assert sent["code"] == "test-auth-code"
    assert sent["redirect_uri"] == REDIRECT_URI
    assert pkce_challenge(sent["code_verifier"]) == query(redirect.authorization_url)["code_challenge"]
    assert sent["resource"] == query(redirect.authorization_url)["resource"] == MCP
    assert flow.phase is Phase.EXCHANGE_CODE


def test_each_authorization_gets_a_new_verifier_and_state() -> None:
    first, second = to_redirect(new_flow()), to_redirect(new_flow())
    assert first.state != second.state
    assert (
        query(first.authorization_url)["code_challenge"] != query(second.authorization_url)["code_challenge"]
    )


def test_wrong_state_is_refused() -> None:
    flow = new_flow()
    to_redirect(flow)
    failed(
        flow.receive_redirect({"code": "c", "state": "forged"}, now=0.0, fresh=fresh()),
        AuthFailure.STATE_MISMATCH,
    )


def test_error_redirect_is_access_denied() -> None:
    flow = new_flow()
    redirect = to_redirect(flow)
    step = failed(
        flow.receive_redirect(
            {"error": "access_denied", "error_description": "user said no", "state": redirect.state},
            now=0.0,
            fresh=fresh(),
        ),
        AuthFailure.ACCESS_DENIED,
    )
    assert "user said no" in step.message


def test_error_redirect_without_description() -> None:
    flow = new_flow()
    redirect = to_redirect(flow)
    step = failed(
        flow.receive_redirect({"error": "server_error", "state": redirect.state}, now=0.0, fresh=fresh()),
        AuthFailure.ACCESS_DENIED,
    )
    assert step.message == "authorization refused: 'server_error'"


def test_redirect_without_a_code_is_invalid() -> None:
    flow = new_flow()
    redirect = to_redirect(flow)
    failed(
        flow.receive_redirect({"state": redirect.state}, now=0.0, fresh=fresh()), AuthFailure.INVALID_REDIRECT
    )


def test_location_of_a_headless_authorization_is_accepted() -> None:
    flow = new_flow()
    redirect = to_redirect(flow)
    location = f"{REDIRECT_URI}?code=test-auth-code&state={redirect.state}"
    step = flow.receive_redirect_location(location, now=0.0, fresh=fresh())
    assert isinstance(step, ExchangeCode)
    assert form(step.request)["code"] == "test-auth-code"


@pytest.mark.parametrize(
    "location",
    [
        "http://127.0.0.1:5001/callback?code=c",
        "http://127.0.0.1:5000/other?code=c",
        "not a url",
        "/callback?code=c",
    ],
)
def test_location_elsewhere_is_an_invalid_redirect(location: str) -> None:
    flow = new_flow()
    to_redirect(flow)
    failed(flow.receive_redirect_location(location, now=0.0, fresh=fresh()), AuthFailure.INVALID_REDIRECT)


def test_location_repeating_a_parameter_is_an_invalid_redirect() -> None:
    flow = new_flow()
    redirect = to_redirect(flow)
    location = f"{REDIRECT_URI}?code=a&code=b&state={redirect.state}"
    failed(flow.receive_redirect_location(location, now=0.0, fresh=fresh()), AuthFailure.INVALID_REDIRECT)


# -- RFC 9207 iss


def redirect_with(metadata_iss: bool | None, **params: str) -> AuthStep:
    flow = new_flow()
    redirect = to_redirect(flow, as_metadata(authorization_response_iss_parameter_supported=metadata_iss))
    return flow.receive_redirect({"code": "c", "state": redirect.state, **params}, now=0.0, fresh=fresh())


def test_matching_iss_is_accepted_when_advertised() -> None:
    assert isinstance(redirect_with(True, iss=AS), ExchangeCode)


def test_absent_iss_is_accepted_when_not_advertised() -> None:
    assert isinstance(redirect_with(None), ExchangeCode)


def test_absent_iss_is_refused_when_advertised() -> None:
    failed(redirect_with(True), AuthFailure.ISS_MISMATCH)


def test_wrong_iss_is_refused_when_advertised() -> None:
    failed(redirect_with(True, iss="https://evil.example.com"), AuthFailure.ISS_MISMATCH)


def test_wrong_iss_is_refused_even_when_not_advertised() -> None:
    failed(redirect_with(False, iss="https://evil.example.com"), AuthFailure.ISS_MISMATCH)


def test_iss_is_compared_without_normalization() -> None:
    failed(redirect_with(True, iss=AS + "/"), AuthFailure.ISS_MISMATCH)


def test_iss_is_checked_before_an_error_is_believed() -> None:
    failed(
        redirect_with(True, iss="https://evil.example.com", error="access_denied"), AuthFailure.ISS_MISMATCH
    )


# -- PKCE support


@pytest.mark.parametrize("methods", [None, ["plain"]])
def test_server_without_s256_is_refused(methods: list[str] | None) -> None:
    failed(
        to_metadata(new_flow(), as_metadata(code_challenge_methods_supported=methods)),
        AuthFailure.PKCE_UNSUPPORTED,
    )


def test_server_without_authorization_endpoint_cannot_do_the_code_grant() -> None:
    failed(to_metadata(new_flow(), as_metadata(authorization_endpoint=None)), AuthFailure.INVALID_METADATA)


# -- scopes


def scope_asked(
    www_authenticate: str,
    resource_metadata: dict[str, object],
    metadata: dict[str, object],
    **overrides: object,
) -> str | None:
    flow = new_flow(**overrides)
    refuse(flow, headers=challenge(www_authenticate))
    answer(flow, 200, resource_metadata)
    step = answer(flow, 200, metadata)
    if isinstance(step, Register):
        step = answer(flow, 201, {"client_id": "c"})
    assert isinstance(step, Redirect)
    return query(step.authorization_url).get("scope")


def test_scope_comes_from_the_challenge() -> None:
    asked = scope_asked('Bearer scope="mcp:basic"', prm(scopes_supported=["mcp:profile"]), as_metadata())
    assert asked == "mcp:basic"


def test_scope_falls_back_to_scopes_supported() -> None:
    asked = scope_asked("Bearer", prm(scopes_supported=["mcp:basic", "mcp:read", "mcp:write"]), as_metadata())
    assert asked == "mcp:basic mcp:read mcp:write"


def test_scope_is_omitted_when_undefined() -> None:
    assert scope_asked("Bearer", prm(), as_metadata(scopes_supported=["mcp:basic"])) is None


def test_empty_challenge_scope_is_omitted() -> None:
    assert scope_asked('Bearer scope=""', prm(scopes_supported=["a"]), as_metadata()) is None


def test_offline_access_is_added_when_the_server_lists_it() -> None:
    asked = scope_asked(
        "Bearer",
        prm(scopes_supported=["mcp:basic"]),
        as_metadata(scopes_supported=["mcp:basic", "offline_access"]),
    )
    assert asked == "mcp:basic offline_access"


def test_offline_access_comes_with_prompt_consent() -> None:
    # OpenID Connect Core section 11: a provider ignores offline_access unless prompt has
    # consent; oidc-provider does, and our client got no refresh token (found end to end).
    flow = new_flow()
    refuse(flow, headers=challenge("Bearer"))
    answer(flow, 200, prm(scopes_supported=["mcp:basic"]))
    step = answer(flow, 200, as_metadata(scopes_supported=["mcp:basic", "offline_access"]))
    if isinstance(step, Register):
        step = answer(flow, 201, {"client_id": "c"})
    assert isinstance(step, Redirect)
    sent = query(step.authorization_url)
    assert (sent["scope"], sent["prompt"]) == ("mcp:basic offline_access", "consent")


def test_no_prompt_without_offline_access() -> None:
    flow = new_flow()
    refuse(flow, headers=challenge('Bearer scope="mcp:basic"'))
    answer(flow, 200, prm())
    step = answer(flow, 200, as_metadata())
    if isinstance(step, Register):
        step = answer(flow, 201, {"client_id": "c"})
    assert isinstance(step, Redirect)
    assert "prompt" not in query(step.authorization_url)


def test_offline_access_is_not_asked_for_when_unlisted() -> None:
    asked = scope_asked(
        "Bearer",
        prm(scopes_supported=["mcp:basic", "mcp:read"]),
        as_metadata(scopes_supported=["mcp:basic", "mcp:read"]),
    )
    assert asked == "mcp:basic mcp:read"


def test_offline_access_is_not_repeated() -> None:
    asked = scope_asked(
        'Bearer scope="offline_access a"', prm(), as_metadata(scopes_supported=["offline_access"])
    )
    assert asked == "offline_access a"


def test_offline_access_can_be_declined() -> None:
    asked = scope_asked(
        "Bearer",
        prm(scopes_supported=["mcp:basic"]),
        as_metadata(scopes_supported=["offline_access"]),
        request_offline_access=False,
    )
    assert asked == "mcp:basic"


# -- the token


def test_token_becomes_bearer_authorization() -> None:
    flow = new_flow()
    step = authorized(flow, now=2.0)
    assert step.token.token_type == "Bearer"
    assert step.token.expires_at == 3602.0
    assert step.token.issuer == AS
    assert step.token.serial == flow.token_serial == 1
    assert flow.phase is Phase.AUTHORIZED
    assert not flow.in_progress
    assert flow.authorize_request_headers(method="POST", url=flow.server_url, fresh=fresh()) == (
        ("authorization", "Bearer test-token-1"),
    )


def test_no_token_means_no_authorization_header() -> None:
    flow = new_flow()
    assert flow.authorize_request_headers(method="POST", url=flow.server_url, fresh=fresh()) == ()
    assert flow.token is None
    assert flow.token_serial == 0


def test_granted_scopes_default_to_those_requested() -> None:
    flow = new_flow()
    refuse(flow, headers=challenge('Bearer scope="a b"'))
    answer(flow, 200, prm())
    answer(flow, 200, as_metadata())
    redirect = answer(flow, 201, {"client_id": "c"})
    assert isinstance(redirect, Redirect)
    flow.receive_redirect({"code": "c", "state": redirect.state}, now=0.0, fresh=fresh())
    step = answer(flow, 200, token())
    assert isinstance(step, Authorized)
    assert step.token.scopes == ("a", "b")


def test_granted_scopes_come_from_the_response() -> None:
    assert authorized(new_flow(), scope="x y").token.scopes == ("x", "y")


def test_lifetime_may_be_a_string_of_digits() -> None:
    assert authorized(new_flow(), expires_in="60").token.expires_at == 60.0


def test_token_without_lifetime_never_expires_locally() -> None:
    flow = new_flow()
    to_exchange(flow)
    step = answer(flow, 200, {"access_token": "t", "token_type": "bearer"})
    assert isinstance(step, Authorized)
    assert step.token.expires_at is None


@pytest.mark.parametrize(
    "document",
    [
        {"access_token": "t", "token_type": "mac"},
        {"access_token": "t", "token_type": "DPoP"},
        {"access_token": "t\r\nx-injected: 1", "token_type": "Bearer"},
        {"access_token": "", "token_type": "Bearer"},
        {"access_token": "t", "token_type": "Bearer", "expires_in": "soon"},
        {"access_token": "t", "token_type": "Bearer", "expires_in": -1},
        {"access_token": "t", "token_type": "Bearer", "expires_in": True},
        {"token_type": "Bearer"},
    ],
)
def test_unusable_token_response_is_refused(document: dict[str, object]) -> None:
    flow = new_flow()
    to_exchange(flow)
    failed(answer(flow, 200, document), AuthFailure.INVALID_TOKEN_RESPONSE)


def test_refused_code_exchange_fails_with_the_error() -> None:
    flow = new_flow()
    to_exchange(flow)
    step = failed(answer(flow, 400, {"error": "invalid_grant"}), AuthFailure.TOKEN_REQUEST_FAILED)
    assert step.message == "the token request was refused, HTTP 400: 'invalid_grant'"


def test_refusal_without_an_oauth_error_says_so() -> None:
    flow = new_flow()
    to_exchange(flow)
    step = failed(answer(flow, 500, b"oops"), AuthFailure.TOKEN_REQUEST_FAILED)
    assert step.message == "the token request was refused, HTTP 500, no OAuth error given"


# -- phases


def test_start_discovers_without_a_challenge() -> None:
    flow = new_flow()
    assert (
        url_of(flow.start(now=0.0, fresh=fresh()))
        == "http://localhost:3000/.well-known/oauth-protected-resource/mcp"
    )


def test_start_during_a_flow_is_refused() -> None:
    flow = new_flow()
    refuse(flow)
    with pytest.raises(LocalProtocolError, match="start"):
        flow.start(now=0.0, fresh=fresh())


def test_receive_with_nothing_outstanding_is_refused() -> None:
    flow = new_flow()
    with pytest.raises(LocalProtocolError, match="receive"):
        answer(flow, 200, prm())
    assert flow.phase is Phase.IDLE


def test_redirect_when_none_is_awaited_is_refused() -> None:
    flow = new_flow()
    refuse(flow)
    with pytest.raises(LocalProtocolError):
        flow.receive_redirect({"code": "c"}, now=0.0, fresh=fresh())
    with pytest.raises(LocalProtocolError):
        flow.receive_redirect_location(REDIRECT_URI, now=0.0, fresh=fresh())
    assert flow.phase is Phase.DISCOVER_RESOURCE


def test_short_entropy_is_refused_before_anything_changes() -> None:
    flow = new_flow()
    with pytest.raises(LocalProtocolError, match="64 bytes"):
        flow.receive_resource_response(
            401, challenge(), now=0.0, fresh=Fresh(unix_time=0.0, random=b"x" * 63)
        )
    assert flow.phase is Phase.IDLE


def test_cancel_abandons_the_flow() -> None:
    flow = new_flow()
    to_redirect(flow)
    failed(flow.cancel(), AuthFailure.CANCELLED)
    assert flow.phase is Phase.FAILED
    assert url_of(flow.start(now=0.0, fresh=fresh())).endswith("/.well-known/oauth-protected-resource/mcp")


def test_cancel_without_a_flow_is_refused() -> None:
    with pytest.raises(LocalProtocolError, match="cancel"):
        new_flow().cancel()


def test_repr_names_the_server_and_phase() -> None:
    assert repr(new_flow()) == "OAuthFlow(http://localhost:3000/mcp, phase=IDLE)"


def test_flow_is_bound_to_its_server_url() -> None:
    flow = new_flow()
    assert isinstance(flow, OAuthFlow)
    assert str(flow.server_url) == MCP
    assert flow.resource == MCP


def test_malformed_scope_tokens_are_dropped() -> None:
    asked = scope_asked('Bearer scope="good b\\"ad"', prm(), as_metadata())
    assert asked == "good"
    asked = scope_asked("Bearer", prm(scopes_supported=["ok", "not ok", 'q"uote']), as_metadata())
    assert asked == "ok"


def test_code_with_control_characters_is_an_invalid_redirect() -> None:
    flow = new_flow()
    redirect = to_redirect(flow)
    failed(
        flow.receive_redirect({"code": "c\r\nx", "state": redirect.state}, now=0.0, fresh=fresh()),
        AuthFailure.INVALID_REDIRECT,
    )
