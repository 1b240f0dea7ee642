"""An official-SDK (``mcp`` 2.3) stdio server whose ``tools/list`` and ``resources/read``
carry the caching hints given on the command line: ``python sdk_cache_server.py TTL_MS SCOPE``.

Its tool ``grow`` adds the tool ``extra`` without telling the client (no notification), and
the resource ``counter://reads`` is the number of times it was read, so a test sees whether
a later answer came from a cache or from the server.
"""

from __future__ import annotations

import sys
from typing import Literal, cast

from mcp.server import CacheHint
from mcp.server.mcpserver import MCPServer


def main() -> None:
    """Serve on stdin/stdout until stdin closes."""
    ttl_ms, scope = int(sys.argv[1]), cast(Literal["public", "private"], sys.argv[2])
    hint = CacheHint(ttl_ms=ttl_ms, scope=scope)
    server = MCPServer("cache-hints", cache_hints={"tools/list": hint, "resources/read": hint})
    reads = 0

    @server.resource("counter://reads")
    def counter() -> str:
        """How many times this resource was read."""
        nonlocal reads
        reads += 1
        return str(reads)

    def extra() -> str:
        """A tool that appears only after ``grow``."""
        return "extra"

    @server.tool()
    def grow() -> str:
        """Add the tool ``extra``, silently."""
        server.add_tool(extra)
        return "grown"

    server.run()


if __name__ == "__main__":
    main()
