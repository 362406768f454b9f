"""django_paycharge.celery without a worker: what its messages may run, its beat entries."""

from __future__ import annotations

from datetime import timedelta

import pytest

from django_paycharge import celery as paycharge_celery
from django_paycharge.periodic import STEPS


def test_a_message_runs_only_a_task_never_any_callable():
    with pytest.raises(TypeError, match="is not a task"):
        paycharge_celery._run_task("os.getcwd", [], {})


def test_beat_entries_cover_every_periodic_step_once():
    entries = paycharge_celery.beat_schedule(sweep_every=timedelta(seconds=30), queue="payments")
    steps = [step for entry in entries.values() for step in entry["kwargs"]["steps"]]
    assert sorted(steps) == sorted(STEPS)
    assert {entry["task"] for entry in entries.values()} == {paycharge_celery.PERIODIC}
    assert entries["paycharge-sweep-recover"]["schedule"] == 30.0
    assert all(entry["options"] == {"queue": "payments"} for entry in entries.values())
