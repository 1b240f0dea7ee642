"""WWW-Authenticate parsing (RFC 9110 section 11.6.1, RFC 6750 section 3, RFC 9449 section 7.1)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mcp_sansio.www_authenticate import Challenge, parse_www_authenticate


def test_bearer_challenge_with_mcp_parameters() -> None:
    value = (
        'Bearer realm="mcp", error="insufficient_scope", scope="files:read files:write", '
        'resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource"'
    )
    assert parse_www_authenticate(value) == [
        Challenge(
            scheme="bearer",
            params={
                "realm": "mcp",
                "error": "insufficient_scope",
                "scope": "files:read files:write",
                "resource_metadata": "https://mcp.example.com/.well-known/oauth-protected-resource",
            },
        )
    ]


def test_scheme_and_parameter_names_are_lower_cased_values_are_not() -> None:
    assert parse_www_authenticate('BEARER Error="Invalid_Token"') == [
        Challenge(scheme="bearer", params={"error": "Invalid_Token"})
    ]


def test_two_challenges_in_one_value() -> None:
    assert parse_www_authenticate('DPoP error="use_dpop_nonce", algs="ES256", Bearer realm="x"') == [
        Challenge(scheme="dpop", params={"error": "use_dpop_nonce", "algs": "ES256"}),
        Challenge(scheme="bearer", params={"realm": "x"}),
    ]


def test_rfc9110_example_with_escaped_quotes() -> None:
    value = 'Newauth realm="apps", type=1, title="Login to \\"apps\\"", Basic realm="simple"'
    assert parse_www_authenticate(value) == [
        Challenge(scheme="newauth", params={"realm": "apps", "type": "1", "title": 'Login to "apps"'}),
        Challenge(scheme="basic", params={"realm": "simple"}),
    ]


def test_token68_challenge() -> None:
    assert parse_www_authenticate("Negotiate YIIBhgYGKwYBBQUCoIIB==, Bearer") == [
        Challenge(scheme="negotiate", params={}, token68="YIIBhgYGKwYBBQUCoIIB=="),
        Challenge(scheme="bearer", params={}),
    ]


def test_unquoted_url_value_is_taken_whole() -> None:
    value = "Bearer resource_metadata=https://x.example/.well-known/oauth-protected-resource, scope=a"
    assert parse_www_authenticate(value)[0].params == {
        "resource_metadata": "https://x.example/.well-known/oauth-protected-resource",
        "scope": "a",
    }


def test_whitespace_around_equals_is_allowed() -> None:
    assert parse_www_authenticate('Bearer realm = "x" ,scope= "y"')[0].params == {"realm": "x", "scope": "y"}


def test_empty_values_quoted_and_unquoted() -> None:
    assert parse_www_authenticate('Bearer scope="", error=, realm="r"')[0].params == {
        "scope": "",
        "error": "",
        "realm": "r",
    }


def test_first_occurrence_of_a_parameter_wins() -> None:
    assert parse_www_authenticate('Bearer scope="a", scope="b"')[0].params == {"scope": "a"}


def test_unterminated_quoted_string_ends_at_the_end() -> None:
    assert parse_www_authenticate('Bearer realm="open')[0].params == {"realm": "open"}


def test_bare_scheme_and_stray_commas() -> None:
    assert parse_www_authenticate(" , Bearer , ") == [Challenge(scheme="bearer", params={})]


def test_garbage_between_challenges_is_skipped() -> None:
    assert parse_www_authenticate('= Bearer a="x"= ; Basic') == [
        Challenge(scheme="bearer", params={"a": "x"}),
        Challenge(scheme="basic", params={}),
    ]


def test_empty_header_has_no_challenge() -> None:
    assert parse_www_authenticate("") == []


def test_oversized_header_is_cut_at_16_kib() -> None:
    value = 'Bearer realm="' + "x" * 20_000 + '"'
    assert len(parse_www_authenticate(value)[0].params["realm"]) == 16 * 1024 - len('Bearer realm="')


_TOKENS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_-", min_size=1, max_size=8)
_VALUES = st.text(alphabet=st.characters(codec="ascii", exclude_categories=["Cc"]), max_size=12)


@given(
    st.lists(
        st.tuples(_TOKENS, st.dictionaries(_TOKENS, _VALUES, min_size=1, max_size=4)), min_size=1, max_size=3
    )
)
def test_formatted_challenges_parse_back(challenges: list[tuple[str, dict[str, str]]]) -> None:
    def quoted(value: str) -> str:
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'

    value = ", ".join(
        f"{scheme} " + ", ".join(f"{k}={quoted(v)}" for k, v in params.items())
        for scheme, params in challenges
    )
    assert parse_www_authenticate(value) == [Challenge(scheme=s, params=p) for s, p in challenges]


@given(st.text(max_size=200))
def test_any_text_parses_without_raising(value: str) -> None:
    for challenge in parse_www_authenticate(value):
        assert challenge.scheme == challenge.scheme.lower()
        assert all(name == name.lower() for name in challenge.params)
