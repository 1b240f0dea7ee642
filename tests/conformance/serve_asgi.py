"""Serve the conformance fixture server (``server.py``) as an ASGI app under uvicorn.

Usage: ``python tests/conformance/serve_asgi.py PORT``.
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

import uvicorn

from mcp_sansio_asgi import AsgiApp


def main() -> None:
    app = runpy.run_path(str(Path(__file__).with_name("server.py")))["app"]
    uvicorn.run(AsgiApp(app), host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")


if __name__ == "__main__":
    main()
