"""A broker outage loses nothing: Redis is stopped mid-run, deliveries keep arriving.

While the broker is down the webhook view still stores each delivery and
answers 200 (the gateway must not retry or give up); queuing its task fails.
When Redis is back, the periodic sweep sends on what was never queued, and
every delivery ends processed exactly once.
"""

from __future__ import annotations

import uuid

import pytest
from django.core.management import call_command

from django_paycharge.models import Charge, WebhookDelivery
from tests.reliability.conftest import write_record

from .backends import selected
from .conftest import post_delivery

pytestmark = pytest.mark.django_db(transaction=True)
BROKERS = [k for k in selected() if k in ("rq", "celery")]


def _post_finished_charges(gateway, client, count):
    for _ in range(count):
        token = gateway.create_transaction_token("card")["id"]
        charge = gateway.create_charge(token, amount=1200, currency="JPY")
        body = {"id": str(uuid.uuid4()), "event": "charge_finished", "data": charge}
        assert post_delivery(client, body).json() == {"status": "ok", "duplicate": False}


@pytest.mark.parametrize("queue", BROKERS, indirect=True)
def test_deliveries_stored_during_an_outage_are_processed_once(
    queue, redis_server, fake_gateway_server, client, settings, caplog
):
    # RQ's worker exits when it loses Redis (Celery's reconnects): run under a
    # process supervisor (docs/deployment.md), it is started again.
    queue.supervised = True
    _post_finished_charges(fake_gateway_server, client, 3)
    queue.wait_for(
        lambda: WebhookDelivery.objects.filter(status="processed").count() == 3,
        "the first deliveries processed",
    )

    redis_server.stop()
    _post_finished_charges(fake_gateway_server, client, 4)  # each answered 200, above
    assert WebhookDelivery.objects.filter(status="received").count() == 4
    assert caplog.text.count("Dispatching webhook delivery") == 4  # queuing failed, logged

    # A sweep while the broker is still down sends nothing and loses nothing.
    settings.PAYCHARGE = {**settings.PAYCHARGE, "SWEEP_AFTER": 0}
    with pytest.raises(Exception):  # noqa: B017 the broker's own connection error
        call_command("paycharge_periodic", "--only", "sweep")
    assert WebhookDelivery.objects.filter(status="received").count() == 4

    redis_server.start()
    _post_finished_charges(fake_gateway_server, client, 2)  # queued as usual again
    call_command("paycharge_periodic", "--only", "sweep")
    queue.wait_for(
        lambda: WebhookDelivery.objects.filter(status="processed").count() == 9,
        "every delivery processed",
    )
    # Once each: one claim per delivery, and a later sweep finds nothing to send.
    call_command("paycharge_periodic", "--only", "sweep")
    attempts = list(WebhookDelivery.objects.values_list("attempts", flat=True))
    write_record(
        f"Broker outage ({queue.kind} worker)",
        "Redis stopped mid-run while deliveries keep arriving (4 stored during the outage), "
        "a sweep during the outage, Redis back, the periodic sweep",
        len(attempts),
        {
            "lost": WebhookDelivery.objects.exclude(status="processed").count(),
            "processed twice": sum(1 for a in attempts if a > 1),
            "charges not updated": 9 - Charge.objects.filter(status="successful").count(),
        },
        note=f"worker restarted by its supervisor {queue.restarts} times",
    )
    assert attempts == [1] * 9
    assert Charge.objects.filter(status="successful").count() == 9
    assert WebhookDelivery.objects.exclude(status="processed").count() == 0
