"""Sending webhook deliveries through a pluggable transport, with retries.

A transport is a callable ``(url, headers, body) -> status``; it raises for a
connection error. The in-process front end sends synchronously and never
sleeps between retries (tests stay fast); the server sends from a worker
thread and waits between retries like the gateway would.
"""

from __future__ import annotations

import queue
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import urlsplit

from .basics import iso, now
from .records import Attempt, Delivery

Transport = Callable[[str, dict[str, str], bytes], int]


def http_transport(url: str, headers: dict[str, str], body: bytes) -> int:
    """Deliver by real HTTP with the gateway's 3-second time-out."""
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")  # noqa: S310
    try:
        with urllib.request.urlopen(request, timeout=3) as answer:  # noqa: S310
            return int(answer.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def django_client_transport(client: Any) -> Transport:
    """A transport posting through a Django test ``Client`` (the URL's path and query only)."""

    def send(url: str, headers: dict[str, str], body: bytes) -> int:
        parts = urlsplit(url)
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        extra = {
            "HTTP_" + name.upper().replace("-", "_"): value
            for name, value in headers.items()
            if name.lower() != "content-type"
        }
        response = client.post(path, data=body, content_type="application/json", **extra)
        return int(response.status_code)

    return send


class WebhookSender:
    """Sends deliveries and records every attempt on the delivery itself."""

    def __init__(
        self,
        transport: Transport | None = None,
        *,
        max_attempts: int = 4,
        retry_delays: Sequence[float] = (0.5, 1.0, 2.0),
        background: bool = False,
    ) -> None:
        self.transport = transport
        self.max_attempts = max_attempts
        self.retry_delays = tuple(retry_delays)
        self.background = background
        self._queue: queue.Queue[tuple[int, Delivery]] = queue.Queue()
        # Bumped by cancel_pending(): queued deliveries of an older generation are dropped.
        self._generation = 0
        self._worker: threading.Thread | None = None
        self._lock = threading.Lock()
        self._busy = 0
        self._idle = threading.Condition(self._lock)

    def send(self, deliveries: Sequence[Delivery]) -> None:
        """Send now (in-process) or hand to the worker thread (server)."""
        if self.transport is None:
            return  # kept "pending" until a transport is set and flush() runs
        for delivery in deliveries:
            if self.background:
                self._enqueue(delivery)
            else:
                self._attempt_all(delivery, sleep=False)

    def wait_idle(self, timeout: float = 5.0) -> bool:
        """Block until every queued delivery is settled (server front end)."""
        deadline = time.monotonic() + timeout
        with self._idle:
            while self._busy:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._idle.wait(left)
        return True

    def cancel_pending(self) -> None:
        """Drop deliveries still queued or being retried (the state was reset).

        Without this, retries to an unreachable URL left by one test would hold
        up the next test's deliveries behind them.
        """
        with self._lock:
            self._generation += 1
            self._idle.notify_all()  # wakes a retry pause: its delivery is dropped at once

    def _pause(self, seconds: float, generation: int | None) -> None:
        """Sleep between attempts; a cancel of ``generation`` ends the pause early."""
        deadline = time.monotonic() + seconds
        with self._idle:
            while generation is None or generation == self._generation:
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                self._idle.wait(left)

    def _enqueue(self, delivery: Delivery) -> None:
        with self._lock:
            self._busy += 1
            generation = self._generation
            if self._worker is None or not self._worker.is_alive():
                self._worker = threading.Thread(
                    target=self._run, name="fake-gateway-webhooks", daemon=True
                )
                self._worker.start()
        self._queue.put((generation, delivery))

    def _run(self) -> None:
        while True:
            generation, delivery = self._queue.get()
            try:
                self._attempt_all(delivery, sleep=True, generation=generation)
            finally:
                with self._idle:
                    self._busy -= 1
                    self._idle.notify_all()

    def _attempt_all(
        self, delivery: Delivery, *, sleep: bool, generation: int | None = None
    ) -> None:
        transport = self.transport
        assert transport is not None
        for number in range(self.max_attempts):
            if generation is not None and generation != self._generation:
                delivery.state = "canceled"
                return
            if number and sleep:
                delays = self.retry_delays or (0.0,)
                self._pause(delays[min(number - 1, len(delays) - 1)], generation)
                if generation is not None and generation != self._generation:
                    delivery.state = "canceled"
                    return
            try:
                status = transport(delivery.url, dict(delivery.headers), delivery.body)
            except Exception as exc:
                delivery.attempts.append(Attempt(iso(now()), None, f"{type(exc).__name__}: {exc}"))
                continue
            delivery.attempts.append(Attempt(iso(now()), status))
            if 200 <= status < 300:
                delivery.state = "delivered"
                return
        delivery.state = "failed"
