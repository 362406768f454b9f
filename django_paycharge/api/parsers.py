"""The API's JSON parser: every body that cannot be read is a 400, never a 500.

DRF's ``JSONParser`` turns a ``ValueError`` into a ``ParseError`` (400), but a
body nested deeper than Python's recursion limit (1.5 KB of ``[``) raises
``RecursionError`` and answers 500, anonymously in the storefront setup (on
3.13, an unterminated one is only "Expecting value"). And a body that parses
but nests a few hundred levels would hit the same limit later, in the
serializers or the error rendering. So bodies nested deeper than
:data:`MAX_DEPTH`, parsed or not, are refused here with a message that says so.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import Any

from django.utils.translation import gettext as _
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from django_paycharge.nesting import nesting_exceeds, text_nesting_exceeds

#: Levels of nested arrays and objects a request body may have. The create
#: body needs 3 (metadata values that are objects or lists add a few).
MAX_DEPTH = 32


class SafeJSONParser(JSONParser):
    """``JSONParser`` that answers 400 to bodies nested too deeply (see the module)."""

    def parse(
        self,
        stream: Any,
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> Any:
        raw = stream.read() if stream is not None else b""
        try:
            data = super().parse(io.BytesIO(raw), media_type, parser_context)
        except (ParseError, RecursionError) as exc:
            if isinstance(exc, RecursionError) or text_nesting_exceeds(raw, MAX_DEPTH):
                raise ParseError(_("JSON parse error - the body is nested too deeply.")) from None
            raise
        if nesting_exceeds(data, MAX_DEPTH):
            raise ParseError(
                _("The body nests arrays and objects more than %(depth)d levels deep.")
                % {"depth": MAX_DEPTH}
            )
        return data
