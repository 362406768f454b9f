from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class PayChargeConfig(AppConfig):
    name = "django_paycharge"
    label = "django_paycharge"
    verbose_name = _("Payments")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Imported for their side effects on Django's registries: the system checks, and
        # conf's receiver of setting_changed.
        from . import checks, conf  # noqa: F401
