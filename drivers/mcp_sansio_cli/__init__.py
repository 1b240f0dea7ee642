"""The ``mcp-sansio`` command line and the bundled demo server."""
