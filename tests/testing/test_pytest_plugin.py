"""The pytest plugin in a shop's test run: a missing dependency is named, with its extra."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.waiting import run

SHOP_TEST = """
def test_uses_the_fake(fake_gateway):
    assert fake_gateway.create_transaction_token("card")["id"]
"""


def run_shop_tests(tmp_path: Path, hidden: str, **env: str) -> subprocess.CompletedProcess[str]:
    """pytest in a fresh directory where ``hidden`` cannot be imported (as if not installed)."""
    (tmp_path / "conftest.py").write_text(f"import sys\nsys.modules[{hidden!r}] = None\n")
    (tmp_path / "test_shop.py").write_text(SHOP_TEST)
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "PYTEST"))}
    return run(
        [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:django", "-q", "."],
        cwd=tmp_path,
        env={**clean, **env},
    )


@pytest.mark.slow  # a pytest process of its own
@pytest.mark.own_database  # none at all: the shop's tests need no database
@pytest.mark.parametrize(
    ("hidden", "env"),
    [("responses", {}), ("pytest_django", {"DJANGO_SETTINGS_MODULE": "shop.settings"})],
)
def test_a_missing_dependency_fails_naming_the_testing_extra(tmp_path, hidden, env):
    result = run_shop_tests(tmp_path, hidden, **env)
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"needs {hidden}, which is not installed" in result.stdout
    assert 'pip install "django-paycharge[testing]"' in result.stdout
    assert "ModuleNotFoundError" not in result.stdout


@pytest.mark.slow  # a pytest process of its own
@pytest.mark.own_database  # none at all: the shop's tests need no database
def test_without_django_settings_pytest_django_is_not_needed(tmp_path):
    result = run_shop_tests(tmp_path, "pytest_django")
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("fixture", ["fake_gateway", "fake_gateway_server"])
def test_the_widget_of_a_shop_page_works_against_the_fake_with_no_setting_of_its_own(
    request, settings, fixture
):
    """A shop's tests on a runner without ``PAYCHARGE_*`` variables: WIDGET_JWT is "" there."""
    import requests
    from django.template import engines

    settings.PAYCHARGE = {**settings.PAYCHARGE, "WIDGET_JWT": ""}
    gateway = request.getfixturevalue(fixture)
    page = engines["django"].from_string("{% load paycharge %}{% paycharge_widget_jwt %}")
    jwt = page.render({})
    assert jwt and jwt != settings.PAYCHARGE["JWT"]
    card = {"cardholder": "TARO YAMADA", "card_number": "4242424242424242", "exp_month": 12,
            "exp_year": 2099, "cvv": "123"}  # fmt: skip
    answer = requests.post(
        f"{settings.PAYCHARGE['BASE_URL']}/tokens",
        json={"payment_type": "card", "type": "one_time", "email": "a@b.jp", "data": card},
        headers={"Authorization": f"Bearer {jwt}"},
        timeout=10,
    )
    assert answer.status_code == 201, answer.text
    assert answer.json()["id"] in gateway.state.tokens
