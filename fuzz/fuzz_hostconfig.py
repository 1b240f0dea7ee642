"""Fuzz target: any bytes as a configuration file, read as every format, then expanded.

Only :class:`ConfigError` may come out of ``read_config_file``; expansion must never
raise. Run with atheris: ``python fuzz/fuzz_hostconfig.py fuzz/corpus/hostconfig``.
"""

from __future__ import annotations

import sys
from pathlib import PurePosixPath
from typing import Final

from mcp_sansio.hostconfig import ConfigError, expand_server, expand_text, read_config_file

PATH_NAMES: Final = (
    "/p/.mcp.json",
    "/p/.vscode/mcp.json",
    "/home/u/.claude.json",
    "/home/u/claude_desktop_config.json",
    "/p/.cursor/mcp.json",
    "/etc/unknown.json",
)
ENV: Final = {"HOME": "/home/u", "EMPTY": "", "TOKEN": "t0k"}


def test_one_input(data: bytes) -> None:
    """Read ``data`` under every recognised file name and expand every server found."""
    text = data.decode("utf-8", "surrogateescape")
    expand_text(text, ENV, server="fuzz", field="text")
    for path_name in PATH_NAMES:
        try:
            file = read_config_file(path_name, text, project=PurePosixPath("/p"))
        except ConfigError:
            continue
        for document in file.documents:
            for name, config in document.servers.items():
                expand_server(name, config, ENV, inputs={"key": "value"})


if __name__ == "__main__":
    import atheris

    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()
