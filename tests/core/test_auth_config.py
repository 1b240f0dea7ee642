"""What an OAuthConfig and its parts refuse at construction."""

from __future__ import annotations

import pytest
from core.test_auth_support import REDIRECT_URI, fake_key

from mcp_sansio.auth import (
    AuthorizationCodeGrant,
    ClientCredentials,
    ClientCredentialsGrant,
    IdJagGrant,
    OAuthConfig,
)
from mcp_sansio.errors import LocalProtocolError


@pytest.mark.parametrize("uri", ["http://app.example.com/cb", "ftp://127.0.0.1/cb"])
def test_redirect_uri_must_be_https_or_loopback(uri: str) -> None:
    with pytest.raises(LocalProtocolError):
        AuthorizationCodeGrant(redirect_uri=uri)


@pytest.mark.parametrize("uri", ["http://localhost:1/cb", "http://[::1]:1/cb", "https://app.example/cb"])
def test_secure_redirect_uris_are_accepted(uri: str) -> None:
    assert AuthorizationCodeGrant(redirect_uri=uri).redirect_uri == uri


@pytest.mark.parametrize(
    "url", ["http://app.example/client.json", "https://app.example", "https://app.example/"]
)
def test_client_metadata_url_must_be_https_with_a_path(url: str) -> None:
    with pytest.raises(LocalProtocolError, match="client_metadata_url"):
        AuthorizationCodeGrant(redirect_uri=REDIRECT_URI, client_metadata_url=url)


def test_identity_provider_endpoint_must_be_secure() -> None:
    with pytest.raises(LocalProtocolError, match="idp_token_endpoint"):
        IdJagGrant(idp_token_endpoint="http://idp.example/token", id_token="t")


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"token_endpoint_auth_method": "tls_client_auth"}, "unsupported"),
        ({"token_endpoint_auth_method": "client_secret_post"}, "needs a client_secret"),
        ({"token_endpoint_auth_method": "private_key_jwt"}, "needs a signing_key"),
    ],
)
def test_client_credentials_must_fit_their_method(fields: dict[str, str], message: str) -> None:
    with pytest.raises(LocalProtocolError, match=message):
        ClientCredentials(client_id="c", **fields)  # type: ignore[arg-type]  # str values only


def test_client_with_a_key_may_force_private_key_jwt() -> None:
    assert (
        ClientCredentials(
            client_id="c", signing_key=fake_key(), token_endpoint_auth_method="private_key_jwt"
        ).signing_key
        is not None
    )


@pytest.mark.parametrize(
    "grant", [ClientCredentialsGrant(), IdJagGrant(idp_token_endpoint="https://i/t", id_token="t")]
)
def test_grants_without_a_user_need_client_credentials(grant: ClientCredentialsGrant | IdJagGrant) -> None:
    with pytest.raises(LocalProtocolError, match="needs client credentials"):
        OAuthConfig(grant=grant)


@pytest.mark.parametrize(
    "fields",
    [
        {"refresh_margin": -1.0},
        {"assertion_lifetime": 0.0},
        {"max_authorization_attempts": 0},
        {"max_response_bytes": 0},
    ],
)
def test_limits_must_be_sensible(fields: dict[str, float]) -> None:
    with pytest.raises(LocalProtocolError):
        OAuthConfig(grant=AuthorizationCodeGrant(redirect_uri=REDIRECT_URI), **fields)  # type: ignore[arg-type]  # deliberately wrong values
