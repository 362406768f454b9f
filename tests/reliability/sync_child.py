"""Child process of the sync reliability tests: ``manage.py paycharge_sync`` as a cron job runs it.

    python tests/reliability/sync_child.py [paycharge_sync options...]

Django starts with the test settings on the parent's test database
(``PAYCHARGE_CHILD_DB_NAME``); ``PAYCHARGE_CHILD_SETTINGS`` (JSON) is merged
into ``settings.PAYCHARGE`` so the child talks to the parent's fake gateway
server. The exit status and messages are the command's own.
"""

from __future__ import annotations

import json
import os
import sys


def main() -> None:
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import execute_from_command_line

    settings.PAYCHARGE = {
        **settings.PAYCHARGE,
        **json.loads(os.environ["PAYCHARGE_CHILD_SETTINGS"]),
    }
    execute_from_command_line(["manage.py", "paycharge_sync", *sys.argv[1:]])


if __name__ == "__main__":
    main()
