"""Schema-driven fuzzing: requests generated from docs/openapi.yaml never get a 5xx.

Schemathesis draws valid and invalid requests for every operation of the
checked-in schema and sends them to Django through its WSGI integration, as
staff (Basic authentication) and as an anonymous storefront customer, with the
fake gateway behind the services. Bounded: a fixed number of derandomized
examples per operation and caller.
"""

from __future__ import annotations

import base64
import re
from pathlib import Path
from typing import Any

import hypothesis
import pytest
import schemathesis
from django.contrib.auth.models import Permission, User
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.core.errors import InvalidSchema
from schemathesis.core.result import Err, Ok
from schemathesis.schemas import APIOperation
from schemathesis.specs.openapi.checks import response_schema_conformance

from django_paycharge import services
from tests.hypothesis_profiles import examples

from .conftest import gateway_charge

pytestmark = pytest.mark.django_db(transaction=False)

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "docs" / "openapi.yaml"
SCHEMA = schemathesis.openapi.from_path(str(SCHEMA_PATH))
Operation = APIOperation[Any, Any, Any, Any]


def operation(result: Ok[Operation] | Err[InvalidSchema]) -> Operation:
    """An operation of docs/openapi.yaml; one the tool cannot read fails the module, named."""
    if isinstance(result, Err):
        raise result.err()
    return result.ok()


OPERATIONS = [operation(result) for result in SCHEMA.get_all_operations()]
EXAMPLES = examples(40)  # per operation and caller: 11 x 2 x 40 = 880 requests
#: The subscription operations are thin views over the same rules: fewer draws each
#: (8 x 2 x 12 = 192 requests), so the module's CPU time grows by a third, not double.
SUBSCRIPTION_EXAMPLES = examples(12)
KINDS = ("card", "online", "bank_transfer", "konbini")
SUBSCRIPTION: dict[str, Any] = {"amount": 1200, "currency": "JPY", "period": "monthly"}
STAFF_PERMISSIONS = [
    "capture_charge",
    "cancel_charge",
    "refund_charge",
    "suspend_subscription",
    "resume_subscription",
    "cancel_subscription",
    "change_subscription_card",
]
STOREFRONT = {
    "API_CREATE_PERMISSION_CLASSES": ["rest_framework.permissions.AllowAny"],
    "API_CHARGE_HOOK": "tests.api.hooks.order_amount",
    "API_CREATE_THROTTLE_RATE": None,
}


@pytest.fixture(scope="module")
def wsgi() -> Any:
    """Django's WSGI application, minus the connection closing at the end of each request.

    The test's transaction lives on the one connection; Django's own test client
    keeps it open the same way.
    """
    app = get_wsgi_application()

    def keep_connection(environ: Any, start_response: Any) -> list[bytes]:
        request_started.disconnect(close_old_connections)
        request_finished.disconnect(close_old_connections)
        try:
            response = app(environ, start_response)
            try:
                return [b"".join(response)]
            finally:
                response.close()
        finally:
            request_started.connect(close_old_connections)
            request_finished.connect(close_old_connections)

    return keep_connection


@pytest.mark.parametrize("caller", ["staff", "anonymous"])
@pytest.mark.parametrize("operation", OPERATIONS, ids=lambda op: op.label)
def test_no_request_drawn_from_the_schema_gets_a_5xx(
    gateway: Any, settings: Any, wsgi: Any, operation: Any, caller: str
) -> None:
    settings.PAYCHARGE = {**settings.PAYCHARGE, **STOREFRONT}
    # Generated Basic credentials are checked against a password hash each time: a fast
    # hasher keeps the run within seconds (what is tested is the API, not PBKDF2).
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    # Something to find: charges of each kind, one a bank transfer awaiting payment.
    known = {
        "charge_id": [
            str(gateway_charge(gateway, t).gateway_id) for t in ("card", "online", "bank_transfer")
        ],
        "webhook_id": [gateway.add_webhook("https://shop.example/payments/webhook/")["id"]],
        "subscription_id": [str(subscription(gateway).gateway_id)],
    }
    services.sync_webhooks()
    headers: dict[str, str] = {}
    if caller == "staff":
        user = User.objects.create_user("fuzz-staff", password="fuzz-password", is_staff=True)
        # Capture, cancel, refund and the subscription changes too: their success paths
        # are fuzzed as well.
        user.user_permissions.set(Permission.objects.filter(codename__in=STAFF_PERMISSIONS))
        token = base64.b64encode(f"{user.username}:fuzz-password".encode()).decode()
        headers["Authorization"] = f"Basic {token}"
    strategy = st.one_of(
        operation.as_strategy(generation_mode=GenerationMode.POSITIVE),
        operation.as_strategy(generation_mode=GenerationMode.NEGATIVE),
    )
    statuses: set[int] = set()
    valid = valid_case(operation)
    valid_statuses: list[int] = []

    @hypothesis.settings(settings_for_fuzz, max_examples=examples_for(operation))
    @given(case=strategy, real=st.booleans(), pick=st.integers(0, 3), kind=st.sampled_from(KINDS))
    @example(case=valid, real=True, pick=2, kind="card")  # pick 2: the bank transfer
    def send(case: Any, real: bool, pick: int, kind: str) -> None:
        if real:
            # Half the cases aim at things that exist, so the success paths are fuzzed too.
            for name in case.path_parameters or {}:
                case.path_parameters[name] = known[name][pick % len(known[name])]
            if isinstance(case.body, dict) and "transaction_token_id" in case.body:
                case.body["transaction_token_id"] = gateway.create_transaction_token(kind)["id"]
                case.body["reference"] = "A-1"  # an order the test hook knows
                if caller == "anonymous":
                    case.body.pop("amount", None)
                    case.body.pop("currency", None)
            path = case.operation.path
            if case.method == "POST" and path.endswith(("/capture/", "/refunds/", "/cancels/")):
                # A fresh charge the action can act on: its success path is fuzzed too.
                token = gateway.create_transaction_token("card")["id"]
                target = services.create_charge(
                    transaction_token_id=token,
                    amount=1200,
                    currency="JPY",
                    capture=not path.endswith("/capture/"),
                )
                case.path_parameters["charge_id"] = str(target.gateway_id)
                if isinstance(case.body, dict) and "currency" in case.body:
                    case.body["currency"] = "JPY"
            if "/subscriptions/" in path:
                aim_at_a_subscription(gateway, case)
        response = case.call(app=wsgi, headers=headers)
        statuses.add(response.status_code)
        if case is valid:
            valid_statuses.append(response.status_code)
        case.validate_response(response, checks=[not_a_server_error, response_schema_conformance])

    send()
    assert statuses and max(statuses) < 500
    if caller == "staff":  # the success path was fuzzed too, not only refusals
        assert valid_statuses and 200 <= valid_statuses[0] < 300, valid_statuses


def examples_for(operation: Any) -> int:
    return SUBSCRIPTION_EXAMPLES if "/subscriptions/" in operation.path else EXAMPLES


def subscription(gateway: Any, status: str = "current") -> Any:
    token = gateway.create_transaction_token(type="subscription")["id"]
    made = services.create_subscription(transaction_token_id=token, **SUBSCRIPTION)
    return services.suspend_subscription(made) if status == "suspended" else made


def aim_at_a_subscription(gateway: Any, case: Any) -> None:
    """A subscription the change can act on, and a token of type subscription in the body."""
    path = case.operation.path
    if isinstance(case.body, dict) and "transaction_token_id" in case.body:
        case.body["transaction_token_id"] = gateway.create_transaction_token(type="subscription")[
            "id"
        ]
        case.body.pop("reference", None)
    if case.method == "POST" and path.endswith("/subscriptions/") and case.body == {}:
        case.body.update(SUBSCRIPTION)  # the valid case: only its token was filled in
        case.body["transaction_token_id"] = gateway.create_transaction_token(type="subscription")[
            "id"
        ]
    if case.method == "POST" and not path.endswith("/subscriptions/"):
        status = "suspended" if path.endswith("/resume/") else "current"
        case.path_parameters["subscription_id"] = str(subscription(gateway, status).gateway_id)


def valid_case(operation: Any) -> Any:
    """A request the API accepts once the real branch fills in what exists.

    Run as an explicit example besides the drawn ones: the draws reach a
    success only by chance (the API has rules the schema cannot say), and a CI
    run once saw only 400 and 409 for staff creates.
    """
    parts: dict[str, Any] = {
        "path_parameters": dict.fromkeys(re.findall(r"{(\w+)}", operation.path), "filled-in")
    }
    if operation.method.upper() == "POST":
        creates = operation.path.endswith("/charges/")
        if operation.path.endswith("/subscriptions/"):
            parts["body"] = {}  # filled in by aim_at_a_subscription
        elif operation.path.endswith("/card/"):
            parts["body"] = {"transaction_token_id": "filled-in"}
        elif operation.get_request_payload_content_types():
            parts["body"] = {"transaction_token_id": "filled-in"} if creates else {}
    return operation.Case(**parts)


settings_for_fuzz = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)
