"""ChargeAdmin is one class (no mixins overriding its methods) and every inline is read-only
through the one mixin."""

from __future__ import annotations

import importlib
import pkgutil

from django.contrib import admin
from django.contrib.admin.options import InlineModelAdmin

import django_paycharge.admin as package
from django_paycharge.admin.charges import ChargeAdmin
from django_paycharge.admin.readonly import ReadOnlyAdmin, ReadOnlyInline

HOOKS = ("change_view", "changelist_view", "get_fieldsets", "get_inlines", "get_readonly_fields",
         "get_inline_instances", "get_queryset", "get_urls")  # fmt: skip


def test_chargeadmin_alone_overrides_the_admins_hooks():
    ours = [cls for cls in ChargeAdmin.__mro__ if cls.__module__.startswith("django_paycharge")]
    assert ours == [ChargeAdmin, ReadOnlyAdmin]
    for hook in HOOKS:
        defined = [cls.__name__ for cls in ours if hook in vars(cls)]
        assert defined in ([], ["ChargeAdmin"]), hook


def test_every_inline_of_the_app_is_read_only_through_the_one_mixin():
    inlines = {
        value
        for info in pkgutil.iter_modules(package.__path__)
        for value in vars(importlib.import_module(f"{package.__name__}.{info.name}")).values()
        if isinstance(value, type)
        and issubclass(value, InlineModelAdmin)
        and value.__module__.startswith("django_paycharge")
    }
    assert len(inlines) >= 5  # the charge page's issuer token, deliveries, refunds...
    assert all(issubclass(inline, ReadOnlyInline) for inline in inlines)
    for inline in inlines:
        instance = inline(inline.model, admin.site)
        assert (instance.extra, instance.max_num, instance.can_delete) == (0, 0, False)
        for method in ("has_add_permission", "has_change_permission", "has_delete_permission"):
            assert getattr(inline, method) is getattr(ReadOnlyInline, method), (inline, method)
