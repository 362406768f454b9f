"""Real task backends, a real Redis server and real worker processes (see backends.py)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from .backends import ALIAS, QUEUE, celery_backend, selected, settings_for, worker_command
from .redis_server import RedisServer

TOKEN = "whk-queue-token"
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

    def __init__(self, kind: str, env: dict[str, str], log: Path) -> None:
        self.kind, self.env, self.log = kind, env, log
        self.process: subprocess.Popen[bytes] | None = None
        self.beat_schedule_file = ""
        # Supervised: started again when it exits, as systemd's Restart=always would.
        self.supervised = False
        self.restarts = 0

    def start(self) -> None:
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                worker_command(self.kind, beat_schedule_file=self.beat_schedule_file),
                cwd=ROOT,
                env=self.env,
                stdout=out,
                stderr=out,
            )

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(5)

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]

    def wait_for(self, condition: Callable[[], bool], what: str, timeout: float = 60) -> None:
        """Poll ``condition`` until true; fail with the worker's log otherwise."""
        deadline = time.monotonic() + timeout
        while not condition():
            if self.process is not None and self.process.poll() is not None and self.supervised:
                self.restarts += 1
                self.start()
            elif self.process is not None and self.process.poll() is not None:
                pytest.fail(f"The {self.kind} worker exited: {what}\n{self.output()}")
            if time.monotonic() > deadline:
                pytest.fail(f"Timed out waiting for {what} ({self.kind})\n{self.output()}")
            time.sleep(0.1)


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
    worker = Worker(kind, env, tmp_path / f"{kind}-worker.log")
    worker.start()
    yield worker
    worker.stop()


def post_delivery(client: Any, body: dict[str, Any]) -> Any:
    return client.post(
        "/payments/webhook/",
        data=json.dumps(body),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {TOKEN}",
    )
