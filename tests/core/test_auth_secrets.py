"""No secret (token, client secret, verifier, assertion, ID token) ever shows in a repr or
in a failure message."""

from __future__ import annotations

from typing import Final

import pytest
from core.test_auth_support import (
    answer,
    as_metadata,
    fake_key,
    fresh,
    new_flow,
    prm,
    refuse,
    response,
    to_redirect,
    token,
)
from rich.pretty import pretty_repr

from mcp_sansio.auth import (
    ClientCredentials,
    ClientCredentialsGrant,
    ExchangeCode,
    Failed,
    Fresh,
    HttpRequestPlan,
    IdJagGrant,
    JwtBearerGrant,
    Redirect,
    RegistrationResponse,
    Token,
    TokenResponse,
)
from mcp_sansio.auth.requests import ClientAuth, TokenRequestSpec
from mcp_sansio.urls import parse_url

SECRET: Final = "s3cr3t"


def hidden(value: object) -> bool:
    return SECRET not in repr(value) and SECRET not in str(value) and SECRET not in pretty_repr(value)


@pytest.mark.parametrize(
    "value",
    [
        Token(
            access_token=SECRET,
            token_type="Bearer",
            expires_at=None,
            scopes=(),
            refresh_token=SECRET + "r",
            issuer="https://a",
            serial=1,
        ),
        HttpRequestPlan(
            method="POST",
            url="https://a/token",
            headers=(("authorization", "Basic " + SECRET),),
            body=SECRET.encode(),
        ),
        response(200, {"access_token": SECRET}),
        Fresh(unix_time=0.0, random=SECRET.encode() * 20),
        ClientCredentials(client_id="c", client_secret=SECRET),
        JwtBearerGrant(assertion=SECRET),
        IdJagGrant(idp_token_endpoint="https://i/t", id_token=SECRET, idp_client_secret=SECRET),
        TokenResponse(access_token=SECRET, token_type="Bearer", refresh_token=SECRET),
        RegistrationResponse(client_id="c", client_secret=SECRET),
        ClientAuth(client_id="c", method="client_secret_post", secret=SECRET),
        TokenRequestSpec(
            endpoint=parse_url("https://a/t"),
            params=(("refresh_token", SECRET),),
            client=None,
            audience="https://a",
        ),
    ],
)
def test_secret_fields_are_redacted(value: object) -> None:
    assert hidden(value)
    assert "<redacted>" in repr(value) or "bytes" in repr(value)


def test_absent_secrets_show_as_none() -> None:
    assert "refresh_token=None" in repr(
        Token(
            access_token="a",
            token_type="Bearer",
            expires_at=None,
            scopes=(),
            refresh_token=None,
            issuer="i",
            serial=1,
        )
    )


def test_nothing_secret_leaks_through_a_whole_flow() -> None:
    flow = new_flow(
        client=ClientCredentials(client_id="c", client_secret=SECRET + "-client"), dpop_key=fake_key()
    )
    steps: list[object] = [refuse(flow), answer(flow, 200, prm())]
    steps.append(
        answer(
            flow,
            200,
            as_metadata(
                dpop_signing_alg_values_supported=["ES256"],
                token_endpoint_auth_methods_supported=["client_secret_post"],
            ),
        )
    )
    redirect = steps[-1]
    assert isinstance(redirect, Redirect)
    steps.append(
        flow.receive_redirect({"code": SECRET + "-code", "state": redirect.state}, now=0.0, fresh=fresh())
    )
    assert isinstance(steps[-1], ExchangeCode)
    assert SECRET in steps[-1].request.body.decode()
    steps.append(
        answer(flow, 200, token(SECRET + "-access", token_type="DPoP", refresh_token=SECRET + "-refresh"))
    )
    steps.append(flow.refresh(now=4000.0, fresh=fresh()))
    steps.append(answer(flow, 400, {"error": "invalid_grant"}))
    steps.append(flow.cancel())
    for step in [*steps, flow]:
        assert hidden(step), step
    headers = dict(flow.authorize_request_headers(method="POST", url=flow.server_url, fresh=fresh()))
    assert headers == {}


def test_failure_messages_carry_no_secret_from_the_configuration() -> None:
    flow = new_flow(grant=JwtBearerGrant(assertion=SECRET + "-assertion"))
    refuse(flow)
    answer(flow, 200, prm())
    answer(flow, 200, as_metadata())
    step = answer(flow, 400, {"error": "invalid_grant", "error_description": "bad assertion"})
    assert isinstance(step, Failed)
    assert hidden(step)


def test_machine_flow_requests_hide_their_secrets() -> None:
    flow = new_flow(
        grant=ClientCredentialsGrant(), client=ClientCredentials(client_id="c", client_secret=SECRET)
    )
    refuse(flow)
    answer(flow, 200, prm())
    step = answer(flow, 200, as_metadata())
    assert hidden(step)
    assert hidden(answer(flow, 200, token(SECRET)))
    assert hidden(flow.token)


def test_redirect_shows_no_verifier() -> None:
    flow = new_flow()
    redirect = to_redirect(flow)
    sent = flow.receive_redirect({"code": "c", "state": redirect.state}, now=0.0, fresh=fresh())
    assert isinstance(sent, ExchangeCode)
    verifier = dict(pair.split("=") for pair in sent.request.body.decode().split("&"))["code_verifier"]
    assert verifier not in repr(redirect)
    assert verifier not in repr(sent)
