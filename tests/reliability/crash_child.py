"""Child process of the crash-recovery test: create one charge, and SIGKILL itself midway.

    python tests/reliability/crash_child.py before_post|after_post|during_post TOKEN_ID AMOUNT

Django starts with the test settings on the parent's test database
(``PAYCHARGE_CHILD_DB_NAME``); ``PAYCHARGE_CHILD_SETTINGS`` (JSON) is merged
into ``settings.PAYCHARGE`` so the child talks to the parent's fake gateway
server. ``Charges.create`` is wrapped so the process dies at the exact point:

- ``before_post``: the charge request is committed, nothing was sent;
- ``after_post``: the gateway created the charge and answered, nothing was stored;
- ``during_post``: half a second into a POST the gateway is still working on (the
  parent slows it down), holding the request's idempotency key.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
from typing import Any


def main() -> None:
    point, token_id, amount = sys.argv[1], sys.argv[2], int(sys.argv[3])
    import django

    django.setup()
    from django.conf import settings

    settings.PAYCHARGE = {
        **settings.PAYCHARGE,
        **json.loads(os.environ["PAYCHARGE_CHILD_SETTINGS"]),
    }

    from django_paycharge import services
    from django_paycharge.client.resources import Charges

    original = Charges.create

    def dying_create(self: Charges, **kwargs: Any) -> Any:
        if point == "before_post":
            os.kill(os.getpid(), signal.SIGKILL)
        if point == "during_post":
            threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGKILL)).start()
        answer = original(self, **kwargs)
        if point == "after_post":
            os.kill(os.getpid(), signal.SIGKILL)
        return answer

    # A stand-in that forwards whatever it is given: not the method's own signature.
    Charges.create = dying_create  # type: ignore[method-assign, assignment]
    services.create_charge(transaction_token_id=token_id, amount=amount, currency="JPY")
    print("survived")  # the parent fails the test on this: the kill point was never reached


if __name__ == "__main__":
    main()
