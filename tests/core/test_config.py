"""ClientConfig: defaults and the limits it refuses."""

from __future__ import annotations

import math
from typing import Any

import pytest

from mcp_sansio import SUPPORTED_VERSIONS, ClientConfig, LocalProtocolError
from mcp_sansio.versions import LATEST_VERSION, MODERN_VERSIONS, VERSIONS, rules_for


def test_defaults_offer_every_supported_version_latest_first() -> None:
    cfg = ClientConfig()
    assert cfg.protocol_versions == SUPPORTED_VERSIONS
    assert cfg.protocol_versions[0] == LATEST_VERSION == "2025-11-25"


def test_config_is_frozen() -> None:
    with pytest.raises(AttributeError):
        ClientConfig().request_timeout = 1.0  # type: ignore[misc]  # frozen on purpose


@pytest.mark.parametrize("versions", [(), ("1999-01-01",), ("2025-11-25", "nope")])
def test_versions_must_be_a_non_empty_subset_of_the_supported_ones(versions: tuple[str, ...]) -> None:
    with pytest.raises(LocalProtocolError, match="protocol_versions"):
        ClientConfig(protocol_versions=versions)


@pytest.mark.parametrize(
    "name",
    ["request_timeout", "initialize_timeout", "shutdown_close_delay", "shutdown_interrupt_delay",
     "shutdown_terminate_delay"],
)
def test_negative_durations_are_refused(name: str) -> None:
    kwargs: dict[str, Any] = {name: -0.1}
    with pytest.raises(LocalProtocolError, match=f"{name} must not be negative"):
        ClientConfig(**kwargs)


@pytest.mark.parametrize(
    ("name", "value"),
    [("max_line_bytes", 0), ("max_list_pages", 0), ("stderr_limit_bytes", -1), ("max_connections", 0),
     ("max_response_bytes", 0), ("stderr_log_line_bytes", 0), ("stderr_log_lines", 0)],
)
def test_non_positive_limits_are_refused(name: str, value: int) -> None:
    kwargs: dict[str, Any] = {name: value}
    with pytest.raises(LocalProtocolError, match="limits must be positive"):
        ClientConfig(**kwargs)


@pytest.mark.parametrize("window", [0.0, -1.0, math.inf, math.nan])
def test_stderr_log_window_must_be_a_positive_finite_period(window: float) -> None:
    with pytest.raises(LocalProtocolError, match="stderr_log_window"):
        ClientConfig(stderr_log_window=window)


def test_zero_durations_and_stderr_limit_are_allowed() -> None:
    cfg = ClientConfig(request_timeout=0.0, shutdown_close_delay=0.0, stderr_limit_bytes=0)
    assert (cfg.request_timeout, cfg.stderr_limit_bytes) == (0.0, 0)


def test_each_supported_version_has_rules() -> None:
    assert tuple(VERSIONS) == SUPPORTED_VERSIONS + MODERN_VERSIONS
    assert all(rules_for(v) is VERSIONS[v] for v in SUPPORTED_VERSIONS + MODERN_VERSIONS)
    assert all(VERSIONS[v].handshake for v in SUPPORTED_VERSIONS)
    assert not any(VERSIONS[v].handshake for v in MODERN_VERSIONS)
    assert rules_for("2030-01-01") is None


def test_only_2025_03_26_allows_batches() -> None:
    assert [v for v in SUPPORTED_VERSIONS if VERSIONS[v].batches] == ["2025-03-26"]


def test_an_unknown_protocol_is_refused() -> None:
    with pytest.raises(LocalProtocolError, match="protocol must be"):
        ClientConfig(protocol="1999-01-01")


def test_modern_versions_must_be_known_stateless_revisions() -> None:
    with pytest.raises(LocalProtocolError, match="modern_versions"):
        ClientConfig(modern_versions=("2025-11-25",))
