"""Which bind addresses count as loopback, and so turn DNS-rebinding protection on (the
``Host`` header must name a loopback name): every spelling of a loopback address, in the
shared serving code every driver uses and in ``mcp-sansio serve``'s options."""

from __future__ import annotations

import argparse

import pytest

from mcp_sansio.server import MCPServer
from mcp_sansio.server.http_headers import LOOPBACK_HOSTS
from mcp_sansio_base.serving import http_endpoint, is_loopback
from mcp_sansio_cli.serve_cmd import _bind_options

LOOPBACK = ["127.0.0.1", "127.1.2.3", "localhost", "LOCALHOST", "localhost.", "::1", "[::1]",
            "0:0:0:0:0:0:0:1", "::0:1", "::ffff:127.0.0.1",
            "127.1", "127.0.1", "0x7f.0.0.1", "0177.0.0.1", "2130706433"]  # the bind reads these as 127.0.0.1
PUBLIC = ["0.0.0.0", "::", "10.0.0.1", "::ffff:10.0.0.1", "example.com", "localhost.example.com",
          "127.example.com", ""]


@pytest.mark.parametrize("host", LOOPBACK)
def test_every_spelling_of_a_loopback_bind_checks_the_host_header(host: str) -> None:
    assert is_loopback(host)
    endpoint = http_endpoint(MCPServer("s"), host, None, None, 0.0)
    assert endpoint.config.allowed_hosts == LOOPBACK_HOSTS
    options = _bind_options(argparse.Namespace(host=host, allow_origin=[], allow_host=[]))
    assert options["allowed_hosts"] == LOOPBACK_HOSTS


@pytest.mark.parametrize("host", PUBLIC)
def test_a_public_bind_is_not_taken_for_loopback(host: str) -> None:
    assert not is_loopback(host)
    assert http_endpoint(MCPServer("s"), host, None, None, 0.0).config.allowed_hosts is None
