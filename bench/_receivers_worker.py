"""A contender of the receivers benchmark, run in its own process by ``bench.receivers``.

    python -m bench._receivers_worker none|readme|noop [--limit N] [--windows W]

Connects the receiver named (none: no receiver of the charge signals) and runs
``bench._sync_workers.ours``: ``services.sync_charges(full=True)``. The answer is
its JSON line plus ``heard``, how many times the receiver ran. Also run on
another commit's code (``bench.receivers --reference``): it only connects a
receiver and calls the sync.
"""

from __future__ import annotations

import argparse
import logging
import os
import tempfile
from typing import Any

import django

#: README's receiver logs to the shop's logger; here into a file, as a shop's log would.
logger = logging.getLogger("shop.models")
heard = [0]


def payment_changed(
    sender: Any, charge: Any, previous_status: Any, status: Any, **kwargs: Any
) -> None:
    """README's receiver, as written there (and a count of its runs)."""
    heard[0] += 1
    logger.warning("Order %s: payment %s", charge.metadata.get("order"), status)


def nothing(sender: Any, **kwargs: Any) -> None:
    """A receiver that does nothing (but count its runs)."""
    heard[0] += 1


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("receiver", choices=["none", "readme", "noop"])
    parser.add_argument("--limit", type=int, default=10**9, help="stop after this many rows")
    parser.add_argument("--windows", type=int, help="windows read side by side")
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.settings")
    django.setup()
    from bench import _receivers_worker as shop  # this module by its name, not __main__
    from bench._common import emit
    from bench._sync_workers import ours
    from django_paycharge.signals import charge_status_changed

    with tempfile.NamedTemporaryFile("w", suffix=".log") as log:
        shop.logger.addHandler(logging.FileHandler(log.name))
        if args.receiver != "none":
            receiver = shop.payment_changed if args.receiver == "readme" else shop.nothing
            charge_status_changed.connect(receiver, weak=False)  # as README connects it
        result = ours(args.limit, args.windows)
    emit({**result, "heard": shop.heard[0]})


if __name__ == "__main__":
    main()
