"""Dead processing workers: real processes SIGKILLed mid-delivery, then every way back.

Each case stores a genuine delivery for a charge the gateway completed, starts a
real process that claims and processes it (django-tasks-db's ``db_worker``,
``paycharge_process_webhooks``, or a web request processing inline), holds the
gateway's answer back (latency fault) and kills that process with SIGKILL while
it waits. The delivery is then claimed by a dead process: the admin must say so
(processing under a live lease, then stuck once it runs out), and one recovery
path must process it: the lease sweep of the next worker run, the command with
and without ``--failed``, the gateway's redelivery, or the admin's Reprocess.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from django.contrib.messages import get_messages
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from django_paycharge import services
from django_paycharge.models import Charge, WebhookDelivery
from tests.waiting import ended_report, finish, wait_exit, wait_until

from .conftest import ROOT, child_env

pytestmark = pytest.mark.django_db(transaction=True)

TOKEN = "whk-dead-worker-token-0123456789"
LEASE = 1
CHILD = Path(__file__).with_name("worker_child.py")
DELIVERIES = reverse("admin:django_paycharge_webhookdelivery_changelist")
WORKER = ["db_worker", "--batch", "--interval", "0", "--no-startup-delay"]
#: (what dies, how it is rescued)
CASES = [
    ("db_worker", "sweep of the next worker run"),
    ("db_worker", "paycharge_process_webhooks"),
    ("db_worker", "paycharge_process_webhooks --failed"),
    ("db_worker", "the gateway's redelivery"),
    ("db_worker", "admin Reprocess"),
    ("paycharge_process_webhooks", "paycharge_process_webhooks"),
    ("web request (inline)", "the gateway's redelivery"),
]


@pytest.fixture
def shop(fake_gateway_server, settings):
    settings.PAYCHARGE = {
        **settings.PAYCHARGE,
        "WEBHOOK_AUTH_TOKENS": [TOKEN],
        "WEBHOOK_LEASE_SECONDS": LEASE,
        "MAX_RETRIES": 0,
    }
    settings.TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
    return fake_gateway_server


def start(server, args, *, tasks=True):
    paycharge = {
        **server.settings(),
        "WEBHOOK_AUTH_TOKENS": [TOKEN],
        "WEBHOOK_LEASE_SECONDS": LEASE,
        "MAX_RETRIES": 0,
        "TASKS": "auto" if tasks else "inline",
    }
    env = child_env(
        {
            "PAYCHARGE_CHILD_SETTINGS": json.dumps(paycharge),
            "PAYCHARGE_CHILD_TASKS": "db" if tasks else "",
        }
    )
    return subprocess.Popen(
        [sys.executable, str(CHILD), *args], env=env, cwd=ROOT,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def deliveries_report() -> str:
    return str(list(WebhookDelivery.objects.values("delivery_id", "status", "lease_until")))


def run_to_the_end(child):
    code, output = finish(child, "the worker run", diagnose=deliveries_report)
    assert code == 0, output


def wait_in(child, condition, what):
    """Until ``condition()``, while the child runs (it ending first fails at once)."""
    wait_until(
        condition,
        what,
        running=[child],
        diagnose=lambda: f"{ended_report(child)}\n{deliveries_report()}",
    )


def post(client, body):
    return client.post(
        "/payments/webhook/", data=json.dumps(body), content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {TOKEN}",
    )  # fmt: skip


def test_a_delivery_whose_worker_died_is_processed_by_the_next_run(
    shop, client, admin_client, settings, reliability_record
):
    damage = {"stranded_deliveries": 0, "lost_deliveries": 0, "5xx": 0, "mirror_wrong": 0}
    told = {"live_lease_shown": 0, "stuck_shown": 0}
    for n, (victim, rescue) in enumerate(CASES):
        token = shop.create_transaction_token("bank_transfer")["id"]
        charge = services.create_charge(transaction_token_id=token, amount=600 + n, currency="JPY")
        shop.complete(str(charge.gateway_id))
        body = {
            "id": str(uuid.uuid4()),
            "event": "charge_finished",
            "data": shop.charges[str(charge.gateway_id)],
        }
        # The charge read hangs: the process is killed while it waits for the gateway.
        hang = shop.add_fault(
            "GET", f"/charges/{charge.gateway_id}$", action="latency", latency=6, count=1
        )
        inline = victim.startswith("web request")
        settings.PAYCHARGE = {**settings.PAYCHARGE, "TASKS": "inline" if inline else "auto"}
        if inline:
            child = start(
                shop, ["post", "/payments/webhook/", TOKEN, json.dumps(body)], tasks=False
            )
        else:
            response = post(client, body)
            damage["5xx"] += response.status_code >= 500
            args = WORKER if victim == "db_worker" else [victim]
            child = start(shop, args)
        claimed = WebhookDelivery.objects.filter(delivery_id=body["id"], status="processing")
        wait_in(child, claimed.exists, "the child to claim the delivery")
        # Killed while its read of the charge hangs at the gateway (the fault has fired).
        wait_in(child, lambda f=hang: f.fired, "the child to read the charge")
        os.kill(child.pid, signal.SIGKILL)
        assert wait_exit(child, "the killed child") == -signal.SIGKILL
        delivery = WebhookDelivery.objects.get(delivery_id=body["id"])

        page = admin_client.get(DELIVERIES)
        damage["5xx"] += page.status_code >= 500
        assert delivery.lease_until is not None
        if delivery.lease_until > timezone.now():
            told["live_lease_shown"] += "Processing (lease until" in page.content.decode()
        # Past the lease, and past the sweep the dead worker's claim scheduled.
        time.sleep(max(0.0, (delivery.lease_until - timezone.now()).total_seconds() + 1.1))
        page = admin_client.get(DELIVERIES, {"status__exact": "stuck"})
        damage["5xx"] += page.status_code >= 500
        told["stuck_shown"] += [d.pk for d in page.context["cl"].result_list] == [delivery.pk]

        if rescue == "sweep of the next worker run":
            run_to_the_end(start(shop, WORKER))
        elif rescue.startswith("paycharge_process_webhooks"):
            call_command(*rescue.split())
        elif rescue == "the gateway's redelivery":
            response = post(client, body)
            damage["5xx"] += response.status_code >= 500
            assert response.json() == {"status": "ok", "duplicate": True}
            if not inline:
                run_to_the_end(start(shop, WORKER))
        else:
            response = admin_client.post(
                DELIVERIES, {"action": "reprocess", "_selected_action": [delivery.pk]}, follow=True
            )
            damage["5xx"] += response.status_code >= 500
            [message] = [str(m) for m in get_messages(response.wsgi_request)]
            assert "was stuck (its worker died); taken over and reprocessed" in message

        stored = WebhookDelivery.objects.filter(delivery_id=body["id"])
        damage["lost_deliveries"] += not stored.exists()
        damage["stranded_deliveries"] += not stored.filter(status="processed").exists()
        damage["mirror_wrong"] += Charge.objects.get(pk=charge.pk).status != "successful"
    assert told["stuck_shown"] == len(CASES)  # and each one was processed (damage below)
    reliability_record(
        "Dead processing workers (SIGKILL mid-delivery)",
        "a real db_worker, paycharge_process_webhooks or inline web request SIGKILLed while "
        "it waits for the gateway's answer; rescued by the next worker run's lease sweep, "
        "paycharge_process_webhooks (with and without --failed), the gateway's redelivery "
        f"or the admin's Reprocess; lease {LEASE} s",
        len(CASES),
        damage,
        note=f"stuck shown in the admin {told['stuck_shown']} of {len(CASES)}; "
        f"live lease shown {told['live_lease_shown']}",
    )
