"""The floor of the receipt-cost benchmark: a minimal webhook view a shop could write.

It checks the ``Authorization`` header (constant time) and inserts one row
into the same table as ours, through the ORM, and answers 200. No dedupe, no
parsing, no processing: the least a receiver does. ``bench/webhooks.py``
compares the CPU our receiver costs per delivery with this one's.
"""

from __future__ import annotations

import hmac
import os
import uuid

from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from django_paycharge.models import WebhookDelivery

_EXPECTED = ("Bearer " + os.environ.get("BENCH_WEBHOOK_TOKEN", "bench-webhook-token")).encode()


@csrf_exempt
@require_POST
def minimal_webhook(request: HttpRequest) -> HttpResponse:
    if not hmac.compare_digest(request.headers.get("Authorization", "").encode(), _EXPECTED):
        return HttpResponse(status=401)
    WebhookDelivery.objects.create(
        dedupe_key=uuid.uuid4().hex,
        body=request.body.decode("utf-8", errors="replace"),
        received_at=timezone.now(),
        status=WebhookDelivery.Status.IGNORED,  # not ours to process
    )
    return HttpResponse("ok")
