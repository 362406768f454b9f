"""pytest plugin registered through the ``pytest11`` entry point (fixtures of the fake gateway).

``fake_gateway``: in-process; ``requests`` calls to ``TEST_BASE_URL`` reach the
fake through ``responses``. ``fake_gateway_server``: a real HTTP server on
127.0.0.1 (one per session, reset for each test). Both point
``settings.PAYCHARGE`` at the fake when pytest-django is in use.

The plugin is loaded wherever django-paycharge is installed, so it imports
its optional dependencies (``pip install "django-paycharge[testing]"``) only
when a fixture runs, and fails the test with a message naming that extra when
one is missing.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest

from .handle import FakeGateway

TESTING_EXTRA = 'pip install "django-paycharge[testing]"'


class InProcessGateway(FakeGateway):
    """The ``fake_gateway`` handle: a :class:`FakeGateway` plus its ``responses`` mock."""

    mock: Any  # responses.RequestsMock; add a test's other routes to it

    def install_on(self, mock: Any) -> None:
        """Route the fake's base URL on another ``responses.RequestsMock`` (e.g. the test's own)."""
        from .responses_frontend import ResponsesFrontend

        ResponsesFrontend(self.app).install(mock)


def require(module: str, fixture: str) -> ModuleType:
    """Import ``module`` or fail the test with what to install (never a bare import error)."""
    try:
        return importlib.import_module(module)
    except ImportError:
        pytest.fail(
            f"The {fixture} fixture of django-paycharge needs {module.split('.')[0]}, "
            f"which is not installed: {TESTING_EXTRA}",
            pytrace=False,
        )


def _point_settings(request: pytest.FixtureRequest, gateway: FakeGateway) -> None:
    """Point ``settings.PAYCHARGE`` at the fake when Django settings exist (pytest-django)."""
    try:
        from pytest_django.lazy_django import django_settings_is_configured
    except ImportError:
        # Without pytest-django a Django project's settings would silently keep the real
        # gateway's address: only a project without Django settings may go without it.
        if os.environ.get("DJANGO_SETTINGS_MODULE"):
            require("pytest_django", request.fixturename or "fake_gateway")
        return
    if not django_settings_is_configured():
        return
    settings = request.getfixturevalue("settings")
    current = dict(getattr(settings, "PAYCHARGE", {}) or {})
    settings.PAYCHARGE = {**current, **gateway.settings()}


@pytest.fixture
def fake_gateway(request: pytest.FixtureRequest) -> Iterator[InProcessGateway]:
    """A fresh in-process fake gateway, reached by ``requests`` at ``TEST_BASE_URL``."""
    responses = require("responses", "fake_gateway")
    from .responses_frontend import ResponsesFrontend

    gateway = InProcessGateway()
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        gateway.mock = mock
        ResponsesFrontend(gateway.app).install(mock)
        _point_settings(request, gateway)
        yield gateway


@pytest.fixture(scope="session")
def _paycharge_server() -> Iterator[Any]:
    from .server import RunningServer

    server = RunningServer("127.0.0.1", 0)
    yield server
    server.stop()


@pytest.fixture
def fake_gateway_server(request: pytest.FixtureRequest, _paycharge_server: Any) -> Iterator[Any]:
    """The session's fake gateway server, reset for this test; ``.base_url`` is where it listens."""
    server = _paycharge_server
    server.reset()  # also cancels deliveries a previous test left queued or retrying
    server.state.sender.wait_idle(5.0)
    server.processing_delay = 0.0
    server.polling_timeout = 2.0
    server.restore_sender()  # a previous test may have swapped the transport or the delays
    _point_settings(request, server)
    yield server
    server.clear_faults()
