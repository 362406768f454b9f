"""Deprecated: the refund, cancel and capture resources live in :mod:`.resources`.

``client.refunds``, ``client.cancels`` and ``client.charges`` reach them as before.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..deprecation import module_getattr

if not TYPE_CHECKING:  # names removed since 0.1.0, with a warning (deprecation.MOVED)
    __getattr__ = module_getattr(__name__)
