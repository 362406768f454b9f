"""The worker harness itself: what a test leaves behind must not decide the next one."""

from __future__ import annotations

import os
import re
import signal

import pytest
from redis import Redis

from tests.waiting import wait_until

from .backends import QUEUE
from .conftest import Worker, alive, session_members

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize("queue", ["rq"], indirect=True)
def test_a_scheduler_left_running_by_its_dead_worker_is_ended_and_its_lock_freed(
    queue: Worker,
) -> None:
    """RQ's worker can die while the scheduler it forked runs on (a SIGTERM before its
    handlers are installed); that scheduler holds its lock in Redis for ever, and every
    later RQ worker schedules nothing (a CI run failed three tests so)."""
    pattern = re.compile(r"Scheduler for \S+ started with PID (\d+)")
    scheduler = int(
        wait_until(lambda: pattern.findall(queue.output()), "the worker's scheduler to start")[0]
    )
    assert queue.process is not None
    os.kill(queue.process.pid, signal.SIGKILL)  # the worker alone
    queue.process.wait(15)
    broker = Redis.from_url(queue.env["PAYCHARGE_TEST_REDIS_URL"])
    assert alive(scheduler) and broker.exists(f"rq:scheduler-lock:{QUEUE}")

    queue.stop()

    assert not alive(scheduler)
    assert not broker.exists(f"rq:scheduler-lock:{QUEUE}")
    assert all(session_members(session) == [] for session in queue.sessions)
