"""Which proxy a URL goes through (from an environment mapping), and the CONNECT tunnel.

The decision is a pure function of the target URL and the mapping a driver passes in
(``os.environ``); the tunnel is fed scripted proxy bytes. No sockets.
"""

from __future__ import annotations

import base64

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_sansio.errors import LocalProtocolError
from mcp_sansio.proxy import Proxy, ProxySettings, Tunnel, TunnelFailed, TunnelOpen, proxy_settings
from mcp_sansio.urls import parse_url

PROXY = Proxy(host="proxy.corp", port=3128)
SECURE = {"HTTPS_PROXY": "http://proxy.corp:3128"}
WHERE = "the proxy proxy.corp:3128 (tunnel to mcp.test:443)"
CREDENTIALS = "Basic " + base64.b64encode(b"ann:s3cr3t").decode()


def chosen(environ: dict[str, str], url: str) -> str | None:
    """``host:port`` of the proxy ``url`` goes through, or ``None`` for a direct connection."""
    proxy = ProxySettings.from_environ(environ).select(parse_url(url))
    return None if proxy is None else proxy.authority


# ------------------------------------------------------------- the environment


@pytest.mark.parametrize(("environ", "url", "expected"), [
    ({}, "https://mcp.test/", None),
    (SECURE, "https://mcp.test/", "proxy.corp:3128"),
    (SECURE, "http://mcp.test/", None),  # HTTPS_PROXY serves https only
    ({"HTTP_PROXY": "http://plain:8080"}, "http://mcp.test/", "plain:8080"),
    ({"HTTP_PROXY": "http://plain:8080"}, "https://mcp.test/", None),
    ({"https_proxy": "http://lower:1", "HTTPS_PROXY": "http://upper:2"}, "https://mcp.test/", "lower:1"),
    ({"http_proxy": "http://lower:1", "HTTP_PROXY": "http://upper:2"}, "http://mcp.test/", "lower:1"),
    ({"HTTPS_PROXY": "http://upper:2"}, "https://mcp.test/", "upper:2"),
    # A set but empty lower-case variable hides the upper-case one.
    ({"https_proxy": "", "HTTPS_PROXY": "http://upper:2"}, "https://mcp.test/", None),
    ({"ALL_PROXY": "http://all:3"}, "https://mcp.test/", "all:3"),
    ({"ALL_PROXY": "http://all:3"}, "http://mcp.test/", "all:3"),
    ({"all_proxy": "http://lower:1", "ALL_PROXY": "http://upper:2"}, "http://mcp.test/", "lower:1"),
    ({"https_proxy": " ", "ALL_PROXY": "http://all:3"}, "https://mcp.test/", "all:3"),
    ({"https_proxy": "http://own:1", "ALL_PROXY": "http://all:3"}, "https://mcp.test/", "own:1"),
    ({"HTTPS_PROXY": "proxy.corp:3128"}, "https://mcp.test/", "proxy.corp:3128"),  # no scheme: http
    ({"HTTPS_PROXY": "http://proxy.corp"}, "https://mcp.test/", "proxy.corp:80"),
    ({"HTTPS_PROXY": "HTTP://Proxy.Corp:3128/some/path?q#f"}, "https://mcp.test/", "proxy.corp:3128"),
    ({"HTTPS_PROXY": "http://[::1]:3128"}, "https://mcp.test/", "[::1]:3128"),
    # httpoxy: a CGI request header "Proxy" becomes HTTP_PROXY; only the lower-case one counts then.
    ({"HTTP_PROXY": "http://evil:1", "REQUEST_METHOD": "GET"}, "http://mcp.test/", None),
    ({"http_proxy": "http://fine:1", "REQUEST_METHOD": "GET"}, "http://mcp.test/", "fine:1"),
    ({"HTTPS_PROXY": "http://fine:1", "REQUEST_METHOD": "GET"}, "https://mcp.test/", "fine:1"),
])
def test_the_environment_names_the_proxy_per_scheme(environ: dict[str, str], url: str,
                                                    expected: str | None) -> None:
    assert chosen(environ, url) == expected


@pytest.mark.parametrize("url", [
    "https://localhost/", "https://127.0.0.1:8443/", "https://127.9.9.9/", "https://[::1]/",
    "https://[::ffff:127.0.0.1]/",
])
def test_loopback_targets_never_use_a_proxy_from_the_environment(url: str) -> None:
    assert chosen({**SECURE, "ALL_PROXY": "http://all:3"}, url) is None


@pytest.mark.parametrize(("no_proxy", "url", "direct"), [
    ("*", "https://mcp.test/", True),
    ("example.com, *", "https://mcp.test/", True),
    ("example.com", "https://example.com/", True),
    ("example.com", "https://api.example.com/", True),
    ("example.com", "https://notexample.com/", False),
    (".example.com", "https://example.com/", True),
    (".example.com", "https://a.b.example.com/", True),
    ("*.example.com", "https://api.example.com/", True),
    ("Example.COM.", "https://example.com./", True),
    ("a.test b.test,,c.test", "https://b.test/", True),
    ("a.test\tb.test", "https://b.test/", True),
    ("example.com:8443", "https://example.com:8443/", True),
    ("example.com:8443", "https://example.com/", False),
    ("example.com:443", "https://example.com/", True),  # the scheme's default port counts
    ("10.1.2.3", "https://10.1.2.3/", True),
    ("10.1.2.3", "https://10.1.2.4/", False),
    ("10.0.0.0/8", "https://10.200.0.1/", True),
    ("10.0.0.0/8", "https://11.0.0.1/", False),
    ("10.0.0.0/8", "https://ten.example/", False),  # names are not resolved
    ("10.0.0.0/8:8443", "https://10.0.0.1:8443/", True),
    ("10.0.0.0/8:8443", "https://10.0.0.1/", False),
    ("10.0.0.0/8", "https://[fd00::1]/", False),  # another IP version
    ("fd00::/8", "https://[fd00::1]/", True),
    ("fd00::1", "https://[fd00::1]/", True),
    ("[fd00::1]:8443", "https://[fd00::1]:8443/", True),
    ("[fd00::1]:8443", "https://[fd00::1]/", False),
    ("[fd00::1]", "https://[fd00::1]/", True),
    # Malformed entries are ignored, the others still apply.
    ("[fd00::1, mcp.test", "https://mcp.test/", True),
    ("[fd00::1]x, example.com:http, example.com:0, example.com:99999, ., *.", "https://example.com/", False),
    ("", "https://mcp.test/", False),
])
def test_no_proxy_entries_match_names_subdomains_addresses_ranges_and_ports(
    no_proxy: str, url: str, direct: bool
) -> None:
    assert (chosen({**SECURE, "NO_PROXY": no_proxy}, url) is None) is direct


def test_lower_case_no_proxy_wins() -> None:
    environ = {**SECURE, "no_proxy": "other.test", "NO_PROXY": "mcp.test"}
    assert chosen(environ, "https://mcp.test/") == "proxy.corp:3128"
    assert chosen(environ, "https://other.test/") is None


def test_credentials_become_a_basic_proxy_authorization_hidden_from_reprs() -> None:
    settings = ProxySettings.from_environ({"HTTPS_PROXY": "http://ann:s3cr3t@proxy.corp:3128"})
    proxy = settings.select(parse_url("https://mcp.test/"))
    assert proxy == Proxy(host="proxy.corp", port=3128, authorization=CREDENTIALS)
    for text in (repr(proxy), repr(settings), str(settings), proxy.authority):
        assert "s3cr3t" not in text and CREDENTIALS not in text


def test_credentials_are_percent_decoded_and_may_hold_at_signs_and_colons() -> None:
    proxy = ProxySettings.explicit("http://a%40corp:p%3Aw@rd:x@proxy.corp:3128").https
    assert proxy is not None
    assert proxy.authorization == "Basic " + base64.b64encode(b"a@corp:p:w@rd:x").decode()
    assert ProxySettings.explicit("http://ann@proxy.corp").https == Proxy(
        host="proxy.corp", port=80, authorization="Basic " + base64.b64encode(b"ann:").decode())


@pytest.mark.parametrize(("environ", "error"), [
    ({"HTTPS_PROXY": "https://proxy.corp:3128"}, "HTTPS_PROXY: TLS to the proxy itself"),
    ({"ALL_PROXY": "socks5h://ann:s3cr3t@proxy.corp:1080"}, "ALL_PROXY: 'socks5h' proxies are not supported"),
    ({"http_proxy": "http://ann:s3cr3t@proxy.corp:notaport"}, "http_proxy is not a valid http:// proxy URL"),
    ({"https_proxy": "http://ann:s3cr3t@"}, "https_proxy is not a valid http:// proxy URL"),
])
def test_an_unusable_proxy_url_is_refused_naming_the_variable_not_the_value(
    environ: dict[str, str], error: str
) -> None:
    with pytest.raises(LocalProtocolError) as caught:
        ProxySettings.from_environ(environ)
    assert error in str(caught.value)
    assert "s3cr3t" not in str(caught.value) and caught.value.__cause__ is None


def test_an_explicit_proxy_serves_every_target_loopback_included_whatever_the_environment() -> None:
    settings = proxy_settings("http://proxy.corp:3128", {"NO_PROXY": "*"})
    assert settings is not None
    for url in ("https://mcp.test/", "http://mcp.test/", "http://127.0.0.1:8000/", "https://localhost/"):
        assert settings.select(parse_url(url)) == PROXY


def test_the_proxy_option_reads_the_environment_or_turns_proxies_off() -> None:
    on = proxy_settings(True, SECURE)
    assert on is not None and on.select(parse_url("https://mcp.test/")) == PROXY
    assert proxy_settings(False, SECURE) is None


@pytest.mark.parametrize("url", ["", "  ", "ftp://proxy.corp", "https://proxy.corp"])
def test_an_explicit_proxy_must_be_an_http_url(url: str) -> None:
    with pytest.raises(LocalProtocolError):
        ProxySettings.explicit(url)


# ------------------------------------------------------------------- the tunnel


def tunnel(*, tls: bool = True, proxy: Proxy = PROXY, host: str = "mcp.test", port: int = 443,
           max_header_bytes: int = 1024) -> Tunnel:
    return Tunnel(proxy, host, port, tls=tls, max_header_bytes=max_header_bytes)


def test_connect_request_names_the_target_in_the_request_line_and_host() -> None:
    assert tunnel().request == b"CONNECT mcp.test:443 HTTP/1.1\r\nhost: mcp.test:443\r\n\r\n"
    assert tunnel(host="fd00::1", port=8443).request == (
        b"CONNECT [fd00::1]:8443 HTTP/1.1\r\nhost: [fd00::1]:8443\r\n\r\n")


def test_connect_request_carries_the_proxy_credentials() -> None:
    proxy = Proxy(host="proxy.corp", port=3128, authorization=CREDENTIALS)
    assert tunnel(proxy=proxy).request == (
        b"CONNECT mcp.test:443 HTTP/1.1\r\nhost: mcp.test:443\r\n"
        b"proxy-authorization: " + CREDENTIALS.encode() + b"\r\n\r\n")


def test_a_2xx_answer_opens_the_tunnel() -> None:
    t = tunnel()
    assert t.receive_data(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 Connection established\r\n") is None
    assert t.receive_data(b"\r\n") == TunnelOpen(leftover=b"")


def test_an_http_1_0_answer_from_an_older_proxy_opens_the_tunnel_too() -> None:
    outcome = tunnel().receive_data(b"HTTP/1.0 200 Connection established\r\nProxy-agent: old\r\n\r\n")
    assert outcome == TunnelOpen(leftover=b"")


def test_bytes_after_the_answer_belong_to_the_target_without_tls() -> None:
    t = tunnel(tls=False, port=80)
    assert t.receive_data(b"HTTP/1.1 200 OK\r\n\r\nHTTP/1.1 2") == TunnelOpen(leftover=b"HTTP/1.1 2")


def test_bytes_after_the_answer_before_tls_fail_the_tunnel() -> None:
    outcome = tunnel().receive_data(b"HTTP/1.1 200 OK\r\n\r\n\x16\x03")
    assert outcome == TunnelFailed(
        message=f"{WHERE} sent data before the TLS handshake")


@pytest.mark.parametrize(("status", "reason"), [(407, "Proxy Authentication Required"), (403, "Forbidden"),
                                                (502, "Bad Gateway"), (301, "")])
def test_any_other_answer_refuses_the_tunnel_naming_the_proxy_and_its_status(status: int,
                                                                            reason: str) -> None:
    outcome = tunnel().receive_data(f"HTTP/1.1 {status} {reason}\r\nContent-Length: 0\r\n\r\n".encode())
    assert outcome == TunnelFailed(
        message=f"{WHERE} refused: HTTP {status} {reason}".rstrip(),
        status=status)


def test_a_long_reason_phrase_is_cut() -> None:
    outcome = tunnel().receive_data(b"HTTP/1.1 502 " + b"x" * 500 + b"\r\n\r\n")
    assert isinstance(outcome, TunnelFailed)
    assert outcome.message.endswith("HTTP 502 " + "x" * 100)


def test_a_refusal_never_shows_the_credentials() -> None:
    proxy = Proxy(host="proxy.corp", port=3128, authorization=CREDENTIALS)
    outcome = tunnel(proxy=proxy).receive_data(b"HTTP/1.1 407 Proxy Authentication Required\r\n\r\n")
    assert isinstance(outcome, TunnelFailed)
    assert CREDENTIALS not in repr(outcome) and "s3cr3t" not in repr(outcome)


@pytest.mark.parametrize("before", [b"", b"HTTP/1.1 200 OK\r\n"])
def test_the_proxy_closing_before_its_answer_ends_fails_the_tunnel_without_a_status(before: bytes) -> None:
    t = tunnel()
    if before:
        assert t.receive_data(before) is None
    assert t.receive_data(b"") == TunnelFailed(
        message=f"{WHERE} closed the connection before answering CONNECT")


def test_garbage_fails_the_tunnel_without_a_status() -> None:
    outcome = tunnel().receive_data(b"SSH-2.0-OpenSSH\r\n\r\n")
    assert isinstance(outcome, TunnelFailed) and outcome.status is None
    assert outcome.message.startswith(f"{WHERE} sent an invalid answer")


def test_an_answer_head_over_the_limit_fails_the_tunnel() -> None:
    t = tunnel(max_header_bytes=64)
    assert t.receive_data(b"HTTP/1.1 200 OK\r\nX: " + b"a" * 40) is None
    assert t.receive_data(b"a" * 40 + b"\r\n\r\n") == TunnelFailed(
        message=f"{WHERE} answered CONNECT with a head over the size limit")


ANSWERS = [
    b"HTTP/1.1 200 Connection established\r\nVia: 1.1 proxy\r\n\r\n",
    b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n\r\n",
    b"HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nX: " + b"a" * 80 + b"\r\n\r\n",  # over the 64-byte limit
    b"HTTP/1.1 200 OK\r\nX: " + b"a" * 40 + b"\r\n\r\n",  # exactly the limit
]


@given(st.sampled_from(ANSWERS), st.lists(st.integers(min_value=0, max_value=120), max_size=6))
def test_the_outcome_does_not_depend_on_how_the_answer_is_split(data: bytes, cuts: list[int]) -> None:
    whole = tunnel(max_header_bytes=64).receive_data(data)
    t = tunnel(max_header_bytes=64)
    points = sorted({min(c, len(data)) for c in cuts} | {len(data)})
    start, outcome = 0, None
    for point in points:
        if start == point:
            continue
        outcome = t.receive_data(data[start:point])
        start = point
        if outcome is not None:
            break
    assert outcome == whole and whole is not None
