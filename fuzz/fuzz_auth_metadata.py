"""Atheris target for the OAuth planner's inputs from the network.

Each input is read as a ``WWW-Authenticate`` value (whole and every prefix of its start)
and decoded as every metadata and token document (only :class:`RemoteProtocolError` may
come out). Then it is played as a flow: split at ``\n--\n``, the first part is the 401's
challenge and the others, in turn, the bodies of every answer the flow gets (metadata,
registration, token; statuses cycle when there is a single part), and the redirect (a part
starting with ``?`` is the query of a redirect that carries the right ``state``). The flow
must turn all of it into steps; any exception is a bug.

Run: ``python fuzz/fuzz_auth_metadata.py fuzz/corpus/auth_metadata`` (needs atheris).
"""

from __future__ import annotations

import contextlib
import hashlib
import sys
from typing import Final

from mcp_sansio.auth import (
    AuthorizationCodeGrant,
    AuthorizationServerMetadata,
    Fresh,
    HttpResponse,
    HttpStep,
    OAuthConfig,
    OAuthFlow,
    ProtectedResourceMetadata,
    Redirect,
    RegistrationResponse,
    SigningKey,
    TokenResponse,
)
from mcp_sansio.auth.metadata import OAuthErrorBody, decode
from mcp_sansio.errors import RemoteProtocolError
from mcp_sansio.urls import parse_url
from mcp_sansio.www_authenticate import parse_www_authenticate

DOCUMENTS: Final = (
    ProtectedResourceMetadata,
    AuthorizationServerMetadata,
    TokenResponse,
    RegistrationResponse,
    OAuthErrorBody,
)
STATUSES: Final = (200, 201, 404, 400, 503)
SEPARATOR: Final = b"\n--\n"
MAX_STEPS: Final = 12
PREFIXES: Final = 256
KEY: Final = SigningKey(
    alg="ES256", sign=lambda data: hashlib.sha256(data).digest(), public_jwk={"kty": "EC"}
)
CONFIG: Final = OAuthConfig(
    grant=AuthorizationCodeGrant(redirect_uri="http://127.0.0.1:5000/cb"), dpop_key=KEY
)
SERVER: Final = parse_url("http://localhost:3000/mcp")


def fresh(n: int) -> Fresh:
    return Fresh(unix_time=1.0, random=hashlib.sha512(n.to_bytes(4, "big")).digest())


def play(data: bytes) -> None:
    """Run a flow whose challenge and answers are the ``\n--\n``-separated parts of ``data``."""
    parts = data.split(SEPARATOR)
    challenge = parts[0].decode("utf-8", "surrogateescape")
    bodies = parts[1:] or parts
    flow = OAuthFlow(SERVER, CONFIG)
    headers = (("WWW-Authenticate", challenge), ("DPoP-Nonce", challenge[:40]))
    step = flow.receive_resource_response(401, headers, now=0.0, fresh=fresh(0))
    for n in range(1, MAX_STEPS):
        body = bodies[(n - 1) % len(bodies)]
        if isinstance(step, HttpStep):
            status = 200 if len(bodies) > 1 else STATUSES[n % len(STATUSES)]
            step = flow.receive(
                HttpResponse(status=status, headers=headers, body=body), now=float(n), fresh=fresh(n)
            )
        elif isinstance(step, Redirect):
            text = body.decode("utf-8", "surrogateescape")
            # "?..." is the query of a redirect carrying our state; anything else the Location.
            location = f"{step.redirect_uri}?state={step.state}&{text[1:]}" if text[:1] == "?" else text
            step = flow.receive_redirect_location(location, now=float(n), fresh=fresh(n))
        else:
            break
    flow.authorize_request_headers(method="POST", url=SERVER, fresh=fresh(MAX_STEPS))
    if not flow.in_progress:
        flow.receive_resource_response(
            403, headers, token_serial=flow.token_serial, now=99.0, fresh=fresh(99)
        )


def test_one_input(data: bytes) -> None:
    """Parse, decode and play ``data``; only documented errors may escape the decoders."""
    text = data.decode("utf-8", "surrogateescape")
    parse_www_authenticate(text)
    for end in range(min(len(text), PREFIXES)):
        parse_www_authenticate(text[:end])
    for kind in DOCUMENTS:
        with contextlib.suppress(RemoteProtocolError):
            decode(kind, data, max_bytes=4096)
    play(data)


if __name__ == "__main__":
    import atheris

    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()
