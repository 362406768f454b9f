"""Child process of the dead-worker tests: a real worker, command or web request, to be killed.

    python tests/reliability/worker_child.py db_worker --batch ...   # any management command
    python tests/reliability/worker_child.py post ACCOUNT_URL TOKEN BODY_JSON

Django starts with the test settings on the parent's test database
(``PAYCHARGE_CHILD_DB_NAME``). ``PAYCHARGE_CHILD_SETTINGS`` (JSON) is merged
into ``PAYCHARGE`` so the child talks to the parent's fake gateway server,
and ``PAYCHARGE_CHILD_TASKS=db`` configures django-tasks-db as the task
backend; ``PAYCHARGE_TEST_RECEIVER_DIR`` connects the shop's receiver of
tests/queues/shop. The parent SIGKILLs the child while it processes a delivery
or while that receiver runs.
"""

from __future__ import annotations

import json
import os
import sys


def main() -> None:
    import django

    django.setup()
    from django.conf import settings
    from django.test.utils import override_settings

    overrides = {
        "PAYCHARGE": {**settings.PAYCHARGE, **json.loads(os.environ["PAYCHARGE_CHILD_SETTINGS"])}
    }
    if os.environ.get("PAYCHARGE_CHILD_TASKS") == "db":
        overrides["TASKS"] = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
    override_settings(**overrides).enable()  # also resets what was built from the old ones
    if os.environ.get("PAYCHARGE_TEST_RECEIVER_DIR"):  # the shop's receiver, to be killed in
        from django_paycharge import signals
        from django_paycharge.models import Charge
        from tests.queues.shop.receivers import mark_paid

        signals.charge_status_changed.connect(mark_paid, sender=Charge, dispatch_uid="queue-shop")

    if sys.argv[1] == "post":  # a web request processing its delivery inline
        from django.test import Client

        url, token, body = sys.argv[2:5]
        response = Client().post(
            url, data=body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}"
        )
        print(f"answered {response.status_code}")
        return
    from django.core.management import call_command

    call_command(*sys.argv[1:])
    print("finished")


if __name__ == "__main__":
    main()
