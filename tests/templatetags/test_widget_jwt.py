"""The widget's JWT in pages: the browser app token's, never the server's."""

from __future__ import annotations

import pytest
from django.core.checks import Error
from django.template import Context, Template

from django_paycharge.checks import check_paycharge_settings
from django_paycharge.exceptions import ConfigurationError
from django_paycharge.testing import TEST_WIDGET_JWT

PAGE = Template('{% load paycharge %}<form data-jwt="{% paycharge_widget_jwt %}"></form>')


def test_the_page_gets_the_widget_jwt(settings):
    settings.PAYCHARGE = {**settings.PAYCHARGE, "WIDGET_JWT": TEST_WIDGET_JWT}
    html = PAGE.render(Context())
    assert f'data-jwt="{TEST_WIDGET_JWT}"' in html
    assert settings.PAYCHARGE["JWT"] not in html


def test_without_a_widget_jwt_the_page_fails_instead_of_showing_the_servers(settings):
    settings.PAYCHARGE = {k: v for k, v in settings.PAYCHARGE.items() if k != "WIDGET_JWT"}
    with pytest.raises(ConfigurationError, match="WIDGET_JWT'] is not set"):
        PAGE.render(Context())


@pytest.mark.parametrize(
    ("value", "says"), [("server", "server's app token"), ("not-a-jwt", "is not a JWT")]
)
def test_the_server_jwt_or_junk_as_widget_jwt_is_refused_by_check_and_tag(settings, value, says):
    jwt = settings.PAYCHARGE["JWT"] if value == "server" else value
    settings.PAYCHARGE = {**settings.PAYCHARGE, "WIDGET_JWT": jwt}
    with pytest.raises(ConfigurationError, match=says):
        PAGE.render(Context())
    [error] = [m for m in check_paycharge_settings() if m.id == "django_paycharge.E021"]
    assert isinstance(error, Error) and says in error.msg
    assert jwt not in error.msg


def test_a_named_account_has_its_own_widget_jwt(settings):
    settings.PAYCHARGE = {
        **settings.PAYCHARGE,
        "WIDGET_JWT": TEST_WIDGET_JWT,
        "ACCOUNTS": {"jp": {"SECRET": "s", "JWT": settings.PAYCHARGE["JWT"]}},
    }
    with pytest.raises(ConfigurationError, match=r"\['jp'\]\['WIDGET_JWT'\] is not set"):
        Template("{% load paycharge %}{% paycharge_widget_jwt 'jp' %}").render(Context())
