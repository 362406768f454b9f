"""A stateful fake of the payment charge service, for tests, demos and benchmarks.

In tests, use the ``fake_gateway`` pytest fixture (in-process, through
``responses``) or ``fake_gateway_server`` (a real HTTP server in a thread).
Elsewhere, run ``python -m django_paycharge.testing.server``. See
``docs/fake-gateway.md``. Runtime code of the app never imports this package.
"""

from __future__ import annotations

from .app import FakeApp
from .basics import (
    CARD_DECLINED,
    CARD_INSUFFICIENT_FUNDS,
    CARD_SUCCESS,
    CARD_THREE_DS,
    TEST_BASE_URL,
    TEST_JWT,
    TEST_MERCHANT_ID,
    TEST_SECRET,
    TEST_STORE_ID,
    TEST_WIDGET_JWT,
    ApiError,
    make_jwt,
)
from .handle import FakeGateway
from .messages import FakeResponse
from .state import FakeState

__all__ = [
    "CARD_DECLINED",
    "CARD_INSUFFICIENT_FUNDS",
    "CARD_SUCCESS",
    "CARD_THREE_DS",
    "TEST_BASE_URL",
    "TEST_JWT",
    "TEST_MERCHANT_ID",
    "TEST_SECRET",
    "TEST_STORE_ID",
    "TEST_WIDGET_JWT",
    "ApiError",
    "FakeApp",
    "FakeGateway",
    "FakeResponse",
    "FakeState",
    "make_jwt",
]
