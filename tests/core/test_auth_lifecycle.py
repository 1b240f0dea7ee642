"""A token's life: renewal, refusals from the MCP server, step-up, retry limits and
authorization server migration (conformance ``auth/scope-step-up``,
``auth/scope-retry-limit``, ``auth/authorization-server-migration``)."""

from __future__ import annotations

import pytest
from core.test_auth_support import (
    AS,
    PRM_URL,
    answer,
    as_metadata,
    authorized,
    body_json,
    challenge,
    failed,
    form,
    fresh,
    new_flow,
    prm,
    query,
    refuse,
    to_exchange,
    token,
    url_of,
)
from hypothesis import given
from hypothesis import strategies as st

from mcp_sansio.auth import (
    AuthFailure,
    AuthorizationCodeGrant,
    AuthorizationPending,
    Authorized,
    AuthStep,
    ExchangeCode,
    Failed,
    FetchMetadata,
    OAuthFlow,
    Phase,
    Redirect,
    RefreshToken,
    Register,
)
from mcp_sansio.errors import LocalProtocolError

AS2 = "http://localhost:4001"
STEP_UP = challenge(f'Bearer scope="mcp:write", resource_metadata="{PRM_URL}", error="insufficient_scope"')


def with_refresh_token(now: float = 0.0, expires_in: int = 3600) -> OAuthFlow:
    flow = new_flow()
    authorized(flow, now=now, refresh_token="refresh-1", expires_in=expires_in)
    return flow


def complete(flow: OAuthFlow, redirect: object, access: str = "test-token-2", **extra: object) -> Authorized:
    assert isinstance(redirect, Redirect), redirect
    assert isinstance(
        flow.receive_redirect({"code": "c", "state": redirect.state}, now=0.0, fresh=fresh()), ExchangeCode
    )
    step = answer(flow, 200, token(access, **extra))
    assert isinstance(step, Authorized), step
    return step


# -- renewal before expiry


def test_refresh_is_due_the_margin_before_expiry() -> None:
    flow = with_refresh_token(now=10.0)
    assert flow.next_deadline() == 10.0 + 3600 - 60
    assert not flow.needs_refresh(3549.9)
    assert flow.needs_refresh(3550.0)


def test_short_token_is_refreshed_at_half_its_life() -> None:
    flow = with_refresh_token(expires_in=100)
    assert flow.next_deadline() == 50.0


def test_margin_is_configurable() -> None:
    flow = new_flow(refresh_margin=600.0)
    authorized(flow, refresh_token="r")
    assert flow.next_deadline() == 3000.0


def test_token_without_refresh_token_cannot_be_renewed_without_the_user() -> None:
    flow = new_flow()
    authorized(flow)
    assert flow.next_deadline() is None
    assert not flow.needs_refresh(10_000.0)
    with pytest.raises(LocalProtocolError, match="renewed"):
        flow.refresh(now=4000.0, fresh=fresh())


def test_token_without_lifetime_has_no_deadline() -> None:
    flow = new_flow()
    to_exchange(flow)
    answer(flow, 200, {"access_token": "t", "token_type": "Bearer", "refresh_token": "r"})
    assert flow.next_deadline() is None


def test_refresh_sends_the_refresh_token_and_resource() -> None:
    flow = with_refresh_token()
    step = flow.refresh(now=3550.0, fresh=fresh())
    assert isinstance(step, RefreshToken)
    assert step.request.url == AS + "/token"
    assert form(step.request) == {
        "grant_type": "refresh_token",
        "refresh_token": "refresh-1",
        "resource": flow.resource,
        "client_id": "test-client-id",
    }
    assert flow.phase is Phase.REFRESH
    assert flow.next_deadline() is None
    assert flow.authorize_request_headers(method="POST", url=flow.server_url, fresh=fresh()) == (
        ("authorization", "Bearer test-token-1"),
    )


def test_rotated_refresh_token_replaces_the_old_one() -> None:
    flow = with_refresh_token()
    flow.refresh(now=3550.0, fresh=fresh())
    step = answer(flow, 200, token("test-token-2", refresh_token="refresh-2"), now=3551.0)
    assert isinstance(step, Authorized)
    assert step.token.serial == 2
    assert step.token.expires_at == 3551.0 + 3600
    assert step.token.scopes == ()
    next_refresh = flow.refresh(now=7100.0, fresh=fresh())
    assert isinstance(next_refresh, RefreshToken)
    assert form(next_refresh.request)["refresh_token"] == "refresh-2"


def test_refresh_answer_without_a_refresh_token_keeps_the_old_one() -> None:
    flow = with_refresh_token()
    flow.refresh(now=3550.0, fresh=fresh())
    step = answer(flow, 200, token("test-token-2"))
    assert isinstance(step, Authorized)
    assert step.token.refresh_token == "refresh-1"


def test_refused_refresh_falls_back_to_a_new_authorization() -> None:
    flow = with_refresh_token()
    flow.refresh(now=3550.0, fresh=fresh())
    step = answer(flow, 400, {"error": "invalid_grant"})
    assert isinstance(step, Redirect)
    assert flow.token is None
    complete(flow, step)
    assert flow.next_deadline() is None


def test_undecodable_refresh_answer_falls_back_to_a_new_authorization() -> None:
    flow = with_refresh_token()
    flow.refresh(now=3550.0, fresh=fresh())
    assert isinstance(answer(flow, 200, b"nonsense"), Redirect)


def test_refresh_is_refused_during_a_flow() -> None:
    flow = with_refresh_token()
    flow.refresh(now=3550.0, fresh=fresh())
    with pytest.raises(LocalProtocolError, match="refresh"):
        flow.refresh(now=3550.0, fresh=fresh())


# -- 401 from the MCP server


def test_401_refreshes_after_checking_the_resource_metadata_again() -> None:
    flow = with_refresh_token()
    step = refuse(flow, serial=1)
    assert isinstance(step, FetchMetadata)
    assert flow.token is None
    assert flow.authorize_request_headers(method="POST", url=flow.server_url, fresh=fresh()) == ()
    step = answer(flow, 200, prm())
    assert isinstance(step, RefreshToken)
    assert form(step.request)["refresh_token"] == "refresh-1"
    assert isinstance(answer(flow, 200, token("test-token-2")), Authorized)


def test_401_without_refresh_token_reauthorizes_at_the_known_server() -> None:
    flow = new_flow()
    authorized(flow)
    refuse(flow, serial=1)
    step = answer(flow, 200, prm())
    assert isinstance(step, Redirect)
    assert query(step.authorization_url)["client_id"] == "test-client-id"


def test_401_for_a_request_sent_with_an_older_token_just_resends() -> None:
    flow = new_flow()
    authorized(flow)
    refuse(flow, serial=1)
    complete(flow, answer(flow, 200, prm()))
    step = refuse(flow, serial=1)
    assert isinstance(step, Authorized)
    assert step.token.serial == 2


def test_403_for_a_request_sent_with_an_older_token_just_resends() -> None:
    flow = new_flow()
    authorized(flow)
    complete(flow, refuse(flow, 403, STEP_UP, serial=1))
    assert isinstance(refuse(flow, 403, STEP_UP, serial=1), Authorized)


def test_refusals_during_a_flow_are_pending() -> None:
    flow = new_flow()
    refuse(flow)
    assert isinstance(refuse(flow), AuthorizationPending)
    assert isinstance(refuse(flow, 403, STEP_UP), AuthorizationPending)
    assert refuse(flow, 403, ()) is None
    assert flow.phase is Phase.DISCOVER_RESOURCE


@pytest.mark.parametrize(
    ("status", "headers"),
    [
        (200, ()),
        (404, ()),
        (500, ()),
        (403, challenge("Bearer")),
        (403, challenge('Bearer error="invalid_token"')),
    ],
)
def test_other_answers_are_no_authorization_matter(status: int, headers: tuple[tuple[str, str], ...]) -> None:
    flow = new_flow()
    authorized(flow)
    assert refuse(flow, status, headers, serial=1) is None
    assert flow.phase is Phase.AUTHORIZED


# -- 403 insufficient_scope: step-up


def test_step_up_asks_for_the_union_of_held_and_challenged_scopes() -> None:
    flow = new_flow()
    refuse(flow, headers=challenge(f'Bearer scope="mcp:basic", resource_metadata="{PRM_URL}"'))
    answer(flow, 200, prm())
    answer(flow, 200, as_metadata())
    first = answer(flow, 201, {"client_id": "c"})
    complete(flow, first, "test-token-1", scope="mcp:basic")
    step = refuse(flow, 403, STEP_UP, serial=1)
    assert isinstance(step, Redirect)
    assert query(step.authorization_url)["scope"] == "mcp:basic mcp:write"
    assert flow.token is not None
    assert flow.token.serial == 1
    assert complete(flow, step, scope="mcp:basic mcp:write").token.scopes == ("mcp:basic", "mcp:write")


def test_step_up_is_a_new_authorization_even_with_a_refresh_token() -> None:
    flow = with_refresh_token()
    assert isinstance(refuse(flow, 403, STEP_UP, serial=1), Redirect)


def test_step_up_before_any_discovery_discovers_first() -> None:
    flow = new_flow()
    step = refuse(flow, 403, STEP_UP)
    assert isinstance(step, FetchMetadata)
    answer(flow, 200, prm())
    answer(flow, 200, as_metadata())
    redirect = answer(flow, 201, {"client_id": "c"})
    assert isinstance(redirect, Redirect)
    assert query(redirect.authorization_url)["scope"] == "mcp:write"


def test_fourth_authorization_in_a_row_fails_with_insufficient_scope() -> None:
    flow = new_flow()
    refuse(flow, headers=challenge(f'Bearer scope="mcp:admin", resource_metadata="{PRM_URL}"'))
    answer(flow, 200, prm())
    answer(flow, 200, as_metadata())
    step: AuthStep | None = answer(flow, 201, {"client_id": "c"})
    admin = challenge('Bearer error="insufficient_scope", scope="mcp:admin"')
    redirects = 0
    while isinstance(step, Redirect):
        redirects += 1
        complete(flow, step, f"test-token-{redirects}", scope="mcp:admin")
        step = refuse(flow, 403, admin, serial=flow.token_serial)
    assert redirects == 3
    failed(step, AuthFailure.INSUFFICIENT_SCOPE)
    failed(refuse(flow, 403, admin, serial=flow.token_serial), AuthFailure.INSUFFICIENT_SCOPE)


def test_success_with_the_current_token_resets_the_attempts() -> None:
    flow = new_flow(max_authorization_attempts=1)
    authorized(flow)
    assert refuse(flow, 200, (), serial=1) is None
    assert isinstance(refuse(flow, 403, STEP_UP, serial=1), Redirect)


def test_success_without_the_token_does_not_reset_the_attempts() -> None:
    flow = new_flow(max_authorization_attempts=1)
    authorized(flow)
    assert refuse(flow, 200, ()) is None
    failed(refuse(flow, 403, STEP_UP, serial=1), AuthFailure.INSUFFICIENT_SCOPE)


def test_fresh_tokens_refused_with_401_fail_as_rejected() -> None:
    flow = new_flow(max_authorization_attempts=2)
    authorized(flow)
    refuse(flow, serial=1)
    complete(flow, answer(flow, 200, prm()))
    refuse(flow, serial=2)
    failed(answer(flow, 200, prm()), AuthFailure.TOKEN_REJECTED)


# -- authorization server migration (SEP-2352)


def test_changed_authorization_server_gets_a_new_registration_and_no_old_credentials() -> None:
    flow = with_refresh_token()
    refuse(flow, serial=1)
    step = answer(flow, 200, prm(servers=(AS2,)))
    assert url_of(step) == AS2 + "/.well-known/oauth-authorization-server"
    step = answer(flow, 200, as_metadata(issuer=AS2))
    assert isinstance(step, Register)
    assert step.request.url == AS2 + "/register"
    redirect = answer(flow, 201, {"client_id": "as2-client-id", "client_secret": "as2-client-secret"})
    assert isinstance(redirect, Redirect)
    assert query(redirect.authorization_url)["client_id"] == "as2-client-id"
    exchange = flow.receive_redirect({"code": "c", "state": redirect.state}, now=0.0, fresh=fresh())
    assert isinstance(exchange, ExchangeCode)
    assert exchange.request.url == AS2 + "/token"
    assert "refresh-1" not in exchange.request.body.decode()
    assert form(exchange.request)["client_id"] == "as2-client-id"
    assert complete_exchange(flow).token.issuer == AS2


def complete_exchange(flow: OAuthFlow) -> Authorized:
    step = answer(flow, 200, token("test-token-as2"))
    assert isinstance(step, Authorized)
    return step


def test_client_metadata_document_is_kept_across_servers() -> None:
    cimd = "https://app.example/client.json"
    flow = new_flow(
        grant=AuthorizationCodeGrant(redirect_uri="http://localhost:5000/cb", client_metadata_url=cimd)
    )
    refuse(flow)
    answer(flow, 200, prm())
    complete(flow, answer(flow, 200, as_metadata(client_id_metadata_document_supported=True)), "test-token-1")
    refuse(flow, serial=1)
    answer(flow, 200, prm(servers=(AS2,)))
    redirect = answer(flow, 200, as_metadata(issuer=AS2))
    assert isinstance(redirect, Redirect)
    assert query(redirect.authorization_url)["client_id"] == cimd


def test_registration_body_is_json_for_the_new_server_too() -> None:
    flow = with_refresh_token()
    refuse(flow, serial=1)
    answer(flow, 200, prm(servers=(AS2,)))
    step = answer(flow, 200, as_metadata(issuer=AS2))
    assert isinstance(step, Register)
    assert body_json(step.request)["redirect_uris"] == ["http://127.0.0.1:5000/callback"]


@given(
    st.integers(100, 599),
    st.sampled_from(
        [
            "",
            "Bearer",
            'Bearer error="insufficient_scope", scope="a"',
            'DPoP error="use_dpop_nonce"',
            "Basic realm=x",
            "garbage ,,=",
        ]
    ),
    st.none() | st.integers(0, 3),
)
def test_any_answer_is_a_step_or_none_and_never_an_exception(
    status: int, value: str, serial: int | None
) -> None:
    flow = new_flow()
    authorized(flow)
    step = flow.receive_resource_response(
        status, (("www-authenticate", value),), token_serial=serial, now=1.0, fresh=fresh()
    )
    assert step is None or isinstance(step, (Authorized, FetchMetadata, Redirect, Failed))
    if step is None:
        assert flow.phase is Phase.AUTHORIZED


def test_401_for_a_request_sent_before_the_token_existed_just_resends() -> None:
    flow = new_flow()
    authorized(flow)
    step = refuse(flow, serial=0)
    assert isinstance(step, Authorized)
    assert step.token.serial == 1
