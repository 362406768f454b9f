from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder


class PayloadEncoder(DjangoJSONEncoder):
    """Writes gateway payloads back as the JSON they came in as.

    The client decodes JSON fractions as ``Decimal`` so money never passes
    through a float; stored payloads turn them back into JSON numbers (not
    strings, as Django's encoder would), so a stored ``raw`` equals the
    gateway's JSON.
    """

    def default(self, o: Any) -> Any:
        if isinstance(o, Decimal):
            return int(o) if o == o.to_integral_value() and "." not in str(o) else float(o)
        return super().default(o)
