"""A shop's receiver interrupted on a real worker is run again to the end, on every engine.

The worker processes a webhook delivery whose charge became ``successful``;
the shop's ``charge_status_changed`` receiver (tests/queues/shop) starts, and
the process running it is killed (SIGKILL) or the receiver raises. Once the
lease runs out (``WEBHOOK_LEASE_SECONDS``, 3 s here) the receiver runs again
and returns, with the same event id. django-tasks-db needs nothing more (the
lease sweep is a task); on Celery and RQ, ``paycharge_periodic`` runs past
the lease, as cron or beat would. A receiver that raised is woken by a
deferred task on every engine, no cron needed.
"""

from __future__ import annotations

import json
import os
import signal
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest
from django.core.management import call_command

from django_paycharge import services
from django_paycharge.models import Announcement, WebhookDelivery
from tests.reliability.conftest import write_record
from tests.waiting import wait_until

from .conftest import Worker, post_delivery

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

LEASE = 3


def _shop_receiver(queue: Worker, settings, folder: Path, mode: str) -> None:
    """Restart the fixture's worker with the shop's receiver and a short lease."""
    queue.stop()
    child = json.loads(queue.env["PAYCHARGE_CHILD_SETTINGS"])
    queue.env["PAYCHARGE_CHILD_SETTINGS"] = json.dumps({**child, "WEBHOOK_LEASE_SECONDS": LEASE})
    queue.env["PAYCHARGE_TEST_RECEIVER_DIR"] = str(folder)
    queue.env["PAYCHARGE_TEST_RECEIVER_MODE"] = mode
    settings.PAYCHARGE = {**settings.PAYCHARGE, "WEBHOOK_LEASE_SECONDS": LEASE}
    queue.supervised = True  # started again when it dies, as systemd would
    queue.start()


def _paid_by_webhook(gateway, client) -> None:
    token = gateway.create_transaction_token("bank_transfer")["id"]
    charge = services.create_charge(transaction_token_id=token, amount=1200, currency="JPY")
    gateway.complete(str(charge.gateway_id))
    body = {
        "id": str(uuid.uuid4()),
        "event": "charge_finished",
        "data": gateway.charges[str(charge.gateway_id)],
    }
    assert post_delivery(client, body).status_code == 200


def _runs(folder: Path) -> list[list[str]]:
    return [
        (folder / f"started-{n}").read_text().split()
        for n in range(1, len(list(folder.glob("started-*"))) + 1)
    ]


def _heard_to_the_end(queue: Worker, folder: Path, events: int) -> None:
    """After the lease: cron's (or beat's) run on Celery and RQ; nothing on django-tasks-db."""

    def heard_all() -> bool:
        if len(list(folder.glob("heard-*"))) >= events:
            return True
        _supervise(queue)
        if queue.kind != "db":
            time.sleep(LEASE + 1)
            call_command("paycharge_periodic", "--only", "sweep", "--only", "announcements")
        return False

    wait_until(heard_all, f"{events} events heard ({queue.kind})", every=0.5,
               diagnose=queue.diagnosis)  # fmt: skip


def _supervise(queue: Worker) -> None:
    if queue.process is not None and queue.process.poll() is not None:
        queue.restarts += 1
        queue.start(ready=False)  # the supervisor brings the killed worker back


def test_a_receiver_killed_mid_run_is_run_again_to_the_end(
    queue, fake_gateway_server, client, settings, tmp_path
):
    _shop_receiver(queue, settings, tmp_path, "hang")
    _paid_by_webhook(fake_gateway_server, client)
    queue.wait_for(lambda: (tmp_path / "started-1").exists(), "the receiver to start")
    pid, killed = _runs(tmp_path)[0][:2]
    os.kill(int(pid), signal.SIGKILL)  # the process running the receiver, mid-run
    _supervise(queue)
    for _ in range(2):  # payments keep coming meanwhile
        _paid_by_webhook(fake_gateway_server, client)
    _heard_to_the_end(queue, tmp_path, 3)
    runs = _runs(tmp_path)
    per_event = Counter(run[1] for run in runs)
    heard = {path.name.removeprefix("heard-") for path in tmp_path.glob("heard-*")}
    queue.wait_for(
        lambda: Announcement.objects.filter(status="heard").count() == 3,
        "every announcement marked heard",
    )
    rows = {str(row.event_id): row for row in Announcement.objects.all()}
    damage = {
        "not heard to the end": len(set(rows) - heard),
        "heard twice": sum(
            1 for event, n in per_event.items() if n > (2 if event == killed else 1)
        ),
    }
    write_record(
        f"Signal receiver killed mid-run ({queue.kind} worker)",
        "the shop's charge_status_changed receiver hangs on its first run; the process running "
        "it (the worker; RQ's work-horse) is SIGKILLed there, a dead worker restarted by its "
        "supervisor; two more payments "
        f"arrive; past the lease ({LEASE} s) "
        + ("the lease sweep task" if queue.kind == "db" else "paycharge_periodic")
        + " runs it again",
        len(rows),
        damage,
        note=f"deliveries {WebhookDelivery.objects.count()}, announcements {len(rows)}, "
        f"kills 1, receiver runs {len(runs)}, heard {len(heard)} of {len(rows)}; worker "
        f"restarted {queue.restarts} times",
    )
    assert damage == {"not heard to the end": 0, "heard twice": 0}
    assert per_event[killed] == 2 and rows[killed].attempts == 2
    assert runs[0][0] != [run[0] for run in runs if run[1] == killed][1]  # another process
    assert set(WebhookDelivery.objects.values_list("status", flat=True)) == {"processed"}


def test_a_receiver_that_raised_is_run_again_by_a_deferred_task(
    queue, fake_gateway_server, client, settings, tmp_path
):
    _shop_receiver(queue, settings, tmp_path, "raise")
    _paid_by_webhook(fake_gateway_server, client)
    queue.wait_for(lambda: bool(list(tmp_path.glob("heard-*"))), "the receiver heard")
    runs = _runs(tmp_path)
    assert len(runs) == 2 and runs[0][1] == runs[1][1]
    queue.wait_for(lambda: Announcement.objects.filter(status="heard").count() == 1, "marked heard")
    assert Announcement.objects.get().attempts == 2
