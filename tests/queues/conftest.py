"""Real task backends, a real Redis server and real worker processes (see backends.py)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
from collections.abc import Callable, Iterator
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from tests.waiting import wait_until

from .backends import (
    ALIAS,
    QUEUE,
    celery_backend,
    selected,
    settings_for,
    worker_command,
)
from .redis_server import RedisServer

TOKEN = "whk-queue-token"
#: What each kind of worker logs once it takes work (worker_settings.py logs at INFO).
READY = {"db": "Starting worker", "rq": "Listening on", "celery": " ready."}

ROOT = Path(__file__).resolve().parents[2]
# What each kind needs installed; a missing one fails the test (never a silent skip).
NEEDS = {
    "db": ["django_tasks_db"],
    "rq": ["django_tasks_rq", "django_rq", "rq", "redis"],
    "celery": ["celery", "redis"],
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if Path(str(item.fspath)).parent == Path(__file__).parent:
            item.add_marker(pytest.mark.queues)


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    server = RedisServer.from_environment() or RedisServer.create()
    server.start()
    os.environ["PAYCHARGE_TEST_REDIS_URL"] = server.url
    yield server
    if server.owned:
        server.stop()
        shutil.rmtree(server.conf.parent, ignore_errors=True)
    else:
        server.start()  # leave the script's server as it was found


class Worker:
    """A worker process of one backend, on the test database, logging to a file."""

    def __init__(self, kind: str, env: dict[str, str], log: Path, gateway: Any = None) -> None:
        self.kind, self.env, self.log, self.gateway = kind, env, log, gateway
        self.process: subprocess.Popen[bytes] | None = None
        self.beat_schedule_file = ""
        # Supervised: started again when it exits, as systemd's Restart=always would.
        self.supervised = False
        self.restarts = 0
        # Every worker process started leads a session of its own (its pid is the id).
        self.sessions: list[int] = []

    def start(self, *, ready: bool = True) -> None:
        """Start the worker process; with ``ready``, return once it says it takes work.

        Its start (imports, connections) costs seconds of CPU: on a loaded host tens of
        seconds, which a test's wait for its work must not count (a CI run's wait for a
        sync ran out while the Celery worker was still starting). A supervisor's restart
        (``ready=False``) must not wait: the broker may be down on purpose."""
        offset = self.log.stat().st_size if self.log.exists() else 0
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                worker_command(self.kind, beat_schedule_file=self.beat_schedule_file),
                cwd=ROOT,
                env=self.env,
                stdout=out,
                stderr=out,
                start_new_session=True,  # its children (RQ's scheduler, work horses) with it
            )
        self.sessions.append(self.process.pid)
        if ready:
            marker = READY[self.kind]
            self.wait_for(
                lambda: marker in self.log.read_bytes()[offset:].decode(errors="replace"),
                f"the {self.kind} worker to say it is ready ({marker!r})",
            )

    def stop(self) -> None:
        """End the worker as its supervisor would (SIGTERM, SIGKILL after 15 s) and then
        every process left in the sessions of the workers started, restarts included.

        A process can outlive its worker: RQ logs "Listening on" before it forks its
        scheduler and installs its signal handlers, and a SIGTERM in between ends the
        worker at once while its scheduler runs on, holding its lock in Redis and taking
        it again whenever it expires (a CI run waited out three guards so)."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(15)
        for session in self.sessions:
            for pid in session_members(session):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        if self.process is not None:
            self.process.wait(5)
        wait_until(
            lambda: not any(session_members(s) for s in self.sessions),
            "the workers' processes to end (SIGKILLed)",
        )
        if self.kind == "rq":
            self._release_scheduler_lock()

    def _release_scheduler_lock(self) -> None:
        """Return once RQ's scheduler lock is free. A worker started while it is held tries
        again only ten minutes later, so nothing deferred would run. A lock whose scheduler
        is dead (killed above) is deleted, as the scheduler would have on its way out; one
        whose holder is unknown lasts 61 s at most."""
        from redis import Redis

        broker = Redis.from_url(self.env["PAYCHARGE_TEST_REDIS_URL"], decode_responses=True)
        lock = f"rq:scheduler-lock:{QUEUE}"

        def holder() -> dict[str, str]:
            name = broker.get(lock)
            found = broker.hgetall(f"rq:scheduler:{name!s}") if name else {}
            return {str(key): str(value) for key, value in found.items()}

        pid = int(holder().get("pid") or 0)
        if pid and not alive(pid):
            broker.delete(lock)

        def diagnosis() -> str:
            left = {s: session_members(s) for s in self.sessions}
            return f"the holder: {holder()}; left in the workers' sessions: {left}"

        wait_until(lambda: not broker.exists(lock), f"RQ's {lock} released", diagnose=diagnosis)

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]

    def wait_for(self, condition: Callable[[], bool], what: str) -> None:
        """Until ``condition()``: the wait ends on the event (tests/waiting.py's guard only
        ends a wait for one that never comes, and the failure then shows :meth:`diagnosis`).
        A supervised worker that exits is started again, as its supervisor would."""

        def event() -> bool:
            if self.process is not None and self.process.poll() is not None:
                if not self.supervised:
                    pytest.fail(f"The {self.kind} worker exited: {what}\n{self.diagnosis()}")
                self.restarts += 1
                self.start(ready=False)
            return condition()

        wait_until(event, f"{what} ({self.kind})", every=0.1, diagnose=self.diagnosis)

    def diagnosis(self) -> str:
        """The worker's state, its log, what the fake gateway was asked, and the database's
        locks, leases, tasks and sync checkpoints: what a failed wait needs to be explained."""
        state = "not started" if self.process is None else f"exit code {self.process.poll()}"
        parts = [f"== the {self.kind} worker: {state}, restarted {self.restarts} times"]
        parts.append(f"== its log (last 4,000 characters)\n{self.output()}")
        if self.gateway is not None:
            asked = [f"{r.get('method')} {r.get('path')}" for r in self.gateway.requests_log]
            parts.append(f"== the fake gateway was asked ({len(asked)}): {asked[-30:]}")
        parts.append(database_state())
        return "\n".join(parts)


def _stat(pid: int | str) -> list[str]:
    """A live process's state, parent, group and session (Linux's /proc), or [] once it
    ended (a zombie has ended)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return []
    return [] if fields[0] in ("Z", "X") else fields[:4]


def alive(pid: int) -> bool:
    return bool(_stat(pid))


def session_members(session: int) -> list[int]:
    """The processes alive in ``session``. RQ's work horse leaves its worker's process
    group (``setpgrp``) but not its session, so a session reaches what a group does not."""
    return [
        int(path.name)
        for path in Path("/proc").glob("[0-9]*")
        if (fields := _stat(path.name)) and int(fields[3]) == session
    ]


@pytest.fixture(params=selected())
def queue(request, settings, fake_gateway_server, tmp_path) -> Iterator[Worker]:
    """Work routed to ``request.param``'s backend (alias ``paycharge``, queue ``payments``),
    and a running worker process of it."""
    kind = request.param
    missing = [m for m in NEEDS[kind] if not find_spec(m)]
    if kind == "celery" and not find_spec(celery_backend().split(".")[0]):
        missing.append(celery_backend().split(".")[0])
    if missing:
        pytest.fail(f"The {kind} queue tests need {missing}: install the dev dependency group.")
    redis_url = ""
    if kind != "db":
        redis = request.getfixturevalue("redis_server")
        redis_url = redis.url
        subprocess.run(["redis-cli", "-p", str(redis.port), "flushall"], capture_output=True)
    for key, value in settings_for(kind, redis_url).items():
        setattr(settings, key, value)
    settings.PAYCHARGE = {
        **settings.PAYCHARGE,
        "TASK_BACKEND": ALIAS,
        "TASK_QUEUE": QUEUE,
        "WEBHOOK_AUTH_TOKENS": [TOKEN],
    }
    child: dict[str, Any] = {
        k: settings.PAYCHARGE[k]
        for k in ("BASE_URL", "SECRET", "JWT", "STORE_ID", "TASK_BACKEND", "TASK_QUEUE")
    }
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.queues.worker_settings",
        "PAYCHARGE_CHILD_DB_NAME": str(connection.settings_dict["NAME"]),
        "PAYCHARGE_CHILD_SETTINGS": json.dumps({k: str(v) for k, v in child.items()}),
        "PAYCHARGE_TEST_QUEUE": kind,
        "PAYCHARGE_TEST_REDIS_URL": redis_url,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    worker = Worker(kind, env, tmp_path / f"{kind}-worker.log", fake_gateway_server)
    worker.start()
    yield worker
    worker.stop()


def database_state() -> str:
    """Locks held, leases, queued tasks and sync checkpoints, read on a connection of its own
    (the test's may be inside a transaction)."""
    from django.db import connections

    queries = {
        "advisory locks held (pid, holder's state, its query)": (
            "SELECT l.pid, a.state, left(a.query, 120) FROM pg_locks l"
            " JOIN pg_stat_activity a ON a.pid = l.pid WHERE l.locktype = 'advisory'"
        ),
        "sync checkpoints": (
            "SELECT account, resource, run_holder, run_started_at, last_completed_at,"
            " left(last_error, 200) FROM django_paycharge_synccheckpoint"
        ),
        "webhook deliveries": (
            "SELECT id, event, status, attempts, claimed_by, lease_until, left(last_error, 200)"
            " FROM django_paycharge_webhookdelivery ORDER BY id"
        ),
        "announcements": (
            "SELECT id, receiver, status, attempts, claimed_by, lease_until"
            " FROM django_paycharge_announcement ORDER BY id"
        ),
        "django-tasks-db tasks": (
            "SELECT task_path, status, enqueued_at, started_at, finished_at"
            " FROM django_tasks_database_dbtaskresult ORDER BY enqueued_at"
        ),
    }
    conn = connections.create_connection("default")
    parts = []
    try:
        for title, sql in queries.items():
            try:
                with conn.cursor() as cursor:
                    cursor.execute(sql)
                    rows = cursor.fetchall()
            except Exception as exc:  # a diagnosis reports what it cannot read, never fails
                rows = [f"(not read: {type(exc).__name__}: {str(exc).splitlines()[0]})"]
            parts.append(f"== {title}: {rows}")
    finally:
        conn.close()
    return "\n".join(parts)


def post_delivery(client: Any, body: dict[str, Any]) -> Any:
    return client.post(
        "/payments/webhook/",
        data=json.dumps(body),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {TOKEN}",
    )
