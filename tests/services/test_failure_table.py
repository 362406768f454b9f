"""docs/services.md's table of failures, row by row: each class driven through the fake.

The table is read from the page (a row without a driver here fails, and so does a
driver without its row); for each, a create meets that failure, and the test checks
the outcome, what the customer reads, the log level and whether money may have moved.
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import requests
import responses
import urllib3.exceptions

from django_paycharge import services
from django_paycharge.exceptions import (
    ChargeOutcomeUnknownError,
    PayChargeError,
    PermissionDeniedError,
)
from django_paycharge.models import ChargeActionRequest, ChargeRequest, OwnerProblem

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_owner_problems")]

DOCS = Path(__file__).resolve().parents[2] / "docs" / "services.md"
UNREACHABLE = "https://unreachable.paycharge.test"


def failure_table() -> list[dict[str, str]]:
    """The rows of the table that follows ``<!-- failure-table -->`` in docs/services.md."""
    text = DOCS.read_text(encoding="utf-8").split("<!-- failure-table -->", 1)[1].lstrip()
    lines = []
    for line in text.splitlines():
        if not line.startswith("|"):
            break
        lines.append([cell.strip() for cell in line.strip().strip("|").split(" | ")])
    header, _rule, *rows = lines
    return [dict(zip(header, row, strict=True)) for row in rows]


def _answer(status: int, code: str | None = None) -> Callable[[Any, Any], None]:
    def drive(gateway: Any, settings: Any) -> None:
        body = {"status": "error", "code": code, "errors": []} if code else None
        gateway.add_fault("POST", r"^/charges$", action="status", status=status, body=body)
        _reads_fail(gateway)

    return drive


def _reads_fail(gateway: Any) -> None:
    # The request cannot be looked for either: the outcome stays unknown.
    gateway.add_fault("GET", r"^/charges$", action="status", status=503)


def _wrong_secret(gateway: Any, settings: Any) -> None:
    settings.PAYCHARGE = {**settings.PAYCHARGE, "SECRET": "wrong-secret-value"}


def _connection_refused(gateway: Any, settings: Any) -> None:
    settings.PAYCHARGE = {**settings.PAYCHARGE, "BASE_URL": UNREACHABLE}
    gateway.mock.add("POST", f"{UNREACHABLE}/charges", body=_refused_connection())


def _reset_after_sending(gateway: Any, settings: Any) -> None:
    gateway.add_fault("POST", r"^/charges$", action="drop_after")
    _reads_fail(gateway)


def _unreadable(gateway: Any, settings: Any) -> None:
    gateway.add_fault("POST", r"^/charges$", action="malformed")
    _reads_fail(gateway)


DRIVERS: dict[str, Callable[[Any, Any], None]] = {
    "refused by the gateway": _answer(400, "TRANSACTION_TOKEN_EXPIRED"),
    "owner's misconfiguration": _wrong_secret,
    "not sent": _connection_refused,
    "unknown: time-out": _reset_after_sending,
    "rate-limited": _answer(429),
    "busy": _answer(409, "IDEMPOTENCY_KEY_IN_PROGRESS"),
    "gateway 5xx": _answer(500),
    "unreadable answer": _unreadable,
}


def test_every_row_has_a_driver_and_every_driver_a_row() -> None:
    assert [row["class"] for row in failure_table()] == list(DRIVERS)


@pytest.mark.parametrize("row", failure_table(), ids=lambda row: row["class"])
def test_each_class_of_failure_is_told_as_the_table_says(
    row: dict[str, str], fake_gateway: Any, settings: Any, caplog: pytest.LogCaptureFixture
) -> None:
    token = fake_gateway.create_transaction_token("card")["id"]
    settings.PAYCHARGE = {**settings.PAYCHARGE, "MAX_RETRIES": 0, "CREATE_SETTLE_SECONDS": 0.0}
    DRIVERS[row["class"]](fake_gateway, settings)
    caplog.set_level(logging.DEBUG, logger="django_paycharge")
    with pytest.raises(PayChargeError) as info:
        services.create_charge(
            transaction_token_id=token, amount=500, currency="JPY", idempotency_key="order-1"
        )
    exc = info.value
    assert exc.outcome == row["outcome"].strip("`")
    assert exc.customer_message == row["customer reads"]
    ours = [r for r in caplog.records if r.name == "django_paycharge.services"]
    assert logging.getLevelName(max(r.levelno for r in ours)) == row["log level"]
    assert "wrong-secret-value" not in caplog.text
    check = services.check_charge_request("order-1")
    assert check is not None
    money_moved = row["money may have moved"] == "yes"
    assert check.may_pay_again is not money_moved
    assert check.request.state == ("abandoned" if money_moved else check.request.state)
    if row["outcome"] == "`not_sent`":
        assert check.request.state == "not_sent" and check.outcome == "not_sent"
        problem = OwnerProblem.objects.get()
        assert problem.kind == ("credentials" if exc.http_status == 401 else "unreachable")
        assert problem.count == 1
    else:
        assert not OwnerProblem.objects.exists()


def test_a_not_sent_create_asked_again_with_its_key_is_sent_again(
    fake_gateway: Any, settings: Any
) -> None:
    token = fake_gateway.create_transaction_token("card")["id"]
    good = dict(settings.PAYCHARGE)
    _wrong_secret(fake_gateway, settings)
    with pytest.raises(PayChargeError) as info:
        services.create_charge(
            transaction_token_id=token, amount=500, currency="JPY", idempotency_key="order-2"
        )
    assert info.value.outcome == "not_sent"
    assert fake_gateway.charges == {}
    settings.PAYCHARGE = good  # the owner fixed the secret
    charge = services.create_charge(
        transaction_token_id=token, amount=500, currency="JPY", idempotency_key="order-2"
    )
    assert list(fake_gateway.charges) == [str(charge.gateway_id)]
    assert ChargeRequest.objects.get().state == "succeeded"
    assert not OwnerProblem.objects.filter(services.problems.current()).exists()


def test_the_table_says_when_money_may_have_moved() -> None:
    for row in failure_table():
        assert row["money may have moved"] in ("yes", "no"), row
        assert re.fullmatch(r"`\w+`", row["outcome"]), row


def _refused_connection() -> requests.ConnectionError:
    refused = urllib3.exceptions.NewConnectionError(None, "[Errno 111] Connection refused")  # type: ignore[arg-type]  # urllib3 wants the connection; none was made
    return requests.ConnectionError(urllib3.exceptions.MaxRetryError(None, "/charges", refused))  # type: ignore[arg-type]  # likewise, no pool


def test_a_round_that_never_left_after_one_that_may_have_stays_unknown(settings: Any) -> None:
    """A 500 may hide a charge made: a later round refused at connect says nothing of it."""
    settings.PAYCHARGE = {**settings.PAYCHARGE, "BASE_URL": UNREACHABLE, "MAX_RETRIES": 0}
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        mock.post(f"{UNREACHABLE}/charges", status=500, json={"status": "error", "code": None})
        mock.post(f"{UNREACHABLE}/charges", body=_refused_connection())
        mock.get(f"{UNREACHABLE}/charges", status=503)  # nor can it be looked for
        with pytest.raises(ChargeOutcomeUnknownError) as info:
            services.create_charge(
                transaction_token_id=str(uuid.uuid4()), amount=500, currency="JPY"
            )
        posts = [c for c in mock.calls if c.request.method == "POST"]
    assert info.value.outcome == "unknown" and len(posts) >= 2
    assert ChargeRequest.objects.get().state == "abandoned"


def test_a_refund_not_sent_is_raised_again_with_its_key_and_not_sent_again(
    fake_gateway: Any, settings: Any
) -> None:
    charge = services.create_charge(
        transaction_token_id=fake_gateway.create_transaction_token("card")["id"],
        amount=1000,
        currency="JPY",
    )
    fake_gateway.add_fault(
        "POST",
        r"/refunds$",
        action="status",
        status=403,
        body={"status": "error", "code": "INVALID_PERMISSIONS", "errors": []},
    )
    for _ in range(2):
        with pytest.raises(PermissionDeniedError) as info:
            services.refund_charge(charge, amount=100, idempotency_key="refund-1")
        assert info.value.outcome == "not_sent"
    posts = [r for r in fake_gateway.requests_log if r["path"].endswith("/refunds")]
    assert len(posts) == 1  # asked again with its key: raised again, not sent again
    request = ChargeActionRequest.objects.get(kind="refund")
    assert request.state == "not_sent"
    charge.refresh_from_db()
    assert services.refundable_amount(charge) == 1000  # nothing reserved: nothing was done
    assert OwnerProblem.objects.get().kind == "permissions"
