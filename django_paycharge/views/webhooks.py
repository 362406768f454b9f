"""The webhook receiver.

Policy (the gateway deletes a configuration whose receiver answers 3xx, 4xx,
500, 501 or 502):

- no or wrong ``Authorization``: 401, nothing stored;
- a genuine delivery: stored first, then answered 200, whatever happens when
  it is processed (malformed or oversized bodies are stored as failed); with
  django-tasks-db its processing task is enqueued in the same transaction;
- a repeat of a stored delivery: 200, not processed again;
- the delivery could not be stored (database down): 503, so the gateway retries.
"""

from __future__ import annotations

import logging

from django.db import DatabaseError, transaction
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.translation import gettext
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from .. import conf
from ..models import WebhookConfiguration, WebhookDelivery
from ..services import matches_auth_token
from ..services.deliveries import store_delivery
from ..tasks import dispatch_delivery, enqueue_delivery, enqueues_with_deliveries

logger = logging.getLogger("django_paycharge.webhooks")


def presented_token(header: str) -> str:
    """The token of an ``Authorization`` header: ``Bearer <token>`` or the bare token."""
    value = header.strip()
    scheme, _, rest = value.partition(" ")
    if scheme.lower() == "bearer" and rest.strip():
        return rest.strip()
    return value


def is_authorized(token: str, account: str) -> bool:
    """Whether ``token`` is one of the configured tokens or a synced configuration's."""
    if not token:
        return False
    # Configured tokens first: the common case then costs no query.
    tokens = list(conf.get_setting("WEBHOOK_AUTH_TOKENS") or [])
    if matches_auth_token(token, (), tokens):
        return True
    digests = (
        WebhookConfiguration.objects.filter(account=account, removed_at__isnull=True)
        .exclude(auth_token_digest="")
        .values_list("auth_token_digest", flat=True)
    )
    return matches_auth_token(token, list(digests), ())


@csrf_exempt
@require_POST
@transaction.non_atomic_requests
def webhook(request: HttpRequest, account: str = conf.DEFAULT_ACCOUNT) -> HttpResponse:
    if account not in conf.account_names():
        return JsonResponse({"status": "error", "code": "UNKNOWN_ACCOUNT"}, status=404)
    token = presented_token(request.headers.get("Authorization", ""))
    try:
        authorized = is_authorized(token, account)
    except DatabaseError:
        logger.exception("Webhook auth check failed: database unavailable")
        return JsonResponse({"status": "error", "code": "UNAVAILABLE"}, status=503)
    if not authorized:
        return JsonResponse({"status": "error", "code": "NOT_AUTHENTICATED"}, status=401)
    limit = int(conf.get_setting("WEBHOOK_MAX_BODY_BYTES"))
    # Read the stream ourselves: request.body would answer 400 past Django's own
    # upload limit, and a 4xx makes the gateway delete the configuration.
    body = request.read(limit + 1)
    problem = ""
    if len(body) > limit:
        body = body[:limit]
        problem = gettext(
            "The body is larger than WEBHOOK_MAX_BODY_BYTES (%(limit)d bytes); truncated."
        ) % {"limit": limit}
    headers = {k: v for k, v in request.headers.items()}
    try:
        together = enqueues_with_deliveries()
    except Exception:  # a misconfigured backend: dispatching below logs it
        together = False
    try:
        delivery, created = store_delivery(
            body=body,
            headers=headers,
            account=account,
            problem=problem,
            on_stored=enqueue_delivery if together else None,
        )
    except Exception:  # nothing was stored: any other answer than 503 loses it
        logger.exception("A webhook delivery could not be stored")
        return JsonResponse({"status": "error", "code": "UNAVAILABLE"}, status=503)
    # Deliveries stored as failed (malformed, too large) are not processed.
    if created and not together and delivery.status == WebhookDelivery.Status.RECEIVED:
        try:
            dispatch_delivery(delivery.pk)
        except Exception:  # stored is what matters; processing is retried later
            logger.exception("Dispatching webhook delivery %s failed", delivery.pk)
    return JsonResponse({"status": "ok", "duplicate": not created})
