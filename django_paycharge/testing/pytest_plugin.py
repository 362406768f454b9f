"""pytest plugin registered through the ``pytest11`` entry point (fixtures of the fake gateway).

``fake_gateway``: in-process; ``requests`` calls to ``TEST_BASE_URL`` reach the
fake through ``responses``. ``fake_gateway_server``: a real HTTP server on
127.0.0.1 (one per session, reset for each test). Both point
``settings.PAYCHARGE`` at the fake when pytest-django is in use.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from .handle import FakeGateway


class InProcessGateway(FakeGateway):
    """The ``fake_gateway`` handle: a :class:`FakeGateway` plus its ``responses`` mock."""

    mock: Any  # responses.RequestsMock; add a test's other routes to it

    def install_on(self, mock: Any) -> None:
        """Route the fake's base URL on another ``responses.RequestsMock`` (e.g. the test's own)."""
        from .responses_frontend import ResponsesFrontend

        ResponsesFrontend(self.app).install(mock)


def _point_settings(request: pytest.FixtureRequest, gateway: FakeGateway) -> None:
    """Point ``settings.PAYCHARGE`` at the fake when Django settings exist (pytest-django)."""
    try:
        from pytest_django.lazy_django import django_settings_is_configured
    except ImportError:
        return
    if not django_settings_is_configured():
        return
    settings = request.getfixturevalue("settings")
    current = dict(getattr(settings, "PAYCHARGE", {}) or {})
    settings.PAYCHARGE = {**current, **gateway.settings()}


@pytest.fixture
def fake_gateway(request: pytest.FixtureRequest) -> Iterator[InProcessGateway]:
    """A fresh in-process fake gateway, reached by ``requests`` at ``TEST_BASE_URL``."""
    import responses

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
