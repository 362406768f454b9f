"""The staff dashboard's place in the admin, and its own permission (``view_dashboard``)."""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _

from .charges import Charge


class Dashboard(Charge):
    """No table of its own: the admin lists the dashboard under this name.

    Its only permission, ``django_paycharge.view_dashboard``, lets staff see
    the shop's takings without the charge list (and the other way round).
    """

    class Meta:
        proxy = True
        verbose_name = _("dashboard")
        verbose_name_plural = _("dashboard")
        default_permissions = ("view",)
