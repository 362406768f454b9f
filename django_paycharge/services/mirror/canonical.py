"""The canonical JSON text of a charge: what the mirror stores as ``raw`` and digests.

One text serves as the stored value and as the input of ``raw_digest``, which
tells an unchanged charge from a changed one: sorted keys, no spaces, ASCII
escapes, and ``Decimal`` written as ``PayloadEncoder`` writes it (as Python
writes the float). Every stored digest is of that text, so it must never
change: a different but equally valid text would make the next sync rewrite
every row and announce ``charge_updated`` for every charge.

:func:`canonical` writes it with orjson, which the sync's pages spend most of
their conversion on otherwise (docs/benchmarks.md, "What limits PostgreSQL's
ratio"), and makes orjson's text the standard library's, byte for byte: the
characters orjson leaves as they are (beyond ASCII, and DEL) are escaped by
the standard library's own function, and each ``Decimal`` is written by the
standard library. What orjson cannot write the same way (integers beyond 64
bits, half a surrogate pair, keys that are not strings) takes the standard
library's encoder. A float orjson writes in its own way (``NaN``, which JSON
has not, as ``null``; ``1e-05`` as ``0.00001``): only values decoded with
``parse_float=Decimal`` come here (:func:`canonical`'s ``exact`` says so),
where a float can only be ``NaN`` or an infinity; any other caller passes
``exact=False`` and gets the standard library's text.
"""

from __future__ import annotations

import re
from decimal import Decimal
from json.encoder import encode_basestring_ascii
from typing import Any

import orjson

from ...models.payload import PayloadEncoder

# The JSON a JSONField of the mirror would write (PayloadEncoder), with sorted keys.
_STANDARD = PayloadEncoder(sort_keys=True, separators=(",", ":"))
_DECIMAL = PayloadEncoder(separators=(",", ":"))
_NOT_ASCII = re.compile("[\x7f-\U0010ffff]+")
_OPTIONS = orjson.OPT_SORT_KEYS


def standard(value: Any) -> str:
    """The canonical text by the standard library's encoder (the definition)."""
    return _STANDARD.encode(value)


def canonical(value: Any, *, exact: bool = True) -> str:
    """The canonical text of ``value``, the same as :func:`standard`'s.

    ``exact``: ``value`` was decoded with ``parse_float=Decimal``, so it holds no
    float but ``NaN`` and infinities (written as ``null``: JSON has neither).
    """
    if not exact:
        return _STANDARD.encode(value)
    try:
        text = orjson.dumps(value, default=_decimal, option=_OPTIONS).decode()
    except TypeError:  # orjson.JSONEncodeError: what only the standard library writes
        return _STANDARD.encode(value)
    if not text.isascii() or "\x7f" in text:
        text = _NOT_ASCII.sub(_escaped, text)
    return text


def _decimal(value: Any) -> Any:
    if type(value) is Decimal:
        return orjson.Fragment(_DECIMAL.encode(value))
    raise TypeError  # anything else: the standard library's encoder decides


def _escaped(match: re.Match[str]) -> str:
    return encode_basestring_ascii(match.group())[1:-1]
