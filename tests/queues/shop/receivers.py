"""The shop's ``charge_status_changed`` receiver, as the queue tests' workers run it.

It acts on ``successful`` only, and leaves a trace of each such run in
``PAYCHARGE_TEST_RECEIVER_DIR`` (files: the test reads them from another
process): ``started-N`` when run N begins (with
the pid of the process running it and the event id), ``heard-EVENT`` when a
run returns. ``PAYCHARGE_TEST_RECEIVER_MODE`` says what the first run does:
``hang`` (it waits there to be killed) or ``raise`` (the shop's database
blipped); later runs return.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any


def mark_paid(sender: Any, charge: Any, status: str, event_id: Any, **kwargs: Any) -> None:
    if status != "successful":
        return  # the shop acts on payments only
    folder = Path(os.environ["PAYCHARGE_TEST_RECEIVER_DIR"])
    run = len(list(folder.glob("started-*"))) + 1
    _leave(folder / f"started-{run}", f"{os.getpid()} {event_id} {charge.pk} {status}")
    mode = os.environ.get("PAYCHARGE_TEST_RECEIVER_MODE", "")
    if run == 1 and mode == "hang":
        time.sleep(600)  # the test kills this process here
    if run == 1 and mode == "raise":
        raise ConnectionError("the shop's database blipped")
    _leave(folder / f"heard-{event_id}", f"{os.getpid()} {run}")


def _leave(path: Path, text: str) -> None:
    """Write the file whole or not at all: the test reads it from another process, and an
    empty file seen between its creation and its write failed a test on a busy host."""
    part = path.with_name(f".{path.name}.part")
    part.write_text(text)
    os.replace(part, path)
