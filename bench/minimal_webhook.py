"""The contenders of the receipt-cost benchmark: minimal webhook views a shop could write.

Both check the ``Authorization`` header (constant time), insert one row
through the ORM and answer 200. No dedupe, no parsing, no processing: the
least a receiver does.

- :func:`floor_webhook`, **the floor**: the row goes into a table of the shop's
  own with 3 columns (``bench/floor``: id, body, received_at), as a shop that
  writes its own receiver would keep it;
- :func:`full_table_webhook`: the row goes into our delivery table (16
  columns, 7 indexes). Ours against it is our code's cost alone; it against
  the floor is what our table costs.

``bench/webhook_receipt.py`` compares the CPU our receiver costs per delivery
with theirs.
"""

from __future__ import annotations

import hmac
import os
import uuid

from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from bench.floor.models import Receipt
from django_paycharge.models import WebhookDelivery

_EXPECTED = ("Bearer " + os.environ.get("BENCH_WEBHOOK_TOKEN", "bench-webhook-token")).encode()


def _authorized(request: HttpRequest) -> bool:
    return hmac.compare_digest(request.headers.get("Authorization", "").encode(), _EXPECTED)


@csrf_exempt
@require_POST
def floor_webhook(request: HttpRequest) -> HttpResponse:
    if not _authorized(request):
        return HttpResponse(status=401)
    Receipt.objects.create(body=request.body.decode(), received_at=timezone.now())
    return HttpResponse("ok")


@csrf_exempt
@require_POST
def full_table_webhook(request: HttpRequest) -> HttpResponse:
    if not _authorized(request):
        return HttpResponse(status=401)
    WebhookDelivery.objects.create(
        dedupe_key=uuid.uuid4().hex,
        body=request.body.decode("utf-8", errors="replace"),
        received_at=timezone.now(),
        status=WebhookDelivery.Status.IGNORED,  # not ours to process
    )
    return HttpResponse("ok")
