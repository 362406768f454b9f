"""The ``Idempotency-Key`` request header of the app's API, as a decorator for view methods.

    @idempotent("charges.create")
    def post(self, request): ...

- No header: the method runs as usual.
- A key this caller has not used: the method runs; a final answer (a 2xx or 4xx)
  is kept and returned with ``Idempotency-Status: successfully_stored``. An
  answer that is not final keeps nothing, so the same request can be sent
  again and get the final one: a 5xx, a 408, 425 or 429, any answer carrying
  ``Retry-After`` (an outcome the gateway has not told yet, a charge busy with
  another action), or an unhandled exception.
- The same key and the same request again: the kept answer, with
  ``Idempotency-Status: retrieved_idempotent_response`` (the gateway's own words).
- The same key with another request: 409 ``idempotency_key_reused``.
- The same key while the first request still runs: 409
  ``idempotency_key_in_progress``, with ``Retry-After``. A first request
  that died keeps its key for :data:`STALE`, unless the service's request
  row behind the key has ended (settled by ``paycharge_recover``, say): then
  the same request runs again and the service's key finds that row's outcome.

Keys are scoped by the decorator's ``purpose`` and the caller (the user, or
"anonymous"): the same key from two users is two keys. An anonymous caller
replays only a request identical to the first, body included, so knowing
someone's key is not enough to read their answer. Answers are kept for
:data:`RETENTION`. :func:`caller_key` turns the header into a key for a service
(``create_charge(idempotency_key=...)``), so a request retried after a 5xx
joins the work of the first one instead of doing it twice.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable
from datetime import timedelta
from typing import Any, TypeVar

from django.utils import timezone
from django.utils.translation import gettext as _
from rest_framework.request import Request
from rest_framework.response import Response

from ..client.validation import validate_idempotency_key
from ..exceptions import FieldError, InvalidParametersError
from ..models import (
    OPEN_REQUEST_STATES,
    ApiIdempotencyRecord,
    ChargeActionRequest,
    ChargeRequest,
    SubscriptionRequest,
)
from ..models.fit import without_nul
from ..services import retry_transient
from .errors import error_response

HEADER = "Idempotency-Key"
STATUS_HEADER = "Idempotency-Status"
#: How long an answer is replayed.
RETENTION = timedelta(hours=24)
#: A first request running longer than this is taken to have died: its key may be used again.
STALE = timedelta(minutes=5)
_PURGE_BATCH = 100

View = TypeVar("View")
Method = Callable[..., Response]


def idempotent(purpose: str) -> Callable[[Method], Method]:
    """Make a DRF view method honour ``Idempotency-Key`` (see the module's docstring)."""

    def decorate(method: Method) -> Method:
        @functools.wraps(method)
        def wrapper(view: Any, request: Request, *args: Any, **kwargs: Any) -> Response:
            raw = request.headers.get(HEADER)
            fingerprint = _fingerprint(request) if raw is not None else None
            if raw is None or fingerprint is None:
                return method(view, request, *args, **kwargs)
            key = _valid_key(raw)
            if key is None:
                return error_response(
                    400,
                    "validation_error",
                    _("The request is not valid: see errors."),
                    [FieldError(HEADER, _("must be 1 to 255 printable ASCII characters"))],
                )
            scope, digest = _scope(request, purpose), _digest(key)
            service_key = _service_key(scope, key)
            verdict, record = retry_transient(
                lambda: _claim(scope, digest, fingerprint, service_key)
            )
            if verdict != "run":
                return _answer_without_running(verdict, record)
            try:
                response = method(view, request, *args, **kwargs)
            except Exception as exc:
                try:
                    response = view.handle_exception(exc)
                except BaseException:
                    _release(record)
                    raise
            if not is_final(response):
                _release(record)
                return response
            _keep(record, response)
            response[STATUS_HEADER] = "successfully_stored"
            return response

        return wrapper

    return decorate


#: Statuses that say "not now" rather than "no": never kept for a key.
_NOT_FINAL_STATUSES = frozenset({408, 425, 429})


def is_final(response: Response) -> bool:
    """Whether an answer is the request's last word (kept for its key) or "try again later"."""
    status = response.status_code
    if status >= 500 or status in _NOT_FINAL_STATUSES:
        return False
    return not response.has_header("Retry-After")


def caller_key(request: Request, purpose: str) -> str | None:
    """A service key for this request's ``Idempotency-Key`` (None without a valid header)."""
    raw = request.headers.get(HEADER)
    key = _valid_key(raw) if raw is not None else None
    if key is None:
        return None
    return _service_key(_scope(request, purpose), key)


def _service_key(scope: str, key: str) -> str:
    return "api-" + _digest(f"{scope}\n{key}")


def _request_ended(service_key: str) -> bool:
    """Whether the service's request row made with this key has ended (not being sent, and
    recovery will not send it): the request that made it is not running any more."""
    ended = {"state__in": OPEN_REQUEST_STATES}
    return (
        ChargeActionRequest.objects.filter(idempotency_key=service_key).exclude(**ended).exists()
        or ChargeRequest.objects.filter(caller_key=service_key).exclude(**ended).exists()
        or SubscriptionRequest.objects.filter(idempotency_key=service_key).exclude(**ended).exists()
    )


def _answer_without_running(verdict: str, record: ApiIdempotencyRecord) -> Response:
    if verdict == "reused":
        return error_response(
            409,
            "idempotency_key_reused",
            _(
                "This Idempotency-Key was already used for a different request. "
                "Use a new key for a new request."
            ),
        )
    if verdict == "in_progress":
        return error_response(
            409,
            "idempotency_key_in_progress",
            _("A request with this Idempotency-Key is still being processed; retry shortly."),
            headers={"Retry-After": "1"},
        )
    response = Response(record.response, status=record.status_code)
    response[STATUS_HEADER] = "retrieved_idempotent_response"
    return response


def _claim(
    scope: str, digest: str, fingerprint: str, service_key: str
) -> tuple[str, ApiIdempotencyRecord]:
    """``run`` (this request now owns the key), ``replay``, ``reused`` or ``in_progress``.

    A record in progress is taken over after :data:`STALE`, or as soon as the service's
    request row behind the key has ended: the first request died (or is answering that
    very outcome), and running the same request again with the same service key answers
    the row's outcome without sending anything twice.
    """
    now = timezone.now()
    record, created = ApiIdempotencyRecord.objects.get_or_create(
        scope=scope, key_digest=digest, defaults={"fingerprint": fingerprint}
    )
    if created:
        _purge(now)
        return "run", record
    expired = record.created_at < now - RETENTION
    stale = record.status_code is None and (
        record.created_at < now - STALE
        or (record.fingerprint == fingerprint and _request_ended(service_key))
    )
    if expired or (stale and record.fingerprint == fingerprint):
        # Taken over by one request only: the update matches the row as it was read.
        taken = ApiIdempotencyRecord.objects.filter(
            pk=record.pk, created_at=record.created_at, status_code=record.status_code
        ).update(
            fingerprint=fingerprint,
            status_code=None,
            response=None,
            created_at=now,
            completed_at=None,
        )
        if taken:
            record.refresh_from_db()
            return "run", record
        record.refresh_from_db()
    if record.fingerprint != fingerprint:
        return "reused", record
    if record.status_code is None:
        return "in_progress", record
    return "replay", record


def _keep(record: ApiIdempotencyRecord, response: Response) -> None:
    def write() -> None:
        ApiIdempotencyRecord.objects.filter(pk=record.pk).update(
            status_code=response.status_code,
            # A 400 may echo the caller's NUL (a metadata key): PostgreSQL refuses it in JSON.
            response=without_nul(response.data),
            completed_at=timezone.now(),
        )

    retry_transient(write)


def _release(record: ApiIdempotencyRecord) -> None:
    retry_transient(
        lambda: ApiIdempotencyRecord.objects.filter(pk=record.pk, status_code=None).delete()
    )


def _purge(now: Any) -> None:
    # A few expired rows per new key: the table stays bounded without a cron job.
    old = ApiIdempotencyRecord.objects.filter(created_at__lt=now - RETENTION)
    ids = list(old.order_by("created_at").values_list("pk", flat=True)[:_PURGE_BATCH])
    if ids:
        ApiIdempotencyRecord.objects.filter(pk__in=ids).delete()


def _valid_key(raw: str) -> str | None:
    try:
        return validate_idempotency_key(raw.strip())
    except InvalidParametersError:
        return None


def _scope(request: Request, purpose: str) -> str:
    user = getattr(request, "user", None)
    who = f"user-{user.pk}" if user is not None and user.is_authenticated else "anonymous"
    return f"{purpose}:{who}"[:150]


def _fingerprint(request: Request) -> str | None:
    """A digest of the method, path and parsed body; None for a body that cannot be encoded.

    A body that cannot be parsed raises DRF's ``ParseError`` here: the caller gets
    its 400, and nothing is kept.
    """
    data = request.data
    try:
        body = json.dumps(data, sort_keys=True, separators=(",", ":"), default=str)
    except (RecursionError, TypeError, ValueError):
        return None  # nothing the view can accept either; it answers without a kept record
    return _digest(f"{request.method} {request.path}\n{body}")


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
