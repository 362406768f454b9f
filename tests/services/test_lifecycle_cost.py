"""What a capture and a refund cost when nothing goes wrong: gateway calls and SQL statements.

The mirror already knows the charge (the webhook or the customer's return
stored it, as before any staff action): the gateway's answer to the action is
its new state, so a refund is its one POST. A capture's answer does not hold
the charge (the SDK documents ``{}``, and an accepted capture of a lapsed
authorization ends ``failed``, error 313): the charge is read once after it.

Counted on a connection of its own transactions (``transaction=True``), as a
shop's request runs them: every statement the database is sent, the ``BEGIN``
of SQLite's transactions included.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from django_paycharge import services
from django_paycharge.models import Charge, ChargeActionRequest, Refund

pytestmark = pytest.mark.django_db(transaction=True)

#: The issue's bound on the statements of a capture or a refund.
MOST_STATEMENTS = 10
#: A refund's: its request committed (BEGIN, the charge locked, what is left to refund in
#: one read, the insert that looks for another request being sent or the key's holder
#: itself, COMMIT), then the answer stored and the request marked done (two statements,
#: each its own transaction; on PostgreSQL one: the UPDATE takes the refund's id from the
#: INSERT).
REFUND_STATEMENTS = {"sqlite": 7, "postgresql": 6}
#: A capture's: its request committed (BEGIN, the charge locked, the insert, COMMIT), then
#: the charge it read stored with the request's success (BEGIN, the rows locked, the write,
#: the row read back, the success, COMMIT).
CAPTURE_STATEMENTS = 10


def known(fake_gateway: Any, *, capture: bool) -> Charge:
    """A charge the mirror knows as the gateway has it (``authorized`` or ``successful``)."""
    token = fake_gateway.create_transaction_token("card")["id"]
    made = services.create_charge(
        transaction_token_id=token, amount=1000, currency="JPY", capture=capture
    )
    return services.refresh_charge(made.gateway_id)


def calls(fake_gateway: Any) -> list[tuple[str, str]]:
    return [(r["method"], r["path"]) for r in fake_gateway.requests_log]


@pytest.mark.parametrize("key", [None, "order-17-refund-1"])
def test_a_refund_is_one_post_and_at_most_ten_statements(fake_gateway, key):
    charge = known(fake_gateway, capture=True)
    before = len(fake_gateway.requests_log)
    with CaptureQueriesContext(connection) as queries:
        refund = services.refund_charge(charge, amount=400, idempotency_key=key)
    made = calls(fake_gateway)[before:]
    assert made == [("POST", f"/stores/{charge.store_id}/charges/{charge.gateway_id}/refunds")]
    most = min(MOST_STATEMENTS, REFUND_STATEMENTS[connection.vendor])
    assert len(queries) <= most, [q["sql"] for q in queries]
    # The answer is the state: stored as the gateway said it, the request linked to it.
    assert refund.status == "pending" and refund.amount == 400
    assert Refund.objects.get().pk == refund.pk
    assert ChargeActionRequest.objects.get().refund_id == refund.pk


def test_a_capture_is_its_post_and_one_read_and_eleven_statements(fake_gateway):
    charge = known(fake_gateway, capture=False)
    assert charge.status == "authorized"
    before = len(fake_gateway.requests_log)
    with CaptureQueriesContext(connection) as queries:
        captured = services.capture_charge(charge)
    one = f"/stores/{charge.store_id}/charges/{charge.gateway_id}"
    assert calls(fake_gateway)[before:] == [("POST", f"{one}/capture"), ("GET", one)]
    assert len(queries) <= CAPTURE_STATEMENTS, [q["sql"] for q in queries]
    assert captured.status == "successful" and captured.charged_amount == 1000
    assert ChargeActionRequest.objects.get().state == "succeeded"


def test_a_mirror_behind_the_gateway_is_read_before_it_refuses(fake_gateway):
    """Captured elsewhere (the gateway's dashboard), no webhook yet: the mirror still says
    ``authorized``, so the charge is read once, then refunded."""
    charge = known(fake_gateway, capture=False)
    one = f"/stores/{charge.store_id}/charges/{charge.gateway_id}"
    assert fake_gateway.request("POST", f"{one}/capture").status == 200
    before = len(fake_gateway.requests_log)
    refund = services.refund_charge(charge, amount=100)
    assert refund.amount == 100
    assert calls(fake_gateway)[before:] == [("GET", one), ("POST", f"{one}/refunds")]
