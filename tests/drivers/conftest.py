"""Driver-test fixtures: ``driver`` is each driver in turn and picks ``anyio_backend``."""

from __future__ import annotations

import pytest

from .driver_adapter import DRIVER_NAMES, Driver


@pytest.fixture(params=DRIVER_NAMES)
def driver(request: pytest.FixtureRequest) -> Driver:
    """Each driver in turn."""
    return Driver(request.param)


@pytest.fixture
def anyio_backend(driver: Driver) -> str:
    """The event loop the driver under test runs on."""
    return driver.backend


