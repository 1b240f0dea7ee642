"""``JwtVerifier`` and ``IntrospectionVerifier`` (``mcp_sansio_authz``) against a tiny
authorization server on 127.0.0.1: every refusal an attacker can try, key rotation, an
unreachable or hostile key set. The verifiers are the same object on every driver (the
drivers only choose the thread they run in), so these tests run them directly; the
driver matrix is in ``test_serve_authz.py``."""

from __future__ import annotations

import base64
import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import jwt
import pytest
from authz_helpers import Keys, TinyAuthServer, tiny_auth_server
from cryptography.hazmat.primitives import serialization

from mcp_sansio.server import Principal, RejectReason, TokenRejected, VerifierUnavailable
from mcp_sansio_authz import IntrospectionVerifier, JwksCache, JwtVerifier

AUDIENCE = "http://127.0.0.1:9/mcp"


@pytest.fixture(scope="module")
def keys() -> Keys:
    return Keys()


@pytest.fixture
def tiny(keys: Keys) -> Iterator[TinyAuthServer]:
    with tiny_auth_server(keys) as server:
        yield server


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def verifier(tiny: TinyAuthServer, clock: Clock | None = None, **options: Any) -> JwtVerifier:
    made = JwtVerifier(jwks_url=tiny.jwks_url, issuer=tiny.url, audience=AUDIENCE, **options)
    if clock is not None:
        made.jwks = JwksCache(tiny.jwks_url, clock=clock)
    return made


def reason(verdict: object) -> RejectReason | None:
    return verdict.reason if isinstance(verdict, TokenRejected) else None


def test_a_good_token_gives_its_principal(tiny: TinyAuthServer) -> None:
    token = tiny.mint(AUDIENCE, scope="mcp files:read")
    verdict = verifier(tiny).verify(token)
    assert isinstance(verdict, Principal)
    assert (verdict.subject, verdict.client_id, verdict.issuer, verdict.scopes) == (
        "alice", "test-client", tiny.url, ("mcp", "files:read"))
    assert verdict.expires_at == float(verdict.claims["exp"]) + 30  # type: ignore[arg-type]  # leeway


def test_an_ec_key_and_an_audience_list_are_accepted(tiny: TinyAuthServer) -> None:
    token = tiny.mint(["https://other.example", AUDIENCE], key=tiny.keys.ec, kid="e1", alg="ES256")
    assert isinstance(verifier(tiny).verify(token), Principal)


def _alg_none(tiny: TinyAuthServer) -> str:
    header = base64.urlsafe_b64encode(b'{"alg":"none","kid":"k1"}').rstrip(b"=").decode()
    claims = {"iss": tiny.url, "aud": AUDIENCE, "sub": "eve", "exp": int(time.time()) + 300}
    body = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    return f"{header}.{body}."


def _hs256_with_public_key(tiny: TinyAuthServer) -> str:
    pem = tiny.keys.rsa1.public_key().public_bytes(serialization.Encoding.PEM,
                                                  serialization.PublicFormat.SubjectPublicKeyInfo)
    claims = {"iss": tiny.url, "aud": AUDIENCE, "sub": "eve", "exp": int(time.time()) + 300}
    # PyJWT itself refuses a PEM as an HMAC secret, so the forgery is made by hand, as an attacker would.
    import hashlib
    import hmac

    header = base64.urlsafe_b64encode(b'{"alg":"HS256","kid":"k1","typ":"JWT"}').rstrip(b"=")
    body = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=")
    signature = hmac.new(pem, header + b"." + body, hashlib.sha256).digest()
    return (header + b"." + body + b"." + base64.urlsafe_b64encode(signature).rstrip(b"=")).decode()


def _forged_signature(tiny: TinyAuthServer) -> str:
    return tiny.mint(AUDIENCE, key=tiny.keys.rsa2, kid="k1")  # k1's name, another key


@pytest.mark.parametrize(("make", "expected"), [
    (lambda t: t.mint("https://other.example/mcp"), RejectReason.WRONG_AUDIENCE),
    (lambda t: t.mint(None), RejectReason.INVALID),  # no aud at all
    (lambda t: t.mint(AUDIENCE, lifetime=-120), RejectReason.EXPIRED),
    (lambda t: t.mint(AUDIENCE, nbf=int(time.time()) + 600), RejectReason.NOT_YET_VALID),
    (lambda t: t.mint(AUDIENCE, issuer="http://evil.example"), RejectReason.WRONG_ISSUER),
    (_forged_signature, RejectReason.BAD_SIGNATURE),
    (lambda t: t.mint(AUDIENCE, kid="unknown"), RejectReason.UNKNOWN_KEY),
    (_alg_none, RejectReason.BAD_ALGORITHM),
    (_hs256_with_public_key, RejectReason.BAD_ALGORITHM),
    # an EC signature under the RSA key's kid: the key does not fit the algorithm
    (lambda t: t.mint(AUDIENCE, key=t.keys.ec, kid="k1", alg="ES256"), RejectReason.UNKNOWN_KEY),
    (lambda t: "not-a-jwt", RejectReason.MALFORMED),
    (lambda t: t.mint(AUDIENCE, exp="tomorrow"), RejectReason.INVALID),
])
def test_every_forged_or_foreign_token_is_refused(tiny: TinyAuthServer, make: Any,
                                                  expected: RejectReason) -> None:
    token = make(tiny)
    verdict = verifier(tiny).verify(token)
    assert reason(verdict) is expected
    assert token not in repr(verdict)


def test_a_small_clock_skew_is_tolerated(tiny: TinyAuthServer) -> None:
    token = tiny.mint(AUDIENCE, lifetime=-10)  # expired 10 s ago; leeway 30 s
    assert isinstance(verifier(tiny).verify(token), Principal)
    assert reason(verifier(tiny, leeway=0).verify(token)) is RejectReason.EXPIRED


def test_only_asymmetric_algorithms_can_be_allowed(tiny: TinyAuthServer) -> None:
    for bad in (["HS256"], ["none"], []):
        with pytest.raises(ValueError, match="asymmetric"):
            JwtVerifier(jwks_url=tiny.jwks_url, issuer=tiny.url, audience=AUDIENCE, algorithms=bad)


def test_an_unknown_kid_refetches_once_then_is_refused_until_the_interval_passed(
        tiny: TinyAuthServer) -> None:
    clock = Clock()
    check = verifier(tiny, clock)
    assert isinstance(check.verify(tiny.mint(AUDIENCE)), Principal)
    assert tiny.fetches == 1
    clock.now += 31
    made_up = [tiny.mint(AUDIENCE, kid=f"nope{i}") for i in range(5)]
    assert [reason(check.verify(t)) for t in made_up] == [RejectReason.UNKNOWN_KEY] * 5
    assert tiny.fetches == 2  # one refetch for five made-up kids


def test_a_rotated_key_is_accepted_after_a_refetch(tiny: TinyAuthServer) -> None:
    clock = Clock()
    check = verifier(tiny, clock)
    assert isinstance(check.verify(tiny.mint(AUDIENCE)), Principal)
    tiny.published = [tiny.keys.jwk(tiny.keys.rsa2, "k2")]  # the AS rotated its key
    clock.now += 31
    assert isinstance(check.verify(tiny.mint(AUDIENCE, key=tiny.keys.rsa2, kid="k2")), Principal)
    assert tiny.fetches == 2


def test_the_key_set_is_refetched_after_its_ttl(tiny: TinyAuthServer) -> None:
    clock = Clock()
    check = verifier(tiny, clock)
    token = tiny.mint(AUDIENCE)
    check.verify(token)
    check.verify(token)
    clock.now += 301
    check.verify(token)
    assert tiny.fetches == 2


def test_a_key_set_that_cannot_be_fetched_is_unavailable_not_a_refusal(tiny: TinyAuthServer) -> None:
    tiny.down = True
    clock = Clock()
    check = verifier(tiny, clock)
    token = tiny.mint(AUDIENCE)
    assert isinstance(check.verify(token), VerifierUnavailable)
    assert isinstance(check.verify(token), VerifierUnavailable)
    assert tiny.fetches == 1  # no second try within the refetch interval
    tiny.down = False
    clock.now += 31
    assert isinstance(check.verify(token), Principal)


def test_known_keys_stay_in_use_when_a_refetch_fails(tiny: TinyAuthServer) -> None:
    clock = Clock()
    check = verifier(tiny, clock)
    token = tiny.mint(AUDIENCE)
    check.verify(token)
    tiny.down = True
    clock.now += 301  # the set is due for a refetch, which fails
    assert isinstance(check.verify(token), Principal)


def test_a_key_set_over_the_size_cap_is_unavailable(tiny: TinyAuthServer) -> None:
    tiny.published = [{**tiny.keys.jwk(tiny.keys.rsa1, f"k{i}")} for i in range(400)]  # ~200 KB
    check = JwtVerifier(jwks_url=tiny.jwks_url, issuer=tiny.url, audience=AUDIENCE, max_jwks_bytes=10_000)
    assert isinstance(check.verify(tiny.mint(AUDIENCE)), VerifierUnavailable)


def test_a_key_set_server_that_never_answers_times_out() -> None:
    listener = socket.create_server(("127.0.0.1", 0))  # accepts (backlog), never answers
    try:
        port = listener.getsockname()[1]
        check = JwtVerifier(jwks_url=f"http://127.0.0.1:{port}/jwks", issuer="http://127.0.0.1:1",
                            audience=AUDIENCE, timeout=0.3)
        token = jwt.encode({"aud": AUDIENCE}, "k" * 32, algorithm="HS256", headers={"kid": "k"})
        token = token.replace(token.split(".")[0], base64.urlsafe_b64encode(
            b'{"alg":"RS256","kid":"k"}').rstrip(b"=").decode())
        started = time.monotonic()
        assert isinstance(check.verify(token), VerifierUnavailable)
        assert time.monotonic() - started < 5.0
    finally:
        listener.close()


def test_verifying_from_many_threads_fetches_the_set_once(tiny: TinyAuthServer) -> None:
    check = verifier(tiny)
    token = tiny.mint(AUDIENCE)
    verdicts: list[object] = []
    threads = [threading.Thread(target=lambda: verdicts.append(check.verify(token))) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(verdicts) == 8 and all(isinstance(v, Principal) for v in verdicts)
    assert tiny.fetches == 1


# ---------------------------------------------------------------- introspection


def introspector(tiny: TinyAuthServer, **options: Any) -> IntrospectionVerifier:
    return IntrospectionVerifier(endpoint=tiny.url + "/introspect", client_id="rs", client_secret="s3cret",
                                 audience=AUDIENCE, issuer=tiny.url, **options)


def test_an_active_token_for_us_gives_its_principal(tiny: TinyAuthServer) -> None:
    exp = int(time.time()) + 300
    tiny.introspection["opaque"] = {"active": True, "sub": "alice", "client_id": "c", "scope": "mcp x",
                                    "aud": AUDIENCE, "iss": tiny.url, "exp": exp}
    verdict = introspector(tiny).verify("opaque")
    assert isinstance(verdict, Principal)
    assert (verdict.subject, verdict.client_id, verdict.scopes, verdict.expires_at) == ("alice", "c",
                                                                                       ("mcp", "x"), exp + 30)


@pytest.mark.parametrize(("answer", "expected"), [
    ({"active": False}, RejectReason.INACTIVE),
    ({"active": True, "aud": "https://other.example"}, RejectReason.WRONG_AUDIENCE),
    ({"active": True}, RejectReason.WRONG_AUDIENCE),  # no aud: it cannot be ours
    ({"active": True, "aud": AUDIENCE, "exp": 1}, RejectReason.EXPIRED),
    ({"active": True, "aud": AUDIENCE, "iss": "http://evil.example"}, RejectReason.WRONG_ISSUER),
    ({"active": "true", "aud": AUDIENCE}, RejectReason.INACTIVE),
])
def test_introspection_refusals(tiny: TinyAuthServer, answer: dict[str, Any], expected: RejectReason) -> None:
    tiny.introspection["opaque"] = answer
    assert reason(introspector(tiny).verify("opaque")) is expected


def test_an_introspection_endpoint_in_trouble_is_unavailable(tiny: TinyAuthServer) -> None:
    tiny.introspection_status = 500
    assert isinstance(introspector(tiny).verify("opaque"), VerifierUnavailable)
    dead = IntrospectionVerifier(endpoint="http://127.0.0.1:9/introspect", client_id="rs", client_secret="s",
                                 audience=AUDIENCE, timeout=0.5)
    assert isinstance(dead.verify("opaque"), VerifierUnavailable)


def test_a_token_the_server_will_not_introspect_is_refused_not_unavailable(tiny: TinyAuthServer) -> None:
    # oidc-provider answers 400 unsupported_token_type for any JWT (found end to end, in
    # tests/drivers/test_authz_e2e.py): a refusal (401), not an outage (503) to retry.
    tiny.introspection_status, tiny.introspection_error = 400, "unsupported_token_type"
    assert reason(introspector(tiny).verify("eyJhbGciOiJSUzI1NiJ9.e30.c2ln")) is RejectReason.INACTIVE
    tiny.introspection_error = "invalid_request"  # what we sent is wrong: ours to fix, and retry
    assert isinstance(introspector(tiny).verify("opaque"), VerifierUnavailable)


def test_the_client_secret_and_the_token_stay_out_of_reprs(tiny: TinyAuthServer) -> None:
    made = introspector(tiny)
    assert "s3cret" not in repr(made)
    assert "opaque" not in repr(made.verify("opaque"))
