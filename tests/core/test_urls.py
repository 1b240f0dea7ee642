"""URL parsing, RFC 3986 reference resolution and origin checks."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_sansio.errors import LocalProtocolError, RemoteProtocolError
from mcp_sansio.urls import Url, is_loopback, is_loopback_host, parse_url, resolve_url, same_origin

RFC_BASE = parse_url("http://a/b/c/d;p?q")


def test_parse_lower_cases_scheme_and_host_and_fills_default_port() -> None:
    assert parse_url("HTTP://Example.COM/Path?Q=1") == Url(
        scheme="http", host="example.com", port=80, target="/Path?Q=1"
    )


def test_https_default_port_is_443() -> None:
    assert parse_url("https://example.com/").port == 443


def test_explicit_port_is_kept() -> None:
    assert parse_url("http://example.com:8080/mcp").port == 8080


def test_empty_port_means_the_default() -> None:
    assert parse_url("http://example.com:/").port == 80


def test_leading_zeros_in_port_are_allowed() -> None:
    assert parse_url("http://example.com:00000000080/").port == 80


def test_empty_path_becomes_slash() -> None:
    assert parse_url("http://example.com").target == "/"


def test_empty_query_is_kept() -> None:
    assert parse_url("http://example.com?").target == "/?"


def test_fragment_is_dropped() -> None:
    assert parse_url("http://example.com/a?b#c?d").target == "/a?b"


def test_dot_segments_are_removed() -> None:
    assert parse_url("http://example.com/a/./b/../c/.").target == "/a/c/"


def test_non_ascii_path_and_query_are_percent_encoded_as_utf8() -> None:
    assert parse_url("http://example.com/é?q=ü%20").target == "/%C3%A9?q=%C3%BC%20"


def test_ipv6_host_loses_brackets_and_is_compressed() -> None:
    url = parse_url("http://[0:0:0:0:0:0:0:1]:8080/x")
    assert (url.host, url.port) == ("::1", 8080)


def test_ipv6_with_empty_port_uses_the_default() -> None:
    assert parse_url("https://[::1]:/").port == 443


def test_international_host_is_idna_encoded() -> None:
    assert parse_url("http://Bücher.de/").host == "xn--bcher-kva.de"


def test_ipv4_host_is_kept() -> None:
    assert parse_url("http://127.0.0.1:3000/mcp").host == "127.0.0.1"


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("ftp://example.com/", "scheme must be http or https"),
        ("example.com/mcp", "no scheme"),
        ("http:/mcp", "no host"),
        ("http:///mcp", "no host"),
        ("http://:80/", "invalid host"),
        ("http://user:secret@example.com/", "credentials"),
        ("http://example.com:0/", "invalid port"),
        ("http://example.com:65536/", "invalid port"),
        ("http://example.com:123456/", "invalid port"),
        ("http://example.com:8a/", "invalid port"),
        ("http://example.com:80:80/", "invalid port"),
        ("http://example.com:\u0661/", "invalid port"),
        ("http://[::1/", "malformed IPv6"),
        ("http://[::1]x/", "malformed IPv6"),
        ("http://[::g]/", "invalid IPv6"),
        ("http://[127.0.0.1]/", "invalid IPv6"),
        ("http://exa^mple.com/", "invalid host"),
        ("http://" + "ü" * 64 + ".de/", "international host"),
        ("http://example.com/a b", "spaces and control"),
        ("http://example.com/\r\nX: y", "spaces and control"),
        ("http://example.com/\x7f", "spaces and control"),
    ],
)
def test_invalid_urls_are_refused(text: str, reason: str) -> None:
    with pytest.raises(LocalProtocolError, match=reason):
        parse_url(text)


def test_credentials_are_not_echoed_in_the_error() -> None:
    with pytest.raises(LocalProtocolError) as info:
        parse_url("http://user:secret@example.com/")
    assert "secret" not in str(info.value)


@pytest.mark.parametrize(
    ("text", "authority"),
    [
        ("http://example.com/", "example.com"),
        ("http://example.com:80/", "example.com"),
        ("http://example.com:443/", "example.com:443"),
        ("https://example.com:443/", "example.com"),
        ("https://example.com:8443/", "example.com:8443"),
        ("http://[::1]/", "[::1]"),
        ("http://[::1]:8080/", "[::1]:8080"),
    ],
)
def test_authority_omits_default_port_and_brackets_ipv6(text: str, authority: str) -> None:
    assert parse_url(text).authority == authority


@pytest.mark.parametrize(
    "text",
    ["http://example.com/", "https://example.com:8443/a/b?c=d", "http://[fe80::1]:8080/?", "https://h/%41"],
)
def test_str_round_trips(text: str) -> None:
    assert str(parse_url(text)) == text


def test_origin_is_scheme_host_port() -> None:
    assert parse_url("https://Example.com/x").origin == ("https", "example.com", 443)


# RFC 3986 section 5.4.1 (normal) and 5.4.2 (abnormal) examples, fragments dropped.
# "//g" resolves to "http://g", whose request target is "/".
@pytest.mark.parametrize(
    ("reference", "expected"),
    [
        ("g", "http://a/b/c/g"),
        ("./g", "http://a/b/c/g"),
        ("g/", "http://a/b/c/g/"),
        ("/g", "http://a/g"),
        ("//g", "http://g/"),
        ("?y", "http://a/b/c/d;p?y"),
        ("g?y", "http://a/b/c/g?y"),
        ("#s", "http://a/b/c/d;p?q"),
        ("g#s", "http://a/b/c/g"),
        ("g?y#s", "http://a/b/c/g?y"),
        (";x", "http://a/b/c/;x"),
        ("g;x", "http://a/b/c/g;x"),
        ("g;x?y#s", "http://a/b/c/g;x?y"),
        ("", "http://a/b/c/d;p?q"),
        (".", "http://a/b/c/"),
        ("./", "http://a/b/c/"),
        ("..", "http://a/b/"),
        ("../", "http://a/b/"),
        ("../g", "http://a/b/g"),
        ("../..", "http://a/"),
        ("../../", "http://a/"),
        ("../../g", "http://a/g"),
        ("../../../g", "http://a/g"),
        ("../../../../g", "http://a/g"),
        ("/./g", "http://a/g"),
        ("/../g", "http://a/g"),
        ("g.", "http://a/b/c/g."),
        (".g", "http://a/b/c/.g"),
        ("g..", "http://a/b/c/g.."),
        ("..g", "http://a/b/c/..g"),
        ("./../g", "http://a/b/g"),
        ("./g/.", "http://a/b/c/g/"),
        ("g/./h", "http://a/b/c/g/h"),
        ("g/../h", "http://a/b/c/h"),
        ("g;x=1/./y", "http://a/b/c/g;x=1/y"),
        ("g;x=1/../y", "http://a/b/c/y"),
        ("g?y/./x", "http://a/b/c/g?y/./x"),
        ("g?y/../x", "http://a/b/c/g?y/../x"),
        ("g#s/./x", "http://a/b/c/g"),
        ("g#s/../x", "http://a/b/c/g"),
    ],
)
def test_resolve_rfc3986_examples(reference: str, expected: str) -> None:
    assert str(resolve_url(RFC_BASE, reference)) == expected


@pytest.mark.parametrize("reference", ["g:h", "http:g"])
def test_resolve_refuses_absolute_references_without_http_host(reference: str) -> None:
    # "g:h" has another scheme; strict resolution reads "http:g" as absolute, with no host.
    with pytest.raises(RemoteProtocolError):
        resolve_url(RFC_BASE, reference)


def test_empty_reference_against_base_without_query_keeps_no_query() -> None:
    assert str(resolve_url(parse_url("http://a/b"), "")) == "http://a/b"


def test_network_path_reference_keeps_base_scheme() -> None:
    assert resolve_url(parse_url("https://a/b"), "//G:8443/x") == parse_url("https://g:8443/x")


def test_absolute_reference_replaces_everything() -> None:
    assert resolve_url(RFC_BASE, "HTTPS://Other/./x/../y") == parse_url("https://other/y")


@pytest.mark.parametrize(
    ("reference", "reason"),
    [
        ("//user@g/", "credentials"),
        ("ftp://g/", "http or https"),
        ("/a b", "spaces"),
        ("//g:99999/", "invalid port"),
    ],
)
def test_resolve_refuses_bad_references_as_remote_errors(reference: str, reason: str) -> None:
    with pytest.raises(RemoteProtocolError, match=reason):
        resolve_url(RFC_BASE, reference)


@given(
    st.sampled_from(["http", "https", "HTTP"]),
    st.sampled_from(["a", "Example.com", "[::1]", "127.0.0.1"]),
    st.sampled_from(["", ":8080", ":"]),
    st.lists(st.sampled_from(["a", ".", "..", "", "é", "%2F"]), max_size=5),
    st.none() | st.text("ab=&/.?", max_size=5),
)
def test_resolving_an_absolute_url_equals_parsing_it(
    scheme: str, host: str, port: str, segments: list[str], query: str | None
) -> None:
    text = f"{scheme}://{host}{port}" + "".join("/" + s for s in segments)
    if query is not None:
        text += "?" + query
    assert resolve_url(RFC_BASE, text) == parse_url(text)


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("http://h/x", "http://H:80/y?z", True),
        ("https://h/", "https://h:443/", True),
        ("http://h/", "https://h/", False),
        ("http://h/", "http://h:8080/", False),
        ("http://h/", "http://g/", False),
        ("http://[::1]/", "http://[0::1]/", True),
    ],
)
def test_same_origin_compares_scheme_host_and_port(a: str, b: str, expected: bool) -> None:
    assert same_origin(parse_url(a), parse_url(b)) is expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("http://localhost:3000/", True),
        ("http://LOCALHOST/", True),
        ("http://127.0.0.1/", True),
        ("http://127.255.1.2/", True),
        ("http://[::1]/", True),
        ("http://[::ffff:127.0.0.1]/", True),
        ("http://[::ffff:10.0.0.1]/", False),
        ("http://[::2]/", False),
        ("http://128.0.0.1/", False),
        ("http://10.0.0.1/", False),
        ("http://example.com/", False),
        ("http://localhost.example.com/", False),
    ],
)
def test_is_loopback(text: str, expected: bool) -> None:
    assert is_loopback(parse_url(text)) is expected


@pytest.mark.parametrize(("host", "expected"), [
    ("127.0.0.1", True), ("127.9.9.9", True), ("localhost", True), ("LocalHost.", True), ("::1", True),
    ("[::1]", True), ("0:0:0:0:0:0:0:1", True), ("::ffff:127.0.0.1", True), ("[::FFFF:7F00:1]", True),
    ("0.0.0.0", False), ("::", False), ("127.example.com", False), ("localhost.example.com", False),
    ("[::1", False), ("", False),
])
def test_is_loopback_host_takes_every_spelling_of_a_loopback_address(host: str, expected: bool) -> None:
    assert is_loopback_host(host) is expected
