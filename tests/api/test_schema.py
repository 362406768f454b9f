from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from drf_spectacular.validation import validate_schema
from openapi_spec_validator import validate as validate_openapi

from django_paycharge.api.schema import generate_schema, render_yaml

CHECKED_IN = Path(__file__).resolve().parents[2] / "docs" / "openapi.yaml"
REGENERATE = (
    "DJANGO_SETTINGS_MODULE=tests.settings python -m django_paycharge.api.schema docs/openapi.yaml"
)


def test_the_checked_in_schema_is_up_to_date():
    assert CHECKED_IN.read_text(encoding="utf-8") == render_yaml(generate_schema()), (
        f"docs/openapi.yaml is stale: regenerate it with `{REGENERATE}`"
    )


def test_the_schema_is_valid_openapi_3():
    schema = yaml.safe_load(CHECKED_IN.read_text(encoding="utf-8"))
    assert schema["openapi"].startswith("3.")
    validate_openapi(schema)  # raises on any violation of the OpenAPI 3 specification
    validate_schema(schema)  # drf-spectacular's own check (the `--validate` of its command)


def test_the_schema_describes_every_endpoint_and_the_error_shape():
    schema = generate_schema()
    operations = {
        (path, method): op["operationId"]
        for path, item in schema["paths"].items()
        for method, op in item.items()
    }
    assert operations == {
        ("/api/payments/charges/", "get"): "charges_list",
        ("/api/payments/charges/", "post"): "charges_create",
        ("/api/payments/charges/{charge_id}/", "get"): "charges_retrieve",
        ("/api/payments/charges/{charge_id}/issuer_token/", "get"): "charges_issuer_token",
        ("/api/payments/charges/{charge_id}/capture/", "post"): "charges_capture",
        ("/api/payments/charges/{charge_id}/refunds/", "get"): "charges_refunds_list",
        ("/api/payments/charges/{charge_id}/refunds/", "post"): "charges_refunds_create",
        ("/api/payments/charges/{charge_id}/cancels/", "get"): "charges_cancels_list",
        ("/api/payments/charges/{charge_id}/cancels/", "post"): "charges_cancels_create",
        ("/api/payments/subscriptions/", "get"): "subscriptions_list",
        ("/api/payments/subscriptions/", "post"): "subscriptions_create",
        ("/api/payments/subscriptions/{subscription_id}/", "get"): "subscriptions_retrieve",
        (
            "/api/payments/subscriptions/{subscription_id}/scheduled_payments/",
            "get",
        ): "subscriptions_scheduled_payments",
        **{
            (f"/api/payments/subscriptions/{{subscription_id}}/{change}/", "post"): (
                f"subscriptions_{change}"
            )
            for change in ("suspend", "resume", "cancel", "card")
        },
        ("/api/payments/webhooks/", "get"): "webhooks_list",
        ("/api/payments/webhooks/{webhook_id}/", "get"): "webhooks_retrieve",
    }
    error = schema["components"]["schemas"]["Error"]
    assert set(error["required"]) == {"code", "message", "errors"}
    text = render_yaml(schema)
    for secret_field in ("auth_token", "raw", "secret", "jwt"):
        assert f"{secret_field}:" not in text


@pytest.mark.parametrize(
    ("module", "package"),
    [
        ("drf_spectacular", "drf-spectacular"),
        ("rest_framework", "djangorestframework"),
        ("django_filters", "django-filter"),
    ],
)
def test_the_api_says_clearly_which_extra_is_missing(module, package):
    # DRF is not a dependency of the app: importing the API without it names the extra.
    code = f"import sys; sys.modules[{module!r}] = None\nimport django_paycharge.api\n"
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={"DJANGO_SETTINGS_MODULE": "tests.settings", "PYTHONPATH": str(CHECKED_IN.parents[1])},
        check=False,
    )
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert package in result.stderr
    assert "pip install 'django-paycharge[api]'" in result.stderr


def test_the_charge_list_documents_its_filters():
    schema = generate_schema()
    listed = {p["name"] for p in schema["paths"]["/api/payments/charges/"]["get"]["parameters"]}
    assert {
        "status", "mode", "currency", "payment_type", "created_after", "created_before",
        "amount_min", "amount_max", "metadata",
    } <= listed  # fmt: skip
