from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class ShopConfig(AppConfig):
    name = "shop"
    verbose_name = _("Shop")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Connect the payment signal receivers.
        from . import payments, renewals, saved_cards  # noqa: F401
