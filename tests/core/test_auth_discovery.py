"""Discovery: RFC 9728 protected resource metadata, then RFC 8414 / OIDC metadata, and the
2025-03-26 fallbacks (conformance ``auth/metadata-*``, ``auth/2025-03-26-*``,
``auth/resource-mismatch``, ``auth/metadata-issuer-mismatch``)."""

from __future__ import annotations

from typing import Final

import pytest
from core.test_auth_support import (
    AS,
    AS_METADATA_URL,
    MCP,
    PRM_URL,
    REDIRECT_URI,
    ROOT_PRM_URL,
    answer,
    as_metadata,
    body_json,
    challenge,
    config,
    failed,
    fresh,
    new_flow,
    prm,
    query,
    refuse,
    to_exchange,
    to_metadata,
    url_of,
)

from mcp_sansio.auth import (
    AuthFailure,
    FetchMetadata,
    MetadataKind,
    OAuthFlow,
    Phase,
    Redirect,
    Register,
)
from mcp_sansio.urls import parse_url

TENANT: Final = AS + "/tenant1"


def test_resource_metadata_url_from_the_header_is_fetched_first() -> None:
    flow = new_flow()
    custom = "http://localhost:3000/custom/metadata/location.json"
    step = refuse(flow, headers=challenge(f'Bearer resource_metadata="{custom}"'))
    assert isinstance(step, FetchMetadata)
    assert step.kind is MetadataKind.PROTECTED_RESOURCE
    assert (step.request.method, step.request.url) == ("GET", custom)
    assert flow.phase is Phase.DISCOVER_RESOURCE


def test_header_url_success_never_touches_the_root_well_known() -> None:
    flow = new_flow()
    assert url_of(refuse(flow)) == PRM_URL
    assert url_of(answer(flow, 200, prm())) == AS_METADATA_URL


def test_path_based_well_known_is_probed_without_a_header_url() -> None:
    assert url_of(refuse(new_flow(), headers=challenge("Bearer"))) == PRM_URL


def test_root_well_known_follows_a_missing_path_based_one() -> None:
    flow = new_flow()
    refuse(flow, headers=())
    assert url_of(answer(flow, 404)) == ROOT_PRM_URL
    assert url_of(answer(flow, 200, prm(resource="http://localhost:3000"))) == AS_METADATA_URL


def test_failing_header_url_falls_back_to_the_well_knowns() -> None:
    flow = new_flow()
    refuse(flow, headers=challenge('Bearer resource_metadata="http://localhost:3000/elsewhere"'))
    assert url_of(answer(flow, 404)) == PRM_URL
    assert url_of(answer(flow, 404)) == ROOT_PRM_URL


def test_server_at_the_root_has_only_the_root_well_known() -> None:
    flow = OAuthFlow(parse_url("http://localhost:3000"), config())
    assert url_of(refuse(flow, headers=())) == ROOT_PRM_URL


def test_insecure_header_url_is_skipped() -> None:
    flow = new_flow()
    assert (
        url_of(refuse(flow, headers=challenge('Bearer resource_metadata="http://evil.example/prm"')))
        == PRM_URL
    )


def test_malformed_header_url_is_skipped() -> None:
    assert url_of(refuse(new_flow(), headers=challenge('Bearer resource_metadata="::"'))) == PRM_URL


def test_resource_mismatch_fails_before_any_authorization_request() -> None:
    flow = new_flow()
    refuse(flow)
    step = answer(flow, 200, prm(resource="https://evil.example.com/mcp"))
    assert "evil.example.com" in failed(step, AuthFailure.RESOURCE_MISMATCH).message
    assert flow.phase is Phase.FAILED


def test_sibling_path_resource_does_not_cover_the_endpoint() -> None:
    flow = new_flow()
    refuse(flow)
    failed(answer(flow, 200, prm(resource="http://localhost:3000/mc")), AuthFailure.RESOURCE_MISMATCH)


def test_malformed_resource_is_invalid_metadata() -> None:
    flow = new_flow()
    refuse(flow)
    failed(answer(flow, 200, prm(resource="not a url")), AuthFailure.INVALID_METADATA)


def test_pathless_resource_is_sent_exactly_as_published() -> None:
    flow = new_flow()
    refuse(flow, headers=())
    answer(flow, 404)
    answer(flow, 200, prm(resource="http://localhost:3000"))
    redirect = to_redirect_after_metadata(flow)
    assert flow.resource == "http://localhost:3000"
    assert query(redirect.authorization_url)["resource"] == "http://localhost:3000"


def to_redirect_after_metadata(flow: OAuthFlow) -> Redirect:
    step = answer(flow, 200, as_metadata())
    assert isinstance(step, Register)
    step = answer(flow, 201, {"client_id": "c"})
    assert isinstance(step, Redirect)
    return step


def test_metadata_without_authorization_servers_is_invalid() -> None:
    flow = new_flow()
    refuse(flow)
    failed(answer(flow, 200, prm(servers=())), AuthFailure.INVALID_METADATA)


def test_undecodable_resource_metadata_is_skipped_then_reported() -> None:
    flow = new_flow()
    refuse(flow)
    assert url_of(answer(flow, 200, b"<html>not json</html>")) == ROOT_PRM_URL
    failed(answer(flow, 404), AuthFailure.INVALID_METADATA)


def test_server_error_on_resource_metadata_does_not_fall_back_to_2025_03_26() -> None:
    flow = new_flow()
    refuse(flow)
    answer(flow, 503)
    failed(answer(flow, 404), AuthFailure.HTTP_ERROR)


def test_too_many_requests_counts_as_a_server_error() -> None:
    flow = new_flow()
    refuse(flow)
    answer(flow, 429)
    failed(answer(flow, 404), AuthFailure.HTTP_ERROR)


def test_oauth_metadata_missing_falls_back_to_openid_configuration() -> None:
    flow = new_flow()
    refuse(flow)
    answer(flow, 200, prm())
    assert url_of(answer(flow, 404)) == AS + "/.well-known/openid-configuration"
    assert isinstance(answer(flow, 200, as_metadata()), Register)


def test_issuer_with_a_path_tries_insertion_then_oidc_insertion_then_appending() -> None:
    flow = new_flow()
    refuse(flow)
    assert (
        url_of(answer(flow, 200, prm(servers=(TENANT,))))
        == AS + "/.well-known/oauth-authorization-server/tenant1"
    )
    assert url_of(answer(flow, 404)) == AS + "/.well-known/openid-configuration/tenant1"
    assert url_of(answer(flow, 404)) == AS + "/tenant1/.well-known/openid-configuration"
    step = answer(flow, 200, as_metadata(issuer=TENANT))
    assert isinstance(step, Register)
    assert step.request.url == TENANT + "/register"


def test_no_authorization_server_metadata_anywhere_fails() -> None:
    flow = new_flow()
    refuse(flow)
    answer(flow, 200, prm())
    answer(flow, 404)
    failed(answer(flow, 404), AuthFailure.METADATA_NOT_FOUND)


def test_undecodable_server_metadata_is_skipped_then_reported() -> None:
    flow = new_flow()
    refuse(flow)
    answer(flow, 200, prm())
    answer(flow, 200, b"{")
    failed(answer(flow, 404), AuthFailure.INVALID_METADATA)


def test_server_error_on_server_metadata_is_reported() -> None:
    flow = new_flow()
    refuse(flow)
    answer(flow, 200, prm())
    answer(flow, 500)
    failed(answer(flow, 404), AuthFailure.HTTP_ERROR)


def test_metadata_naming_another_issuer_is_refused() -> None:
    step = to_metadata(new_flow(), as_metadata(issuer="https://attacker.example.com"))
    assert "attacker.example.com" in failed(step, AuthFailure.ISSUER_MISMATCH).message


def test_issuer_is_compared_as_a_string() -> None:
    failed(to_metadata(new_flow(), as_metadata(issuer=AS + "/")), AuthFailure.ISSUER_MISMATCH)


def test_metadata_from_the_origin_is_no_excuse_for_another_issuer_with_prm() -> None:
    flow = new_flow()
    refuse(flow)
    answer(flow, 200, prm(servers=("http://localhost:3000",)))
    failed(answer(flow, 200, as_metadata(issuer="http://localhost:3000/oauth")), AuthFailure.ISSUER_MISMATCH)


@pytest.mark.parametrize("endpoint", ["authorization_endpoint", "token_endpoint", "registration_endpoint"])
def test_plain_http_endpoint_off_this_machine_is_refused(endpoint: str) -> None:
    step = to_metadata(new_flow(), as_metadata(**{endpoint: "http://as.example.com/x"}))
    failed(step, AuthFailure.INSECURE_ENDPOINT)


def test_malformed_endpoint_is_invalid_metadata() -> None:
    failed(to_metadata(new_flow(), as_metadata(token_endpoint="/token")), AuthFailure.INVALID_METADATA)


def test_metadata_without_token_endpoint_is_invalid() -> None:
    failed(to_metadata(new_flow(), as_metadata(token_endpoint=None)), AuthFailure.INVALID_METADATA)


@pytest.mark.parametrize(
    ("server", "reason"),
    [
        ("http://as.example.com", AuthFailure.INSECURE_ENDPOINT),
        ("https://as.example.com/?tenant=1", AuthFailure.INVALID_METADATA),
        ("as.example.com", AuthFailure.INVALID_METADATA),
    ],
)
def test_unusable_authorization_server_identifier_is_refused(server: str, reason: AuthFailure) -> None:
    flow = new_flow()
    refuse(flow)
    failed(answer(flow, 200, prm(servers=(server,))), reason)


def test_metadata_larger_than_the_limit_is_undecodable() -> None:
    flow = new_flow(max_response_bytes=64)
    refuse(flow)
    answer(flow, 200, prm(padding="x" * 64))
    failed(answer(flow, 404), AuthFailure.INVALID_METADATA)


def test_plain_http_mcp_server_off_this_machine_is_refused() -> None:
    flow = OAuthFlow(parse_url("http://mcp.example.com/mcp"), config())
    failed(refuse(flow), AuthFailure.INSECURE_ENDPOINT)


# -- 2025-03-26: no protected resource metadata, the MCP server is its own authorization server


def legacy_flow() -> OAuthFlow:
    flow = new_flow()
    refuse(flow, headers=challenge("Bearer"))
    answer(flow, 404)
    return flow


def test_without_resource_metadata_the_mcp_origin_root_metadata_is_fetched() -> None:
    flow = legacy_flow()
    step = answer(flow, 404)
    assert isinstance(step, FetchMetadata)
    assert step.kind is MetadataKind.AUTHORIZATION_SERVER
    assert step.request.url == "http://localhost:3000/.well-known/oauth-authorization-server"


def test_legacy_metadata_naming_an_issuer_on_the_same_origin_is_tolerated() -> None:
    flow = legacy_flow()
    answer(flow, 404)
    origin = "http://localhost:3000"
    step = answer(
        flow,
        200,
        as_metadata(
            issuer=origin + "/oauth",
            registration_endpoint=origin + "/oauth/register",
            authorization_endpoint=origin + "/oauth/authorize",
            token_endpoint=origin + "/oauth/token",
        ),
    )
    assert isinstance(step, Register)
    assert step.request.url == origin + "/oauth/register"
    assert flow.resource == MCP


def test_legacy_tolerance_stops_at_the_origin() -> None:
    flow = legacy_flow()
    answer(flow, 404)
    failed(answer(flow, 200, as_metadata(issuer=AS)), AuthFailure.ISSUER_MISMATCH)


def test_legacy_tolerance_refuses_a_malformed_issuer() -> None:
    flow = legacy_flow()
    answer(flow, 404)
    failed(answer(flow, 200, as_metadata(issuer="nonsense")), AuthFailure.ISSUER_MISMATCH)


def test_legacy_server_without_metadata_uses_the_default_endpoints() -> None:
    flow = legacy_flow()
    answer(flow, 404)
    step = answer(flow, 404)
    assert isinstance(step, Register)
    assert step.request.url == "http://localhost:3000/register"
    assert body_json(step.request)["token_endpoint_auth_method"] == "client_secret_basic"
    redirect = answer(flow, 201, {"client_id": "test-client-id", "client_secret": "s"})
    assert isinstance(redirect, Redirect)
    assert redirect.authorization_url.startswith("http://localhost:3000/authorize?")
    assert query(redirect.authorization_url)["resource"] == MCP
    exchange = flow.receive_redirect({"code": "c", "state": redirect.state}, now=0.0, fresh=fresh())
    assert url_of(exchange) == "http://localhost:3000/token"


def test_legacy_default_issuer_is_the_origin_for_iss_checks() -> None:
    flow = legacy_flow()
    answer(flow, 404)
    answer(flow, 404)
    redirect = answer(flow, 201, {"client_id": "c"})
    assert isinstance(redirect, Redirect)
    step = flow.receive_redirect({"code": "c", "state": redirect.state, "iss": AS}, now=0.0, fresh=fresh())
    failed(step, AuthFailure.ISS_MISMATCH)


def test_legacy_server_error_is_not_taken_for_missing_metadata() -> None:
    flow = legacy_flow()
    answer(flow, 404)
    failed(answer(flow, 502), AuthFailure.HTTP_ERROR)


def test_same_server_found_again_skips_its_metadata() -> None:
    flow = new_flow()
    to_exchange(flow)
    answer(flow, 200, {"access_token": "t", "token_type": "Bearer"})
    refuse(flow, serial=flow.token_serial)
    step = answer(flow, 200, prm())
    assert isinstance(step, Redirect)
    assert query(step.authorization_url)["redirect_uri"] == REDIRECT_URI
