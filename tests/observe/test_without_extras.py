"""Without the extras: the app imports and calls the gateway; a wrong TELEMETRY is reported."""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

import pytest

from tests import waiting

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent(
    """
    import sys
    # As if neither extra were installed: importing them fails.
    for name in ("prometheus_client", "opentelemetry", "opentelemetry.trace"):
        sys.modules[name] = None
    import django
    django.setup()
    import responses
    from django.conf import settings
    from django.core.checks import run_checks
    from django.test.utils import override_settings

    import django_paycharge.admin, django_paycharge.views.metrics  # noqa: F401
    from django_paycharge import observe, services
    from django_paycharge.testing import FakeGateway
    from django_paycharge.testing.responses_frontend import ResponsesFrontend

    gateway = FakeGateway()
    telemetry = sys.argv[1].split(",") if sys.argv[1] else []
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock, override_settings(
        PAYCHARGE={**settings.PAYCHARGE, **gateway.settings(), "TELEMETRY": telemetry}
    ):
        ResponsesFrontend(gateway.app).install(mock)
        created = gateway.create_charge(gateway.create_transaction_token("card")["id"])
        with observe.scoped(delivery="7"):
            charge = services.get_client().charges.retrieve(created["store_id"], created["id"])
            seen = observe.request_id()
        errors = [m.id for m in run_checks() if m.id == "django_paycharge.E030"]
    assert charge.status == "successful", charge.status
    assert seen, "the request id was not noted"
    assert "prometheus_client" not in {k for k, v in sys.modules.items() if v is not None}
    print("ok", errors)
    """
)


def run(telemetry: str) -> str:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings", "PYTHONPATH": str(ROOT)}
    done = waiting.run([sys.executable, "-c", SCRIPT, telemetry], cwd=ROOT, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip().splitlines()[-1]


@pytest.mark.db_independent
@pytest.mark.slow
def test_the_app_runs_without_the_extras():
    assert run("") == "ok []"


@pytest.mark.db_independent
@pytest.mark.slow
def test_a_backend_whose_package_is_missing_is_left_off_and_named_by_the_checks():
    # The gateway call still works; the check names the missing package.
    assert run("prometheus,opentelemetry") == (
        "ok ['django_paycharge.E030', 'django_paycharge.E030']"
    )
