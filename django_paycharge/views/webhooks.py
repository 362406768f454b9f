"""The webhook receiver.

Policy (the gateway deletes a configuration whose receiver answers 3xx, 4xx,
500, 501 or 502):

- no or wrong ``Authorization`` (each account has its own tokens): 401,
  nothing stored;
- a genuine delivery: stored first, then answered 200, whatever happens when
  it is processed (bodies that are malformed, nested too deeply or too large
  are stored as failed);
- a repeat of a stored delivery: 200, not processed again; unless the stored
  one still waits, or is stuck (its worker died): then it is processed;
- the delivery could not be stored (database down, tokens misconfigured): 503,
  so the gateway retries.

This view is the request the gateway waits on; its cost per delivery is
measured against the floor a shop writes by ``bench/webhook_receipt.py`` ("receipt cost").
"""

from __future__ import annotations

import logging

from django.db import DatabaseError, transaction
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.translation import gettext
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from .. import conf, observe
from ..exceptions import ConfigurationError
from ..services.webhooks import delivery_token_matches, dispatch_delivery, store_delivery

logger = logging.getLogger("django_paycharge.webhooks")


def presented_token(header: str) -> str:
    """The token of an ``Authorization`` header: ``Bearer <token>`` or the bare token."""
    value = header.strip()
    scheme, _, rest = value.partition(" ")
    if scheme.lower() == "bearer" and rest.strip():
        return rest.strip()
    return value


def _unavailable() -> JsonResponse:
    return JsonResponse({"status": "error", "code": "UNAVAILABLE"}, status=503)


@csrf_exempt
@require_POST
@transaction.non_atomic_requests
def webhook(request: HttpRequest, account: str = conf.DEFAULT_ACCOUNT) -> HttpResponse:
    if account not in conf.account_names():
        return JsonResponse({"status": "error", "code": "UNKNOWN_ACCOUNT"}, status=404)
    token = presented_token(request.headers.get("Authorization", ""))
    try:
        authorized = delivery_token_matches(token, account)
    except ConfigurationError as exc:
        logger.error("Webhook auth check of account %r impossible: %s", account, exc)
        return _unavailable()
    except DatabaseError:
        logger.exception("Webhook auth check failed: database unavailable")
        return _unavailable()
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
    try:
        delivery, created = store_delivery(
            body=body, headers=dict(request.headers), account=account, problem=problem
        )
    except Exception:  # nothing was stored: any other answer than 503 loses it
        logger.exception("A webhook delivery could not be stored")
        return _unavailable()
    observe.delivery_received(account, delivery.event, created)
    # Deliveries stored as failed (malformed, too large) are not processed. A
    # repeat of one still waiting (its first dispatch failed) or stuck (its
    # worker died) is dispatched again: the gateway's retry is what rescues it.
    if delivery.awaits_processing():
        try:
            dispatch_delivery(delivery.pk)
        except Exception:  # stored is what matters; paycharge_process_webhooks takes it later
            logger.exception("Dispatching webhook delivery %s failed", delivery.pk)
    return JsonResponse({"status": "ok", "duplicate": not created})
