"""Changelist rows drawn without a template or a translation lookup per cell.

Django draws each row's selection checkbox by rendering a form widget's
template, and translates the empty-value dash anew for every cell: on a page
of 50 charges those were the costliest parts of the rows (``bench/run
admin``; figures in docs/benchmarks.md). The markup is the widget's own,
written out once; the dash is translated once per language.
"""

from __future__ import annotations

from typing import Any

from django.contrib.admin import ModelAdmin, helpers
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.translation import get_language
from django.utils.translation import gettext as _


def action_checkbox(admin: ModelAdmin[Any], obj: Any) -> SafeString:
    """``ModelAdmin.action_checkbox``: the actions' checkbox, as ``CheckboxInput`` draws it."""
    return format_html(
        '<input type="checkbox" name="{}" value="{}" class="action-select" aria-label="{}">',
        helpers.ACTION_CHECKBOX_NAME,
        str(obj.pk),
        format_html(_("Select this object for an action - {}"), str(obj)),
    )


def empty_value_display(admin: ModelAdmin[Any]) -> SafeString:
    """``ModelAdmin.get_empty_value_display``: the admin's own (or its site's), by language."""
    known: dict[str | None, SafeString] = admin.__dict__.setdefault("_empty_displays", {})
    language = get_language()
    if language not in known:
        known[language] = ModelAdmin.get_empty_value_display(admin)
    return known[language]
