"""Logs that join up: the gateway's request id in our log lines, on deliveries and requests."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import pytest

from django_paycharge import services
from django_paycharge.models import ChargeRequest, WebhookDelivery
from django_paycharge.observe.logs import ContextFilter, JsonFormatter
from django_paycharge.services.webhooks.deliveries import process_delivery, store_delivery

pytestmark = pytest.mark.django_db


class Keep(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.addFilter(ContextFilter())
        self.setFormatter(JsonFormatter())
        self.records: list[logging.LogRecord] = []
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)
        self.lines.append(self.format(record))


@pytest.fixture
def kept() -> Iterator[Keep]:
    handler = Keep()
    logger = logging.getLogger("django_paycharge")
    level = logger.level
    logger.setLevel(logging.DEBUG)
    logger.addHandler(handler)
    yield handler
    logger.removeHandler(handler)
    logger.setLevel(level)


def attempts(kept: Keep, method: str) -> list[logging.LogRecord]:
    return [r for r in kept.records if getattr(r, "paycharge_method", None) == method]


def test_a_delivery_its_log_lines_and_its_gateway_read_share_one_request_id(kept, fake_gateway):
    created = fake_gateway.create_charge(fake_gateway.create_transaction_token("card")["id"])
    body = {"id": "j-1", "event": "charge_finished", "data": fake_gateway.charges[created["id"]]}
    delivery, _ = store_delivery(body=json.dumps(body).encode(), headers={}, account="default")
    kept.records.clear()
    assert process_delivery(delivery.pk) == "processed"
    stored = WebhookDelivery.objects.get(pk=delivery.pk)
    reads = attempts(kept, "GET")
    assert reads and all(vars(r)["paycharge_delivery"] == str(delivery.pk) for r in reads)
    assert stored.gateway_request_id == vars(reads[-1])["paycharge_request_id"]
    assert stored.gateway_request_id  # the fake's X-Request-Id
    # One JSON object a line, the ids as fields.
    line = json.loads(kept.lines[kept.records.index(reads[-1])])
    assert line["paycharge_delivery"] == str(delivery.pk)
    assert line["paycharge_request_id"] == stored.gateway_request_id
    assert line["logger"] == "django_paycharge.client" and line["level"] == "DEBUG"
    # A line logged after the work holds none of its ids.
    logging.getLogger("django_paycharge.services").info("later")
    assert kept.records[-1].paycharge_delivery is None
    assert kept.records[-1].paycharge_request_id is None


def test_a_charge_request_keeps_the_request_id_of_the_answer_that_created_it(kept, fake_gateway):
    charge = services.create_charge(
        transaction_token_id=fake_gateway.create_transaction_token("card")["id"],
        amount=1500,
        currency="JPY",
        idempotency_key="order-77-attempt-1",
    )
    request = ChargeRequest.objects.get(charge=charge)
    [post] = attempts(kept, "POST")
    assert vars(post)["paycharge_charge_request"] == "order-77-attempt-1"
    assert request.gateway_request_id == vars(post)["paycharge_request_id"]
    assert request.gateway_request_id


def test_a_refused_request_keeps_its_request_id_in_its_error(kept, fake_gateway):
    from django_paycharge.testing import CARD_DECLINED

    token = fake_gateway.create_transaction_token("card", card_number=CARD_DECLINED)
    fake_gateway.add_fault("POST", r"^/charges$", action="status", status=400)
    with pytest.raises(Exception, match="400"):
        services.create_charge(transaction_token_id=token["id"], amount=1, currency="JPY")
    request = ChargeRequest.objects.get()
    [post] = attempts(kept, "POST")
    assert request.error is not None
    assert request.error["request_id"] == vars(post)["paycharge_request_id"]
    assert vars(post)["paycharge_charge_request"] == str(request.idempotency_key)


def test_the_formatter_keeps_a_traceback_and_drops_empty_fields():
    formatter = JsonFormatter()
    try:
        raise ValueError("boom")
    except ValueError:
        record = logging.LogRecord("x", logging.ERROR, "f", 1, "failed %s", ("here",), None)
        import sys

        record.exc_info = sys.exc_info()
    record.paycharge_delivery = None
    entry = json.loads(formatter.format(record))
    assert entry["message"] == "failed here"
    assert "ValueError: boom" in entry["traceback"]
    assert "paycharge_delivery" not in entry
