"""The README's server examples run as printed."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

README = (Path(__file__).parent.parent / "README.md").read_text()
SECTION = README.split("## Serving MCP", 1)[1].split("\n## ", 1)[0]
BLOCKS = re.findall(r"```python\n(.*?)```", SECTION, re.S)


def test_the_ten_line_server_registers_a_tool_a_resource_and_a_prompt() -> None:
    namespace: dict[str, object] = {}
    exec(BLOCKS[0], namespace)
    registry = namespace["app"].registry  # type: ignore[attr-defined]
    assert set(registry.tools) == {"forecast"}
    assert callable(namespace["asgi"])


def test_the_server_core_by_hand_answers_the_call() -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(BLOCKS[1], {})
    assert '"text":"5"' in out.getvalue()


def test_the_authorization_example_protects_the_app_and_scopes_its_tool() -> None:
    namespace: dict[str, object] = {}
    exec(BLOCKS[2], namespace)
    app = namespace["app"]
    assert app.auth.required_scopes == ("mcp",)  # type: ignore[attr-defined]
    assert app.registry.tools["write"].scopes == ("files:write",)  # type: ignore[attr-defined]
