"""Grants with no browser (conformance ``auth/client-credentials-*``, ``auth/wif-jwt-bearer``,
``auth/enterprise-managed-authorization``)."""

from __future__ import annotations

import pytest
from core.test_auth_support import (
    AS,
    MCP,
    PRM_URL,
    UNIX_TIME,
    answer,
    as_metadata,
    basic_credentials,
    challenge,
    failed,
    fake_key,
    form,
    fresh,
    header,
    jwt_parts,
    new_flow,
    prm,
    refuse,
    token,
)

from mcp_sansio.auth import (
    JWT_BEARER,
    TOKEN_EXCHANGE,
    AuthFailure,
    Authorized,
    ClientCredentials,
    ClientCredentialsGrant,
    IdJagGrant,
    JwtBearerGrant,
    OAuthFlow,
    Phase,
    RequestToken,
)

CC_CLIENT = ClientCredentials(client_id="conformance-test-client", client_secret="conformance-test-secret")
IDP_TOKEN = "http://localhost:4100/token"
ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"
MACHINE_METADATA = as_metadata(
    registration_endpoint=None,
    authorization_endpoint=None,
    code_challenge_methods_supported=None,
    token_endpoint_auth_methods_supported=["client_secret_basic"],
)


def token_request(
    flow: OAuthFlow,
    www_authenticate: str = f'Bearer resource_metadata="{PRM_URL}"',
    metadata: dict[str, object] = MACHINE_METADATA,
) -> RequestToken:
    refuse(flow, headers=challenge(www_authenticate))
    answer(flow, 200, prm())
    step = answer(flow, 200, metadata)
    assert isinstance(step, RequestToken), step
    return step


def test_client_credentials_with_http_basic() -> None:
    flow = new_flow(grant=ClientCredentialsGrant(), client=CC_CLIENT)
    step = token_request(flow)
    assert step.grant_type == "client_credentials"
    assert step.request.url == AS + "/token"
    assert basic_credentials(step.request) == "conformance-test-client:conformance-test-secret"
    assert form(step.request) == {"grant_type": "client_credentials", "resource": MCP,
                                  "client_id": "conformance-test-client"}
    assert flow.phase is Phase.REQUEST_TOKEN
    done = answer(flow, 200, token("cc-token-1"))
    assert isinstance(done, Authorized)
    assert flow.authorize_request_headers(method="POST", url=flow.server_url, fresh=fresh()) == (
        ("authorization", "Bearer cc-token-1"),
    )


def test_client_credentials_ask_for_the_challenged_scope() -> None:
    flow = new_flow(grant=ClientCredentialsGrant(), client=CC_CLIENT)
    step = token_request(flow, 'Bearer scope="mcp:read"')
    assert form(step.request)["scope"] == "mcp:read"


def test_client_credentials_with_private_key_jwt() -> None:
    key = fake_key()
    flow = new_flow(
        grant=ClientCredentialsGrant(),
        client=ClientCredentials(client_id="conformance-test-client", signing_key=key),
    )
    step = token_request(
        flow,
        metadata=as_metadata(
            token_endpoint_auth_methods_supported=["private_key_jwt"],
            token_endpoint_auth_signing_alg_values_supported=["ES256"],
        ),
    )
    sent = form(step.request)
    assert header(step.request, "authorization") is None
    assert sent["client_assertion_type"] == "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
    assert sent["client_id"] == "conformance-test-client"
    head, claims, signature = jwt_parts(sent["client_assertion"])
    assert head == {"typ": "JWT", "alg": "ES256", "kid": "k1"}
    assert claims["iss"] == claims["sub"] == "conformance-test-client"
    assert claims["aud"] == AS
    assert claims["iat"] == int(UNIX_TIME)
    assert claims["exp"] == int(UNIX_TIME) + 60
    assert isinstance(claims["jti"], str)
    assert len(claims["jti"]) == 22
    signing_input = sent["client_assertion"].rsplit(".", 1)[0].encode()
    assert signature == key.sign(signing_input)


def test_each_assertion_has_its_own_id() -> None:
    key = fake_key()
    ids = set()
    for _ in range(3):
        flow = new_flow(
            grant=ClientCredentialsGrant(), client=ClientCredentials(client_id="c", signing_key=key)
        )
        ids.add(jwt_parts(form(token_request(flow).request)["client_assertion"])[1]["jti"])
    assert len(ids) == 3


def test_client_credentials_bound_to_another_server_fail() -> None:
    flow = new_flow(
        grant=ClientCredentialsGrant(),
        client=ClientCredentials(client_id="c", client_secret="s", issuer="https://other.example"),
    )
    refuse(flow)
    answer(flow, 200, prm())
    failed(answer(flow, 200, MACHINE_METADATA), AuthFailure.NO_CLIENT)


def test_refused_client_credentials_fail() -> None:
    flow = new_flow(grant=ClientCredentialsGrant(), client=CC_CLIENT)
    token_request(flow)
    failed(answer(flow, 401, {"error": "invalid_client"}), AuthFailure.TOKEN_REQUEST_FAILED)


def test_machine_token_is_renewed_by_repeating_the_grant() -> None:
    flow = new_flow(grant=ClientCredentialsGrant(), client=CC_CLIENT)
    token_request(flow)
    answer(flow, 200, token("cc-token-1"))
    assert flow.needs_refresh(3540.0)
    step = flow.refresh(now=3540.0, fresh=fresh())
    assert isinstance(step, RequestToken)
    assert form(step.request)["grant_type"] == "client_credentials"
    assert isinstance(answer(flow, 200, token("cc-token-2"), now=3541.0), Authorized)


def test_machine_token_renewal_asks_for_the_scopes_asked_before_not_every_listed_one() -> None:
    # Found end to end (tests/drivers/test_authz_e2e.py): a client-credentials token renewed
    # before it expired came back with every scope the resource lists, not those challenged.
    flow = new_flow(grant=ClientCredentialsGrant(), client=CC_CLIENT)
    refuse(flow, headers=challenge(f'Bearer resource_metadata="{PRM_URL}", scope="mcp:read"'))
    answer(flow, 200, prm(scopes_supported=["mcp:read", "mcp:admin"]))
    step = answer(flow, 200, MACHINE_METADATA)
    assert isinstance(step, RequestToken)
    assert form(step.request)["scope"] == "mcp:read"
    answer(flow, 200, token("cc-token-1"))
    step = flow.refresh(now=3540.0, fresh=fresh())
    assert isinstance(step, RequestToken)
    assert form(step.request)["scope"] == "mcp:read"


def test_renewal_does_not_count_as_an_authorization_attempt() -> None:
    flow = new_flow(grant=ClientCredentialsGrant(), client=CC_CLIENT, max_authorization_attempts=1)
    token_request(flow)
    answer(flow, 200, token("cc-token-1"))
    flow.refresh(now=3540.0, fresh=fresh())
    answer(flow, 200, token("cc-token-2"))
    assert refuse(flow, 200, (), serial=2) is None
    step = refuse(flow, 403, challenge('Bearer error="insufficient_scope", scope="more"'), serial=2)
    assert isinstance(step, RequestToken)
    assert form(step.request)["scope"] == "more"


def test_workload_identity_jwt_bearer_sends_the_assertion_and_no_secret() -> None:
    flow = new_flow(grant=JwtBearerGrant(assertion="eyJ.workload.jwt"))
    step = token_request(
        flow, metadata=as_metadata(token_endpoint_auth_methods_supported=["none"], registration_endpoint=None)
    )
    assert step.grant_type == JWT_BEARER
    assert form(step.request) == {"grant_type": JWT_BEARER, "assertion": "eyJ.workload.jwt", "resource": MCP}
    assert header(step.request, "authorization") is None


def test_workload_identity_with_a_client_id_sends_it() -> None:
    flow = new_flow(
        grant=JwtBearerGrant(assertion="a"), client=ClientCredentials(client_id="conformance-wif")
    )
    assert form(token_request(flow).request)["client_id"] == "conformance-wif"


def test_rejected_workload_assertion_fails_without_retrying() -> None:
    flow = new_flow(grant=JwtBearerGrant(assertion="a"))
    token_request(flow)
    step = failed(
        answer(flow, 400, {"error": "invalid_grant", "error_description": "JWT assertion is expired"}),
        AuthFailure.TOKEN_REQUEST_FAILED,
    )
    assert "expired" in step.message
    assert flow.phase is Phase.FAILED


# -- SEP-990: ID token -> ID-JAG at the identity provider -> JWT bearer grant


def enterprise(secret: str | None = None, client_id: str | None = "conformance-test-idp-client") -> OAuthFlow:
    return new_flow(
        grant=IdJagGrant(
            idp_token_endpoint=IDP_TOKEN,
            id_token="eyJ.id.token",
            idp_client_id=client_id,
            idp_client_secret=secret,
        ),
        client=ClientCredentials(
            client_id="conformance-test-xaa-client", client_secret="conformance-test-xaa-secret"
        ),
    )


def test_id_token_is_exchanged_for_an_id_jag_at_the_identity_provider() -> None:
    flow = enterprise()
    step = token_request(flow, 'Bearer scope="mcp:read"')
    assert step.grant_type == TOKEN_EXCHANGE
    assert step.request.url == IDP_TOKEN
    assert flow.phase is Phase.EXCHANGE_ID_TOKEN
    assert form(step.request) == {
        "grant_type": TOKEN_EXCHANGE,
        "requested_token_type": ID_JAG,
        "subject_token": "eyJ.id.token",
        "subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
        "audience": AS,
        "resource": MCP,
        "scope": "mcp:read",
        "client_id": "conformance-test-idp-client",
    }


def test_id_jag_becomes_a_jwt_bearer_grant_with_basic_client_auth() -> None:
    flow = enterprise()
    token_request(flow, 'Bearer scope="mcp:read"')
    step = answer(flow, 200, {"access_token": "eyJ.id.jag", "issued_token_type": ID_JAG, "token_type": "N_A"})
    assert isinstance(step, RequestToken)
    assert step.grant_type == JWT_BEARER
    assert step.request.url == AS + "/token"
    assert basic_credentials(step.request) == "conformance-test-xaa-client:conformance-test-xaa-secret"
    assert form(step.request) == {
        "grant_type": JWT_BEARER,
        "assertion": "eyJ.id.jag",
        "scope": "mcp:read",
        "resource": MCP,
        "client_id": "conformance-test-xaa-client",
    }
    assert isinstance(answer(flow, 200, token()), Authorized)


def test_identity_provider_secret_goes_in_http_basic() -> None:
    request = token_request(enterprise(secret="idp-secret")).request
    assert basic_credentials(request) == "conformance-test-idp-client:idp-secret"


def test_identity_provider_without_client_id_gets_no_client_identity() -> None:
    sent = form(token_request(enterprise(client_id=None)).request)
    assert "client_id" not in sent


def test_identity_provider_refusal_fails() -> None:
    flow = enterprise()
    token_request(flow)
    step = failed(answer(flow, 400, {"error": "invalid_grant"}), AuthFailure.TOKEN_REQUEST_FAILED)
    assert "identity provider" in step.message


@pytest.mark.parametrize(
    "document",
    [
        {"access_token": "x", "token_type": "N_A"},
        {"access_token": "x", "token_type": "N_A", "issued_token_type": "other"},
    ],
)
def test_identity_provider_must_issue_an_id_jag(document: dict[str, object]) -> None:
    flow = enterprise()
    token_request(flow)
    failed(answer(flow, 200, document), AuthFailure.INVALID_TOKEN_RESPONSE)


def test_identity_provider_garbage_is_invalid() -> None:
    flow = enterprise()
    token_request(flow)
    failed(answer(flow, 200, b"[]"), AuthFailure.INVALID_TOKEN_RESPONSE)
