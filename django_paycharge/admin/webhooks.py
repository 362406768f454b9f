"""Webhook configurations: read-only, never the auth token, with warnings that matter."""

from __future__ import annotations

import uuid
from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import URLPattern, path, reverse
from django.utils.safestring import SafeString
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from .. import conf, services
from ..client.vocabulary import REQUIRED_TRIGGER
from ..exceptions import PayChargeError
from ..models import WebhookConfiguration
from . import display
from .readonly import ReadOnlyAdmin


class WebhookConfigurationAdmin(ReadOnlyAdmin):
    list_display = (
        "url",
        "triggers_list",
        "active",
        "store_column",
        "merchant_column",
        "updated_on",
        "removed_at",
        "account",
    )
    list_filter = ("active", "account")
    # Never auth_token_digest, never the raw payload (an older gateway might echo the token).
    fields = (
        "gateway_id",
        "url",
        "triggers_list",
        "active",
        "is_integration",
        "account",
        "store_id",
        "merchant_id",
        "platform_id",
        "created_on",
        "updated_on",
        "synced_at",
        "removed_at",
    )
    readonly_fields = ("triggers_list",)
    actions = ("sync_from_gateway",)

    def has_call_gateway_webhooks_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("django_paycharge.call_gateway_webhooks")

    @admin.display(description=gettext_lazy("store id"), ordering="store_id")
    def store_column(self, config: WebhookConfiguration) -> SafeString | str:
        return display.short_id(config.store_id)

    @admin.display(description=gettext_lazy("merchant id"), ordering="merchant_id")
    def merchant_column(self, config: WebhookConfiguration) -> SafeString | str:
        return display.short_id(config.merchant_id)

    @admin.display(description=gettext_lazy("triggers"))
    def triggers_list(self, config: WebhookConfiguration) -> str:
        return ", ".join(str(t) for t in config.triggers or []) or "-"

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        if request.method == "GET":
            for warning in configuration_warnings():
                self.message_user(request, warning, messages.WARNING)
        context = {
            "can_call_gateway": self.has_call_gateway_webhooks_permission(request),
            **(extra_context or {}),
        }
        return super().changelist_view(request, context)

    @admin.action(
        description=gettext_lazy("Sync from gateway"), permissions=["call_gateway_webhooks"]
    )
    def sync_from_gateway(
        self, request: HttpRequest, queryset: QuerySet[WebhookConfiguration]
    ) -> None:
        targets = {(c.account, c.store_id) for c in queryset.only("account", "store_id")}
        for account, store in sorted(targets, key=str):
            self._sync(request, account, store)

    def get_urls(self) -> list[URLPattern]:
        view = self.admin_site.admin_view(self.sync_view)
        return [
            path("sync/", view, name="django_paycharge_webhookconfiguration_sync"),
            *super().get_urls(),
        ]

    def sync_view(self, request: HttpRequest) -> HttpResponse:
        """Sync every configured account's store: the way in when there is no row to select."""
        if request.method != "POST" or not self.has_call_gateway_webhooks_permission(request):
            raise PermissionDenied
        for account in conf.account_names():
            self._sync(request, account, None)
        return HttpResponseRedirect(
            reverse("admin:django_paycharge_webhookconfiguration_changelist")
        )

    def _sync(self, request: HttpRequest, account: str, store: uuid.UUID | None) -> None:
        try:
            result = services.sync_webhooks(account, store)
        except PayChargeError as exc:
            self.message_user(
                request,
                _("Webhook sync of account %(account)s failed: %(error)s")
                % {"account": account, "error": exc},
                messages.ERROR,
            )
            return
        self.message_user(
            request,
            _(
                "Webhook configurations of account %(account)s synced: %(seen)d read, "
                "%(created)d new, %(removed)d removed from the gateway."
            )
            % {"account": account, **result.as_dict()},
            messages.SUCCESS,
        )


def configuration_warnings() -> list[str]:
    """What would stop the mirror from hearing about charges: one line per problem."""
    configs = list(
        WebhookConfiguration.objects.only("url", "active", "removed_at", "triggers", "account")
    )
    if not configs:
        return [
            _(
                "No webhook configuration is known: the mirror only changes when it is synced. "
                "Sync from the gateway, or add a webhook with the “%(trigger)s” trigger."
            )
            % {"trigger": REQUIRED_TRIGGER}
        ]
    warnings = []
    for config in configs:
        if config.removed_at is not None:
            warnings.append(_("%(url)s was removed from the gateway.") % {"url": config.url})
        elif config.active is False:
            warnings.append(_("%(url)s is inactive: it receives nothing.") % {"url": config.url})
        elif REQUIRED_TRIGGER not in (config.triggers or []):
            warnings.append(
                _("%(url)s lacks the “%(trigger)s” trigger: finished charges are not announced.")
                % {"url": config.url, "trigger": REQUIRED_TRIGGER}
            )
    return warnings
