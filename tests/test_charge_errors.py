"""The gateway's 3-D Secure failure codes read as words, for staff and customers, in English
and Japanese: never a bare "Code 358" (issue 43).

356 and 358 are the codes the gateway's SDKs name for 3-D Secure (the card is not enrolled;
the authentication could not be completed); the fake gateway fails a challenge with 358.
"""

from __future__ import annotations

import html
from typing import Any

import pytest
from django.utils import translation

from django_paycharge.admin import display
from django_paycharge.charge_errors import error_code_meaning, failure_message

THREE_DS_CODES = (356, 358)


@pytest.mark.parametrize("code", THREE_DS_CODES)
@pytest.mark.parametrize("language", ["en", "ja"])
def test_a_3ds_failure_is_told_in_words(code: int, language: str) -> None:
    error: dict[str, Any] = {"code": code, "message": "3-D Secure authentication failed"}
    with translation.override(language):
        found = error_code_meaning(code)
        assert found is not None, f"{code} has no meaning"
        meaning = str(found)
        staff = html.unescape(str(display.describe_error(error)))
        customer = failure_message("failed", error)
    assert f"{code}: {meaning}" in staff
    assert meaning in customer
    secure = "3-D Secure" if language == "en" else "3Dセキュア"
    assert secure in meaning
    if language == "ja":
        assert not any("a" <= c.lower() <= "z" for c in customer.replace("3Dセキュア", ""))
