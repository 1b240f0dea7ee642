"""``python -m mcp_sansio_cli`` is ``mcp-sansio``."""

from .main import main

main()
