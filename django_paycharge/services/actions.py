"""Deprecated: captures, cancels and refunds go through :mod:`.exactly_once`, as creates do.

Only the names with a replacement remain (see ``django_paycharge.deprecation``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..deprecation import module_getattr

if not TYPE_CHECKING:  # names removed since 0.1.0, with a warning (deprecation.MOVED)
    __getattr__ = module_getattr(__name__)
