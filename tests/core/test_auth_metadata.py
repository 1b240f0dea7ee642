"""Typed decoding of metadata and token documents, and the discovery URL orders."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_sansio.auth import (
    AuthorizationServerMetadata,
    ProtectedResourceMetadata,
    RegistrationResponse,
    TokenResponse,
)
from mcp_sansio.auth.metadata import (
    OAuthErrorBody,
    authorization_server_metadata_urls,
    decode,
    describe_refusal,
    protected_resource_metadata_urls,
    quote_text,
    resource_covers,
)
from mcp_sansio.errors import RemoteProtocolError
from mcp_sansio.urls import parse_url


def test_protected_resource_metadata_keeps_what_the_flow_uses() -> None:
    document = decode(
        ProtectedResourceMetadata,
        b'{"resource":"https://r/mcp","authorization_servers":["https://a"],'
        b'"scopes_supported":["x"],"bearer_methods_supported":["header"]}',
        max_bytes=1000,
    )
    assert document == ProtectedResourceMetadata(
        resource="https://r/mcp", authorization_servers=("https://a",), scopes_supported=("x",)
    )


def test_null_booleans_in_server_metadata_read_as_absent() -> None:
    document = decode(
        AuthorizationServerMetadata,
        b'{"issuer":"https://a","authorization_response_iss_parameter_supported":null}',
        max_bytes=1000,
    )
    assert document.authorization_response_iss_parameter_supported is None


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"[]",
        b'{"issuer":1}',
        b'{"issuer":"x","scopes_supported":"a b"}',
        b'{"issuer":"x","client_id_metadata_document_supported":"true"}',
    ],
)
def test_malformed_server_metadata_is_a_remote_error(body: bytes) -> None:
    with pytest.raises(RemoteProtocolError, match="AuthorizationServerMetadata"):
        decode(AuthorizationServerMetadata, body, max_bytes=1000)


def test_oversized_documents_are_refused_before_decoding() -> None:
    with pytest.raises(RemoteProtocolError, match="larger than 10 bytes"):
        decode(TokenResponse, b'{"access_token":"x","token_type":"Bearer"}', max_bytes=10)


def test_decode_errors_never_quote_the_values() -> None:
    with pytest.raises(RemoteProtocolError) as caught:
        decode(TokenResponse, b'{"access_token":"sekrit-value","token_type":7}', max_bytes=1000)
    assert "sekrit" not in str(caught.value)


@pytest.mark.parametrize(
    ("server", "expected"),
    [
        (
            "https://e.com/public/mcp",
            [
                "https://e.com/.well-known/oauth-protected-resource/public/mcp",
                "https://e.com/.well-known/oauth-protected-resource",
            ],
        ),
        (
            "https://e.com/mcp/",
            [
                "https://e.com/.well-known/oauth-protected-resource/mcp",
                "https://e.com/.well-known/oauth-protected-resource",
            ],
        ),
        (
            "https://e.com/mcp?t=1",
            [
                "https://e.com/.well-known/oauth-protected-resource/mcp?t=1",
                "https://e.com/.well-known/oauth-protected-resource",
            ],
        ),
        (
            "https://e.com/?t=1",
            [
                "https://e.com/.well-known/oauth-protected-resource?t=1",
                "https://e.com/.well-known/oauth-protected-resource",
            ],
        ),
        ("https://e.com", ["https://e.com/.well-known/oauth-protected-resource"]),
    ],
)
def test_protected_resource_well_knowns(server: str, expected: list[str]) -> None:
    assert [str(url) for url in protected_resource_metadata_urls(parse_url(server))] == expected


@pytest.mark.parametrize(
    ("issuer", "expected"),
    [
        (
            "https://a.com",
            [
                "https://a.com/.well-known/oauth-authorization-server",
                "https://a.com/.well-known/openid-configuration",
            ],
        ),
        (
            "https://a.com/tenant1/",
            [
                "https://a.com/.well-known/oauth-authorization-server/tenant1",
                "https://a.com/.well-known/openid-configuration/tenant1",
                "https://a.com/tenant1/.well-known/openid-configuration",
            ],
        ),
    ],
)
def test_authorization_server_well_knowns(issuer: str, expected: list[str]) -> None:
    assert [str(url) for url in authorization_server_metadata_urls(parse_url(issuer))] == expected


@pytest.mark.parametrize(
    ("resource", "server", "covers"),
    [
        ("https://e.com/mcp", "https://e.com/mcp", True),
        ("https://e.com/mcp/", "https://e.com/mcp", True),
        ("https://e.com", "https://e.com/api/mcp", True),
        ("https://e.com/api", "https://e.com/api/mcp", True),
        ("https://e.com/api", "https://e.com/api2/mcp", False),
        ("https://e.com/mcp/sub", "https://e.com/mcp", False),
        ("https://e.com:8443/mcp", "https://e.com/mcp", False),
        ("http://e.com/mcp", "https://e.com/mcp", False),
    ],
)
def test_resource_covers_the_endpoint_or_a_parent(resource: str, server: str, covers: bool) -> None:
    assert resource_covers(parse_url(resource), parse_url(server)) is covers


def test_quoted_text_is_printable_and_short() -> None:
    assert quote_text("a\r\nb") == "'a??b'"
    assert quote_text("x" * 300) == repr("x" * 200 + "...")


def test_refusal_description_names_status_error_and_description() -> None:
    assert describe_refusal(400, b'{"error":"invalid_client","error_description":"bad"}', max_bytes=100) == (
        "HTTP 400: 'invalid_client' ('bad')"
    )
    assert describe_refusal(502, b"<html>", max_bytes=100) == "HTTP 502, no OAuth error given"


_TEXT = st.text(max_size=20)
_LISTS = st.none() | st.lists(_TEXT, max_size=3).map(tuple)


@given(
    st.one_of(
        st.builds(
            ProtectedResourceMetadata,
            resource=_TEXT,
            authorization_servers=st.lists(_TEXT, max_size=3).map(tuple),
            scopes_supported=_LISTS,
        ),
        st.builds(
            AuthorizationServerMetadata,
            issuer=_TEXT,
            token_endpoint=st.none() | _TEXT,
            scopes_supported=_LISTS,
            authorization_response_iss_parameter_supported=st.none() | st.booleans(),
            dpop_signing_alg_values_supported=_LISTS,
        ),
        st.builds(
            TokenResponse,
            access_token=_TEXT,
            token_type=_TEXT,
            expires_in=st.none()
            | st.integers(0, 10**6).map(float)
            | st.from_regex(r"[0-9]{1,5}", fullmatch=True),
            refresh_token=st.none() | _TEXT,
            scope=st.none() | _TEXT,
        ),
        st.builds(
            RegistrationResponse,
            client_id=_TEXT,
            client_secret=st.none() | _TEXT,
            token_endpoint_auth_method=st.none() | _TEXT,
        ),
        st.builds(OAuthErrorBody, error=_TEXT, error_description=st.none() | _TEXT),
    )
)
def test_documents_round_trip_through_json(document: object) -> None:
    assert decode(type(document), msgspec.json.encode(document), max_bytes=10_000) == document
