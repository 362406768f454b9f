"""The bookkeeping of request rows (charge requests and action requests alike).

Conditional updates that only move a row from the states it is expected in,
retried through a busy database; what a request keeps of an error, and the
refusal rebuilt from it. Used by the exactly-once machine and its kinds.
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import DatabaseError, connections, models, router
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Q
from django.utils import timezone

from ...exceptions import (
    APIError,
    AuthenticationError,
    ChargeStateError,
    ConfigurationError,
    NotSentError,
    PayChargeError,
    PermissionDeniedError,
    StoreNotFoundError,
    error_class_for_status,
)
from ...models import OPEN_REQUEST_STATES, RequestState
from ..retry import retry_transient

logger = logging.getLogger("django_paycharge.services")

REFUSED = "refused"


def succeed(request: Any, **links: Any) -> bool:
    """Mark ``request`` succeeded (``links``: what it made); True only for the call that did.

    Runs inside the caller's transaction when there is one, so the caller sends
    its signal in the same transaction, once per request. One statement, built
    once per model and links from the model's fields: it is on the path a
    customer waits on (the checkout; ``bench/run client``), where the ORM's
    update compiler costs more than the database's work.
    """
    alias = router.db_for_write(type(request))
    connection = connections[alias]
    sql, params = succeed_statement(request, links, connection, alias)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return bool(cursor.rowcount)


def succeed_statement(
    request: Any,
    links: dict[str, Any],
    connection: BaseDatabaseWrapper,
    alias: str,
    *,
    expressions: tuple[tuple[str, str], ...] = (),
) -> tuple[str, list[Any]]:
    """The UPDATE :func:`succeed` runs, and its parameters (for a caller that runs more with it).

    ``expressions``: (link name, SQL) pairs whose values the statement takes
    from that SQL instead of a parameter (their ``links`` values are unused).
    """
    model = type(request)
    key = (model, alias, tuple(links), expressions)
    if key not in _succeed_sql:
        meta = model._meta
        quote = connection.ops.quote_name
        fields = [meta.get_field(name) for name in ("updated_at", *links)]
        given = dict(expressions)
        sets = ", ".join(f"{quote(f.column)} = {given.get(f.name, '%s')}" for f in fields)
        state = quote(meta.get_field("state").column)
        _succeed_sql[key] = (
            f"UPDATE {quote(meta.db_table)} SET {state} = %s, {sets} "  # noqa: S608 - names
            f"WHERE {quote(meta.pk.column)} = %s AND {state} <> %s",
            [f for f in fields if f.name not in given],
        )
    sql, fields = _succeed_sql[key]
    links = {"updated_at": timezone.now(), **links}
    params: list[Any] = [RequestState.SUCCEEDED.value]
    for field in fields:
        value = links[field.name]
        if isinstance(value, models.Model):
            value = value.pk
        params.append(field.get_db_prep_save(value, connection))
    params += [request.pk, RequestState.SUCCEEDED.value]
    return sql, params


# (model, alias, link names, expressions) -> (UPDATE statement, its parameters' fields)
_succeed_sql: dict[tuple[Any, str, tuple[str, ...], Any], tuple[str, list[Any]]] = {}


def error_record(exc: PayChargeError | None, outcome: str = REFUSED) -> dict[str, Any]:
    """What a request keeps of the last error it met (never a secret: messages are ours)."""
    if exc is None:
        return {"outcome": outcome, "at": timezone.now().isoformat()}
    record = {
        "type": type(exc).__name__,
        "message": exc.message,
        "http_status": exc.http_status,
        "code": exc.code,
        "request_id": exc.request_id,
        "outcome": outcome,
        "at": timezone.now().isoformat(),
    }
    if isinstance(exc, ChargeStateError):
        record["charge_status"] = exc.status
    return record


def refusal_from_record(error: Any) -> PayChargeError:
    """The refusal a failed request ended with, rebuilt from its stored record."""
    record = error if isinstance(error, dict) else {}
    status = record.get("http_status")
    message = record.get("message") or None
    exc: PayChargeError
    if record.get("type") == "ChargeStateError" or "charge_status" in record:
        exc = ChargeStateError(message, status=record.get("charge_status"))
    else:
        cls = error_class_for_status(status) if isinstance(status, int) else APIError
        exc = cls(
            message,
            http_status=status if isinstance(status, int) else None,
            code=record.get("code"),
            request_id=record.get("request_id"),
        )
    exc.outcome = REFUSED
    return exc


#: The errors a ``not_sent`` request may have ended with, by the name its record keeps.
_NOT_SENT_CLASSES: dict[str, type[PayChargeError]] = {
    cls.__name__: cls
    for cls in (
        NotSentError,
        AuthenticationError,
        PermissionDeniedError,
        StoreNotFoundError,
        ConfigurationError,
    )
}


def not_sent_from_record(error: Any) -> PayChargeError:
    """The error a ``not_sent`` request ended with, rebuilt from its stored record."""
    record = error if isinstance(error, dict) else {}
    status = record.get("http_status")
    cls = _NOT_SENT_CLASSES.get(str(record.get("type")), NotSentError)
    exc = cls(
        record.get("message") or None,
        http_status=status if isinstance(status, int) else None,
        code=record.get("code"),
        request_id=record.get("request_id"),
    )
    exc.outcome = "not_sent"
    return exc


def update_request(
    request: Any, states: tuple[str, ...], *, quiet: bool = False, **values: Any
) -> bool:
    """One conditional UPDATE of ``request`` (while in ``states``), retried through busy errors."""
    values.setdefault("updated_at", timezone.now())
    model: type[models.Model] = type(request)

    def write() -> int:
        return model._default_manager.filter(pk=request.pk, state__in=states).update(**values)

    try:
        return bool(retry_transient(write, using=router.db_for_write(model)))
    except DatabaseError:
        if not quiet:
            raise
        logger.exception("Request %s: bookkeeping write failed", request_name(request))
        return False


def mark(request: Any, states: tuple[str, ...], **values: Any) -> bool:
    """A bookkeeping write that must not hide the result it records (failures are logged)."""
    return update_request(request, states, quiet=True, **values)


def reload(request: Any) -> Any:
    """The request row read again, with what it is about (its charge, or its subscription)."""
    model: type[models.Model] = type(request)
    related = [f.name for f in model._meta.fields if f.name in ("charge", "subscription")]
    return model._default_manager.select_related(*related).get(pk=request.pk)


def request_name(request: Any) -> str:
    return getattr(request, "caller_key", None) or str(request.idempotency_key)


def outcome_unknown(nothing_done: str) -> Q:
    """Request rows whose outcome is not known yet: open (being sent, or recovery will send
    them), or abandoned and not settled as having done nothing (``nothing_done``, the kind's
    record of that). Money may have moved for each of them until the gateway says.
    """
    # Each case spelled out: a bare ~Q(error__outcome=...) is NULL, so false, for a record
    # without the key, and would leave out the very rows whose outcome nobody recorded.
    # ``outcome__isnull``: the record has no such key (Django's spelling of it).
    unsettled = (
        Q(error__isnull=True) | Q(error__outcome__isnull=True) | ~Q(error__outcome=nothing_done)
    )
    return Q(state__in=OPEN_REQUEST_STATES) | (Q(state=RequestState.ABANDONED) & unsettled)
