"""The canonical JSON of a charge: orjson's text is the standard library's, byte for byte.

Every stored ``raw_digest`` is of the standard library's text; a sync that wrote
any other text would see every stored charge as changed, rewrite it and announce
``charge_updated`` for it (services/mirror/canonical.py).
"""

from __future__ import annotations

import json
import uuid
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from django_paycharge.models import Charge
from django_paycharge.services.mirror import rows, upsert
from django_paycharge.services.mirror.canonical import canonical, standard
from tests.hypothesis_profiles import examples

# Every character, half surrogate pairs too: JSON's "\ud800" decodes to one.
TEXT = st.text(st.characters(codec=None, min_codepoint=0), max_size=12)
INTEGERS = st.integers(min_value=-(2**80), max_value=2**80)
FINITE = st.decimals(allow_nan=False, allow_infinity=False)
ANY_DECIMAL = st.decimals(allow_nan=True, allow_infinity=True).filter(lambda d: not d.is_snan())


def values(numbers: st.SearchStrategy[object]) -> st.SearchStrategy[dict[str, object]]:
    scalars = st.none() | st.booleans() | INTEGERS | numbers | TEXT
    nested = st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=5),
        max_leaves=12,
    )
    return st.dictionaries(TEXT, nested, max_size=8)


def outcome(encode, value):
    """The text, or the kind of error (PayloadEncoder cannot write a Decimal infinity)."""
    try:
        return encode(value)
    except (ValueError, ArithmeticError) as exc:
        return type(exc)


@settings(max_examples=examples(400))
@given(values(ANY_DECIMAL))
def test_the_canonical_text_is_the_standard_librarys(value):
    assert outcome(canonical, value) == outcome(standard, value)


@settings(max_examples=examples(200))
@given(values(FINITE))
def test_a_payload_decoded_as_the_client_does_gives_the_same_text(value):
    # Sent as JSON and read back as the client reads it: fractions as Decimal (a NaN,
    # which is no JSON, would be a float: written as null, see the module).
    decoded = json.loads(standard(value), parse_float=Decimal)
    assert canonical(decoded) == standard(decoded)


def test_characters_orjson_leaves_alone_are_escaped_as_the_standard_library_does():
    value = {"日本円": "テスト店舗 😀", "del": "\x7f", "ctl": "\x00\x1f\t\n", "sep": "\u2028"}
    text = canonical(value)
    assert text == standard(value) and text.isascii()
    assert '"\\u65e5\\u672c\\u5186"' in text and "\\ud83d\\ude00" in text and "\\u007f" in text


def test_what_orjson_cannot_write_takes_the_standard_librarys_way():
    for value in ({"big": 2**64}, {"half": "\ud800"}, {"key": {1: "not a string key"}}):
        assert canonical(value) == standard(value)


def test_a_webhooks_floats_keep_the_standard_librarys_text():
    # A webhook's body is decoded with floats; orjson writes 1e-05 as 0.00001.
    value = {"id": "0b5f6b8e-5d4c-4b8a-9d56-0f6a3f1f2c11", "rate": 1e-05, "n": float("nan")}
    text = '{"id":"0b5f6b8e-5d4c-4b8a-9d56-0f6a3f1f2c11","n":NaN,"rate":1e-05}'
    assert canonical(value, exact=False) == standard(value) == text


def test_the_digest_a_sync_stores_is_the_digest_of_the_standard_text():
    item = {
        "id": "0b5f6b8e-5d4c-4b8a-9d56-0f6a3f1f2c11",
        "status": "successful",
        "store_name": "テスト店舗",
        "requested_amount_formatted": Decimal("10.50"),
        "metadata": {"z": [1, Decimal("2.5")], "a": None},
    }
    row = rows.json_row(item, "default", "", None, exact=True)  # type: ignore[arg-type]
    assert row["raw"] == standard(item)
    assert row["raw_digest"] == rows.raw_digest(item)


@pytest.mark.django_db
def test_a_listed_charge_with_a_nan_is_stored_with_null_beside_the_rest_of_its_page():
    """JSON has no NaN; Python's decoder reads one, and neither database stores it as JSON."""
    ids = [str(uuid.uuid4()) for _ in range(2)]
    body = (
        f'[{{"id":"{ids[0]}","status":"pending","ratio":NaN}},'
        f'{{"id":"{ids[1]}","status":"pending","requested_amount_formatted":12.50}}]'
    )
    items = json.loads(body, parse_float=Decimal)  # as the client decodes a page
    prepared, rejected = upsert.prepare_page(
        items, account="default", keep=lambda _created: True, on_error=_refuse
    )
    assert rejected == []
    assert upsert.upsert_prepared(prepared).created == 2
    stored = {str(c.gateway_id): c for c in Charge.objects.all()}
    assert stored[ids[0]].raw["ratio"] is None
    assert stored[ids[1]].raw["requested_amount_formatted"] == Decimal("12.5")
    assert stored[ids[1]].raw_digest == rows.raw_digest(items[1])


def _refuse(item, error):
    raise error
