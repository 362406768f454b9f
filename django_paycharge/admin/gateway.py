"""What the admin's gateway actions share: a cap on calls per request, the run of a confirmed
action object by object, a charge's refresh, and the sync button."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.translation import gettext as _

from .. import conf, services
from ..exceptions import NotFoundError, PayChargeError, SyncInProgressError
from ..models import Charge
from ..queue import background_enabled, routed


def limited(
    model_admin: admin.ModelAdmin[Any], request: HttpRequest, queryset: QuerySet[Any]
) -> list[Any]:
    """The selected objects, or none (with a message) when more than the cap are selected.

    Each one costs a gateway call inside this request: a few hundred would
    time out the request, so the cap (``ADMIN_MAX_GATEWAY_CALLS``) says to
    narrow the selection instead.
    """
    cap = int(conf.get_setting("ADMIN_MAX_GATEWAY_CALLS"))
    pks = list(queryset.order_by().values_list("pk", flat=True)[: cap + 1])
    if len(pks) > cap:
        model_admin.message_user(
            request,
            _(
                "Select at most %(cap)d items for an action that calls the gateway "
                "(each is one request); use “Sync now” for more."
            )
            % {"cap": cap},
            messages.WARNING,
        )
        return []
    return list(queryset.model._default_manager.filter(pk__in=pks).order_by("-pk"))


def run_each(
    model_admin: admin.ModelAdmin[Any],
    request: HttpRequest,
    objects: list[Any],
    page_key: str,
    run: Callable[[Any, str, str], str],
    refused: str,
) -> None:
    """``run(object, key, who)`` for each object of a confirmed action page; its text, or its
    error (``refused % {"id", "error"}``), is said in a message.

    One key per object, all from the page's key: a page submitted twice finds each
    request again and acts once. An unknown outcome is not a refusal: a warning.
    """
    who = str(request.user.get_username())
    for obj in objects:
        try:
            text = run(obj, f"{page_key}:{obj.pk}", who)
        except PayChargeError as exc:
            level = messages.WARNING if exc.outcome == "unknown" else messages.ERROR
            model_admin.message_user(request, refused % {"id": obj.gateway_id, "error": exc}, level)
        else:
            model_admin.message_user(request, text, messages.SUCCESS)


def refresh_one(model_admin: admin.ModelAdmin[Any], request: HttpRequest, charge: Charge) -> None:
    """Read ``charge`` from the gateway again, and say what came of it."""
    try:
        fresh = services.refresh_charge(charge.gateway_id, charge.store_id, account=charge.account)
    except NotFoundError:
        model_admin.message_user(
            request,
            _(
                "Charge %(id)s: the gateway has no such charge in store %(store)s "
                "(account %(account)s). It may belong to another store or account. "
                "The copy here was left as it was."
            )
            % {"id": charge.gateway_id, "store": charge.store_id, "account": charge.account},
            messages.ERROR,
        )
    except PayChargeError as exc:
        model_admin.message_user(
            request,
            _("Charge %(id)s: not refreshed: %(error)s") % {"id": charge.gateway_id, "error": exc},
            messages.ERROR,
        )
    else:
        model_admin.message_user(
            request,
            _("Charge %(id)s refreshed: %(status)s.")
            % {"id": charge.gateway_id, "status": fresh.get_status_display() or fresh.status},
            messages.SUCCESS,
        )


def run_sync_now(model_admin: admin.ModelAdmin[Any], request: HttpRequest) -> None:
    """Incremental sync of every configured account: queued when a task backend runs work
    in the background, otherwise run here for at most ``ADMIN_SYNC_MAX_PAGES`` pages
    (a whole sync would outlast the request), the rest left to the next sync."""
    try:
        background = background_enabled()
        pages = conf.get_int_setting("ADMIN_SYNC_MAX_PAGES", 1)
    except PayChargeError as exc:
        model_admin.message_user(request, str(exc), messages.ERROR)
        return
    for account in conf.account_names():
        try:
            if background:
                _enqueue(model_admin, request, account)
                continue
            result = services.sync_charges(account, max_pages=pages)
        except SyncInProgressError:
            model_admin.message_user(
                request,
                _("A sync of account %(account)s is already running: nothing to do now.")
                % {"account": account},
                messages.WARNING,
            )
            continue
        except PayChargeError as exc:
            _failed(model_admin, request, account, exc)
            continue
        _report(model_admin, request, account, result.as_dict())
        if not result.complete:
            model_admin.message_user(
                request,
                _(
                    "Account %(account)s has more to read than %(pages)d pages, the most a sync "
                    "started here reads: the next sync goes on from there (run paycharge_sync, "
                    "or configure a task backend to sync in the background)."
                )
                % {"account": account, "pages": pages},
                messages.WARNING,
            )


def _enqueue(model_admin: admin.ModelAdmin[Any], request: HttpRequest, account: str) -> None:
    queued = routed(services.sync_charges_task).enqueue(account)
    # An immediate backend (Django 6's default) has already run it: say what it did.
    status = str(getattr(getattr(queued, "status", None), "value", ""))
    done = queued.return_value if status == "SUCCESSFUL" else None
    if isinstance(done, dict) and "skipped" in done:
        model_admin.message_user(request, str(done["skipped"]), messages.WARNING)
    elif isinstance(done, dict):
        _report(model_admin, request, account, done)
    elif status == "FAILED":
        errors = getattr(queued, "errors", None) or []
        detail = errors[-1].exception_class_path if errors else ""
        _failed(model_admin, request, account, detail or _("the task failed"))
    else:
        model_admin.message_user(
            request,
            _("Sync of account %(account)s queued: it runs in the background.")
            % {"account": account},
            messages.SUCCESS,
        )


def _failed(
    model_admin: admin.ModelAdmin[Any], request: HttpRequest, account: str, error: Any
) -> None:
    model_admin.message_user(
        request,
        _("Sync of account %(account)s failed: %(error)s") % {"account": account, "error": error},
        messages.ERROR,
    )


def _report(
    model_admin: admin.ModelAdmin[Any],
    request: HttpRequest,
    account: str,
    counts: dict[str, Any],
) -> None:
    model_admin.message_user(
        request,
        _(
            "Synced account %(account)s: %(seen)d charges read, %(created)d new, "
            "%(updated)d updated, %(unchanged)d unchanged, %(failed)d failed."
        )
        % {"account": account, **counts},
        messages.SUCCESS,
    )
