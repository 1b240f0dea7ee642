"""This project's own blocking client (``mcp_sansio_sync``) as a hostile-server target: the
clean twin of ``planted_client.py``. It starts the server ``MCP_FUZZ_SERVER_ARGV`` names (over
HTTP it connects to ``MCP_FUZZ_SERVER_URL``), lists tools, calls ``echo`` and exits 0; on an
error it prints its type and exits 1. Every request has the timeout
``MCP_FUZZ_CLIENT_TIMEOUT``."""

from __future__ import annotations

import json
import os
import sys

from mcp_sansio import ClientConfig
from mcp_sansio.errors import McpSansioError
from mcp_sansio_sync import connect_http, connect_stdio


def main() -> None:
    """One session's script."""
    timeout = float(os.environ.get("MCP_FUZZ_CLIENT_TIMEOUT", "5"))
    # Bounds tighter than the defaults (32 MiB lines and responses; no cap on a deadline that
    # progress keeps moving): the hostile server's unbounded line and progress drip need them.
    config = ClientConfig(
        request_timeout=timeout,
        max_request_timeout=timeout,
        max_line_bytes=4 << 20,
        max_response_bytes=4 << 20,
    )
    url = os.environ.get("MCP_FUZZ_SERVER_URL")
    if url:
        with connect_http(url, config=config) as web:
            web.list_tools()
            web.call_tool("echo", {"text": "hi"})
    else:
        argv = json.loads(os.environ["MCP_FUZZ_SERVER_ARGV"])
        with connect_stdio(argv[0], argv[1:], config=config) as client:
            client.list_tools()
            client.call_tool("echo", {"text": "hi"})
    print("ok")


if __name__ == "__main__":
    try:
        main()
    except (McpSansioError, OSError) as exc:
        print(f"error: {type(exc).__name__}: {exc}"[:500], file=sys.stderr)
        sys.exit(1)
