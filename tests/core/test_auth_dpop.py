"""DPoP (RFC 9449): proofs on token and resource requests, nonces from the authorization
server and the MCP server (conformance ``auth/dpop``, ``auth/dpop-nonce``)."""

from __future__ import annotations

import base64
import hashlib

import pytest
from core.test_auth_support import (
    AS,
    PRM_URL,
    UNIX_TIME,
    answer,
    as_metadata,
    challenge,
    fake_key,
    form,
    fresh,
    header,
    jwt_parts,
    new_flow,
    prm,
    refuse,
    to_exchange,
    token,
)
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature, encode_dss_signature

from mcp_sansio.auth import (
    AuthFailure,
    Authorized,
    ClientCredentials,
    ClientCredentialsGrant,
    ExchangeCode,
    Failed,
    FetchMetadata,
    OAuthFlow,
    RefreshToken,
    RequestToken,
    SigningKey,
    b64url,
)
from mcp_sansio.urls import parse_url

DPOP_METADATA = as_metadata(dpop_signing_alg_values_supported=["ES256"])
NONCE_CHALLENGE = (
    ("WWW-Authenticate", f'DPoP error="use_dpop_nonce", resource_metadata="{PRM_URL}"'),
    ("DPoP-Nonce", "conformance-rs-dpop-nonce"),
)


def dpop_flow(**overrides: object) -> OAuthFlow:
    return new_flow(dpop_key=fake_key(), **overrides)


def proof_of(headers: tuple[tuple[str, str], ...]) -> tuple[dict[str, object], dict[str, object]]:
    value = dict(headers)["dpop"]
    head, claims, _ = jwt_parts(value)
    return head, claims


def dpop_authorized(flow: OAuthFlow) -> Authorized:
    to_exchange(flow, DPOP_METADATA)
    step = answer(flow, 200, token("eyJ.bound.token", token_type="DPoP", refresh_token="r"))
    assert isinstance(step, Authorized)
    return step


def test_token_request_carries_a_proof_for_the_token_endpoint() -> None:
    flow = dpop_flow()
    exchange = to_exchange(flow, DPOP_METADATA)
    proof = header(exchange.request, "dpop")
    assert proof is not None
    head, claims, _ = jwt_parts(proof)
    assert head == {"typ": "dpop+jwt", "jwk": fake_key().public_jwk, "alg": "ES256", "kid": "k1"}
    assert claims["htm"] == "POST"
    assert claims["htu"] == AS + "/token"
    assert claims["iat"] == int(UNIX_TIME)
    assert "nonce" not in claims
    assert "ath" not in claims


def test_proof_is_only_sent_where_the_algorithm_is_accepted() -> None:
    exchange = to_exchange(dpop_flow(), as_metadata(dpop_signing_alg_values_supported=["RS256"]))
    assert header(exchange.request, "dpop") is None


def test_bound_token_is_presented_with_the_dpop_scheme_and_a_fresh_proof() -> None:
    flow = dpop_flow()
    dpop_authorized(flow)
    url = parse_url("http://localhost:3000/mcp?session=1")
    first = flow.authorize_request_headers(method="POST", url=url, fresh=fresh())
    second = flow.authorize_request_headers(method="GET", url=url, fresh=fresh())
    assert dict(first)["authorization"] == "DPoP eyJ.bound.token"
    head, claims = proof_of(first)
    assert head["typ"] == "dpop+jwt"
    assert claims["htm"] == "POST"
    assert claims["htu"] == "http://localhost:3000/mcp"
    assert claims["ath"] == b64url(hashlib.sha256(b"eyJ.bound.token").digest())
    assert proof_of(second)[1]["htm"] == "GET"
    assert proof_of(second)[1]["jti"] != claims["jti"]


def test_server_that_issues_bearer_anyway_gets_bearer() -> None:
    flow = dpop_flow()
    to_exchange(flow, DPOP_METADATA)
    answer(flow, 200, token("plain"))
    assert flow.authorize_request_headers(method="POST", url=flow.server_url, fresh=fresh()) == (
        ("authorization", "Bearer plain"),
    )


def test_authorization_server_nonce_is_honoured_once() -> None:
    flow = dpop_flow()
    to_exchange(flow, DPOP_METADATA)
    retry = answer(
        flow, 400, {"error": "use_dpop_nonce"}, headers=(("DPoP-Nonce", "conformance-as-dpop-nonce"),)
    )
    assert isinstance(retry, ExchangeCode)
    proof = header(retry.request, "dpop")
    assert proof is not None
    assert jwt_parts(proof)[1]["nonce"] == "conformance-as-dpop-nonce"
    assert form(retry.request)["code"] == "test-auth-code"
    again = answer(flow, 400, {"error": "use_dpop_nonce"}, headers=(("DPoP-Nonce", "other"),))
    assert isinstance(again, Failed)
    assert again.reason is AuthFailure.TOKEN_REQUEST_FAILED


def test_nonce_challenge_without_a_nonce_is_a_refusal() -> None:
    flow = dpop_flow()
    to_exchange(flow, DPOP_METADATA)
    step = answer(flow, 400, {"error": "use_dpop_nonce"})
    assert isinstance(step, Failed)


def test_authorization_server_nonce_is_kept_for_later_requests() -> None:
    flow = dpop_flow()
    to_exchange(flow, DPOP_METADATA)
    answer(flow, 200, token("eyJ.t", token_type="DPoP", refresh_token="r"), headers=(("DPoP-Nonce", "n2"),))
    refresh = flow.refresh(now=3600.0, fresh=fresh())
    assert isinstance(refresh, RefreshToken)
    proof = header(refresh.request, "dpop")
    assert proof is not None
    assert jwt_parts(proof)[1]["nonce"] == "n2"


def test_refresh_is_retried_with_a_new_nonce() -> None:
    flow = dpop_flow()
    dpop_authorized(flow)
    flow.refresh(now=3600.0, fresh=fresh())
    step = answer(flow, 400, {"error": "use_dpop_nonce"}, headers=(("DPoP-Nonce", "n3"),))
    assert isinstance(step, RefreshToken)


def test_machine_grant_is_retried_with_a_new_nonce() -> None:
    flow = dpop_flow(
        grant=ClientCredentialsGrant(), client=ClientCredentials(client_id="c", client_secret="s")
    )
    refuse(flow)
    answer(flow, 200, prm())
    assert isinstance(answer(flow, 200, DPOP_METADATA), RequestToken)
    step = answer(flow, 400, {"error": "use_dpop_nonce"}, headers=(("DPoP-Nonce", "n4"),))
    assert isinstance(step, RequestToken)
    assert step.grant_type == "client_credentials"


def test_resource_server_nonce_leads_to_a_resend_with_it() -> None:
    flow = dpop_flow()
    dpop_authorized(flow)
    step = refuse(flow, 401, NONCE_CHALLENGE, serial=1)
    assert isinstance(step, Authorized)
    headers = flow.authorize_request_headers(method="POST", url=flow.server_url, fresh=fresh())
    assert proof_of(headers)[1]["nonce"] == "conformance-rs-dpop-nonce"


def test_resource_server_nonce_retries_are_bounded() -> None:
    flow = dpop_flow()
    dpop_authorized(flow)
    assert isinstance(refuse(flow, 401, NONCE_CHALLENGE, serial=1), Authorized)
    assert isinstance(refuse(flow, 401, NONCE_CHALLENGE, serial=1), Authorized)
    assert isinstance(refuse(flow, 401, NONCE_CHALLENGE, serial=1), FetchMetadata)


def test_success_resets_the_nonce_retries() -> None:
    flow = dpop_flow()
    dpop_authorized(flow)
    refuse(flow, 401, NONCE_CHALLENGE, serial=1)
    refuse(flow, 401, NONCE_CHALLENGE, serial=1)
    assert refuse(flow, 200, (("DPoP-Nonce", "fresh"),), serial=1) is None
    assert isinstance(refuse(flow, 401, NONCE_CHALLENGE, serial=1), Authorized)


def test_dpop_challenge_starts_discovery_like_a_bearer_one() -> None:
    step = refuse(dpop_flow(), 401, challenge(f'DPoP resource_metadata="{PRM_URL}"'))
    assert isinstance(step, FetchMetadata)
    assert step.request.url == PRM_URL


def test_bound_token_prefers_the_dpop_challenge() -> None:
    flow = dpop_flow()
    dpop_authorized(flow)
    both = challenge(
        f'Bearer resource_metadata="http://localhost:3000/bearer-prm", DPoP resource_metadata="{PRM_URL}"'
    )
    step = refuse(flow, 401, both, serial=1)
    assert isinstance(step, FetchMetadata)
    assert step.request.url == PRM_URL


# -- a real ES256 key


def es256_key() -> tuple[SigningKey, ec.EllipticCurvePublicKey]:
    private = ec.generate_private_key(ec.SECP256R1())
    numbers = private.public_key().public_numbers()

    def sign(data: bytes) -> bytes:
        r, s = decode_dss_signature(private.sign(data, ec.ECDSA(hashes.SHA256())))
        return r.to_bytes(32, "big") + s.to_bytes(32, "big")

    jwk = {
        "kty": "EC",
        "crv": "P-256",
        "x": b64url(numbers.x.to_bytes(32, "big")),
        "y": b64url(numbers.y.to_bytes(32, "big")),
    }
    return SigningKey(alg="ES256", sign=sign, public_jwk=jwk), private.public_key()


@pytest.mark.parametrize("kind", ["token request", "resource request"])
def test_es256_proof_verifies_with_the_public_key(kind: str) -> None:
    key, public = es256_key()
    flow = new_flow(dpop_key=key)
    exchange = to_exchange(flow, DPOP_METADATA)
    proof = header(exchange.request, "dpop")
    if kind == "resource request":
        answer(flow, 200, token("eyJ.t", token_type="DPoP"))
        proof = dict(flow.authorize_request_headers(method="POST", url=flow.server_url, fresh=fresh()))[
            "dpop"
        ]
    assert proof is not None
    signing_input, _, signature = proof.rpartition(".")
    raw = base64.urlsafe_b64decode(signature + "=" * (-len(signature) % 4))
    der = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
    public.verify(der, signing_input.encode(), ec.ECDSA(hashes.SHA256()))
    assert jwt_parts(proof)[0]["jwk"] == key.public_jwk


def test_malformed_nonce_is_ignored() -> None:
    flow = dpop_flow()
    dpop_authorized(flow)
    assert refuse(flow, 200, (("DPoP-Nonce", 'bad "nonce"'),), serial=1) is None
    headers = flow.authorize_request_headers(method="POST", url=flow.server_url, fresh=fresh())
    assert "nonce" not in proof_of(headers)[1]
