"""JWS building, PKCE and the host-supplied entropy (RFC 7515, RFC 7636, RFC 7523, RFC 9449)."""

from __future__ import annotations

import pytest
from core.test_auth_support import fake_key, jwt_parts

from mcp_sansio.auth import Fresh, SigningKey, b64url, client_assertion, dpop_proof, pkce_challenge, sign_jwt
from mcp_sansio.auth.jose import Entropy
from mcp_sansio.errors import LocalProtocolError
from mcp_sansio.urls import parse_url


def test_base64url_has_no_padding() -> None:
    assert b64url(b"\xfb\xff") == "-_8"


def test_pkce_challenge_matches_rfc7636_appendix_b() -> None:
    assert (
        pkce_challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk")
        == "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
    )


def test_jws_is_signed_over_header_dot_claims() -> None:
    seen: list[bytes] = []

    def sign(data: bytes) -> bytes:
        seen.append(data)
        return b"sig"

    key = SigningKey(alg="EdDSA", sign=sign, public_jwk={"kty": "OKP"})
    compact = sign_jwt(key, {"typ": "JWT"}, {"sub": "x"})
    head, claims, signature = jwt_parts(compact)
    assert (head, claims, signature) == ({"typ": "JWT", "alg": "EdDSA"}, {"sub": "x"}, b"sig")
    assert seen == [compact.rsplit(".", 1)[0].encode()]


def test_client_assertion_lifetime_is_at_least_a_second() -> None:
    claims = jwt_parts(
        client_assertion(
            fake_key(), client_id="c", audience="https://as", unix_time=100.7, lifetime=0.2, jti="j"
        )
    )[1]
    assert claims == {"iss": "c", "sub": "c", "aud": "https://as", "iat": 100, "exp": 101, "jti": "j"}


def test_dpop_proof_drops_the_query_and_binds_nonce_and_token() -> None:
    proof = dpop_proof(
        fake_key(),
        method="POST",
        url=parse_url("https://RS.example:443/mcp?x=1"),
        unix_time=5.0,
        jti="j",
        nonce="n",
        access_token="Kz~8mXK1EalYznwH-LC-1fBAo.4Ljp~zsPE_NeO.gxU",
    )
    claims = jwt_parts(proof)[1]
    assert claims["htu"] == "https://rs.example/mcp"
    assert claims["nonce"] == "n"
    assert claims["ath"] == "fUHyO2r2Z3DZ53EsNrWBb0xWXoaNy59IiKCAqksmQEo"  # RFC 9449 section 7.1


@pytest.mark.parametrize("alg", ["none", "HS256"])
def test_symmetric_or_no_algorithm_is_refused(alg: str) -> None:
    with pytest.raises(LocalProtocolError, match="asymmetric"):
        SigningKey(alg=alg, sign=lambda data: data, public_jwk={})


def test_private_jwk_is_refused() -> None:
    with pytest.raises(LocalProtocolError, match="private"):
        SigningKey(alg="ES256", sign=lambda data: data, public_jwk={"kty": "EC", "d": "secret"})


def test_entropy_hands_out_each_byte_once() -> None:
    entropy = Entropy(Fresh(unix_time=0.0, random=bytes(range(64))))
    assert entropy.token(3) == b64url(bytes([0, 1, 2]))
    assert entropy.token(3) == b64url(bytes([3, 4, 5]))
    entropy.token(58)
    with pytest.raises(LocalProtocolError, match="exhausted"):
        entropy.token(1)


def test_entropy_needs_64_bytes() -> None:
    with pytest.raises(LocalProtocolError, match="64"):
        Entropy(Fresh(unix_time=0.0, random=b"\0" * 63))
