"""One process of the two-process lifecycle race: the API's way, or the admin's (the service).

    python tests/reliability/lifecycle_child.py api|admin WORKDIR

``WORKDIR/rounds.json`` lists the rounds: ``{"kind", "charge"}`` (a mirror pk).
For round N the process waits for ``go-N``, then captures, cancels or refunds
that charge with a key of its own, and writes ``result-N-<mode>.json``:
``{"outcome": "done" | "busy" | "refused" | "unknown" | "error", "detail"}``.
The API way goes through the DRF endpoint (a staff user with the action's
permission, ``Idempotency-Key`` set); the admin's way calls the service the admin
action calls, with the key the confirmation page would carry.
"""

from __future__ import annotations

import json
import os
import sys
import uuid
from pathlib import Path
from typing import Any

AMOUNTS = {"capture": None, "cancel": None, "refund": None, "partial refund": 600}


def wait_for(path: Path) -> None:
    """Until the test writes ``path``."""
    from tests.waiting import wait_until

    wait_until(path.exists, f"{path.name} from the test", every=0.002)


def main() -> None:
    mode, workdir = sys.argv[1], Path(sys.argv[2])
    import django

    django.setup()
    from django.conf import settings

    settings.PAYCHARGE = {
        **settings.PAYCHARGE,
        **json.loads(os.environ["PAYCHARGE_CHILD_SETTINGS"]),
    }
    settings.ALLOWED_HOSTS = ["*"]
    from django.contrib.auth.models import User
    from rest_framework.test import APIClient

    from django_paycharge import services
    from django_paycharge.exceptions import ChargeBusyError, PayChargeError
    from django_paycharge.models import Charge

    client = APIClient()
    client.force_authenticate(User.objects.get(username="operator"))
    rounds = json.loads((workdir / "rounds.json").read_text())
    for n, spec in enumerate(rounds):
        kind, charge = spec["kind"], Charge.objects.get(pk=spec["charge"])
        wait_for(workdir / f"go-{n}")
        result: dict[str, Any]
        if mode == "api":
            result = _by_api(client, kind, charge)
        else:
            try:
                _by_service(services, kind, charge)
                result = {"outcome": "done", "detail": ""}
            except ChargeBusyError as exc:
                result = {"outcome": "busy", "detail": str(exc)}
            except PayChargeError as exc:
                result = {"outcome": exc.outcome or "refused", "detail": str(exc)}
            except Exception as exc:  # reported to the parent as damage
                result = {"outcome": "error", "detail": repr(exc)}
        # Written whole, then renamed: the test reads a result as soon as its name exists.
        partial = workdir / f"partial-{n}-{mode}.json"
        partial.write_text(json.dumps(result))
        partial.replace(workdir / f"result-{n}-{mode}.json")


def _by_service(services: Any, kind: str, charge: Any) -> None:
    key = f"{uuid.uuid4().hex}:{charge.pk}"  # the admin page's key, one per charge
    if kind == "capture":
        services.capture_charge(charge, idempotency_key=key, requested_by="admin")
    elif kind == "cancel":
        services.cancel_charge(charge, idempotency_key=key, requested_by="admin")
    else:
        amount = AMOUNTS[kind]
        services.refund_charge(charge, amount=amount, idempotency_key=key, requested_by="admin")


def _by_api(client: Any, kind: str, charge: Any) -> dict[str, Any]:
    what = {"capture": "capture", "cancel": "cancels"}.get(kind, "refunds")
    body = {"amount": AMOUNTS[kind]} if AMOUNTS[kind] else {}
    answer = client.post(
        f"/api/payments/charges/{charge.gateway_id}/{what}/",
        body,
        format="json",
        HTTP_IDEMPOTENCY_KEY=uuid.uuid4().hex,
    )
    data = answer.json() if answer.content else {}
    code = data.get("code", "")
    if answer.status_code in (200, 201):
        return {"outcome": "done", "detail": ""}
    if code == "charge_busy":
        return {"outcome": "busy", "detail": data.get("message", "")}
    if code == "outcome_unknown":
        return {"outcome": "unknown", "detail": data.get("message", "")}
    if answer.status_code in (400, 409):
        return {"outcome": "refused", "detail": f"{answer.status_code} {code}"}
    return {"outcome": "error", "detail": f"{answer.status_code} {code}"}


if __name__ == "__main__":
    main()
