"""The API's OpenAPI 3 schema, generated with drf-spectacular, as checked into docs/openapi.yaml.

Regenerate::

    DJANGO_SETTINGS_MODULE=tests.settings python -m django_paycharge.api.schema docs/openapi.yaml

Only this app's endpoints are described, mounted at :data:`MOUNT` (the
documented mount point), whatever the shop's own urlconf and
``SPECTACULAR_SETTINGS`` hold, so the file is the same everywhere.
"""

from __future__ import annotations

import sys
from typing import Any

from django.urls import include, path
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.renderers import OpenApiYamlRenderer
from drf_spectacular.settings import patched_settings

MOUNT = "api/payments/"

SETTINGS: dict[str, Any] = {
    "TITLE": "django-paycharge API",
    "DESCRIPTION": (
        "Charges, issuer tokens and webhook configurations of a django-paycharge shop. "
        "Paths assume the app's API is mounted at /api/payments/. Every error answer is "
        "{code, message, errors[{field, reason}]}; see docs/api.md."
    ),
    "VERSION": "1",
    "COMPONENT_SPLIT_REQUEST": True,
    "SORT_OPERATIONS": True,
    # Refunds and cancels have their own statuses and reasons: named, not numbered.
    "ENUM_NAME_OVERRIDES": {
        "OperationStatusEnum": "django_paycharge.models.refunds.OperationStatus",
        "RefundReasonEnum": "django_paycharge.models.refunds.RefundReason",
        "MerchantRefundReasonEnum": "django_paycharge.client.vocabulary.REFUND_REASONS",
    },
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "django_paycharge.api.schema.closed_request_objects",
    ],
}


def closed_request_objects(result: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """Say that request bodies refuse unknown fields (they do: a typo must not pass silently)."""
    for name, component in result.get("components", {}).get("schemas", {}).items():
        if name.endswith("Request") and component.get("type") == "object":
            component["additionalProperties"] = False
    return result


def generate_schema() -> dict[str, Any]:
    """The schema as a dict."""
    patterns = [path(MOUNT, include("django_paycharge.api.urls"))]
    with patched_settings(SETTINGS):
        generator = SchemaGenerator(patterns=patterns)  # type: ignore[no-untyped-call]
        schema: dict[str, Any] = generator.get_schema(  # type: ignore[no-untyped-call]
            request=None, public=True
        )
    return schema


def render_yaml(schema: dict[str, Any]) -> str:
    """The schema as the YAML text checked in."""
    with patched_settings(SETTINGS):
        rendered: bytes = OpenApiYamlRenderer().render(  # type: ignore[no-untyped-call]
            schema, renderer_context={}
        )
    return rendered.decode()


def main(argv: list[str]) -> int:
    """Write the schema to ``argv[0]`` (stdout when absent)."""
    import django

    django.setup()
    text = render_yaml(generate_schema())
    if argv:
        with open(argv[0], "w", encoding="utf-8") as fh:
            fh.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
