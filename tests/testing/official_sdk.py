"""A check of the official Python SDK's answers, shared by the contract tests
``test_official_sdk*.py`` (their ``sdk`` fixture is in conftest.py)."""

from __future__ import annotations

from typing import Any


def ok(response: Any, status: int) -> Any:
    """The body of an answer the SDK read without errors, with ``status``."""
    assert response.status_code == status, response.text
    assert response.is_success() and not response.errors
    return response.body
