"""The client matrix of bench/client_matrix.py as tests: clients nobody here wrote (the official
Python SDK in both eras, the TypeScript SDK, fastmcp), and our CLI, against a FastMCP-style
server with a plain ``-> int`` tool (tests/servers/newcomer_app.py). The inspector-cli row,
one node process per method, stays in the script."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path

import pytest

_SPEC = importlib.util.spec_from_file_location(
    "client_matrix", Path(__file__).parent.parent / "bench" / "client_matrix.py")  # bench/ is no package
assert _SPEC is not None and _SPEC.loader is not None
client_matrix = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(client_matrix)

pytestmark = pytest.mark.peer


@pytest.fixture(scope="module", params=["http", "stdio"])
def target(request: pytest.FixtureRequest) -> Iterator[str]:
    """The server's URL, or (stdio) the command line each client starts."""
    with client_matrix.served("asyncio", stdio=request.param == "stdio") as served:
        yield served


@pytest.mark.parametrize("client", ["sdk-2026", "sdk-2025", "typescript", "fastmcp", "ours"])
def test_a_client_nobody_here_wrote_passes_the_feature_matrix(target: str, client: str) -> None:
    protocol, verdicts = client_matrix.matrix(target, [client])[client]
    if client == "typescript" and not target.startswith("http"):
        assert protocol is None  # its stdio transport does not say
    else:
        assert protocol == {"sdk-2025": "2025-11-25", "typescript": "2025-11-25"}.get(client, "2026-07-28")
    failed = {feature: verdict for feature, verdict in verdicts.items() if verdict.startswith("FAIL")}
    assert not failed
    assert [f for f, v in verdicts.items() if v != "ok"] == {
        "ours": ["resources", "progress"]}.get(client, [])  # the CLI cannot read nor show progress yet
