"""Changelist rows drawn without a template or a translation lookup per cell.

Django draws each row's selection checkbox by rendering a form widget's
template, and translates the empty-value dash anew for every cell: on a page
of 50 charges those were the costliest parts of the rows (``bench/run
admin``; figures in docs/benchmarks.md). The markup is the widget's own,
written out once; the dash is translated once per language.
"""

from __future__ import annotations

from typing import Any

from django.contrib.admin import helpers
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.translation import get_language
from django.utils.translation import gettext as _


class ActionCheckboxMixin:
    """A ``ModelAdmin`` mixin: the actions' checkbox column, as ``CheckboxInput`` draws it."""

    def action_checkbox(self, obj: Any) -> SafeString:
        return format_html(
            '<input type="checkbox" name="{}" value="{}" class="action-select" aria-label="{}">',
            helpers.ACTION_CHECKBOX_NAME,
            str(obj.pk),
            format_html(_("Select this object for an action - {}"), str(obj)),
        )

    def get_empty_value_display(self) -> SafeString:
        # This admin's own (ModelAdmin or its site's), by language.
        known: dict[str | None, SafeString] = self.__dict__.setdefault("_empty_displays", {})
        language = get_language()
        if language not in known:
            known[language] = super().get_empty_value_display()  # type: ignore[misc]
        return known[language]
