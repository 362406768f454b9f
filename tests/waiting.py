"""Waiting in tests: until the event itself, with a deadline only as a guard.

A test that waits on another process, a server, a thread or another connection
waits for the event it needs (a row written, a file made, a port open, a process
ended), polling it: how long that took is never a verdict. The one deadline is
:data:`GUARD`, far above any time expected here (the slowest event waited for
takes seconds, about a minute on a 2-core host at load 12): it ends a run that
would otherwise hang, with a report, and says nothing about the code's speed.

When the guard fires, the failure names what was awaited, how long it was
waited for, and what the other side was doing: ``diagnose()`` returns that (a
log's tail, an exit status, the rows left), and :func:`process_report`,
:func:`fake_gateway_report` and :func:`tail` build the usual parts. A process
passed as ``running`` that ends before the event fails the wait at once: the
event will not come.

The ways to wait: :func:`wait_until` (a condition), :func:`wait_exit` and
:func:`finish` (a process's end), :func:`run` (a command to its end),
:func:`join` (a thread), :func:`wait_event` (another thread's event),
:func:`wait_url` (a server answering), :func:`wait_deliveries` (the fake
gateway's webhooks sent), :func:`browser_context` (Playwright's waits, guarded the
same way). tests/gates/test_no_load_verdicts.py fails on a
deadline of its own (a clock reading plus anything) anywhere in tests/ but here.
"""

from __future__ import annotations

import json
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import pytest
import requests

T = TypeVar("T")

#: Seconds after which a wait gives up: a guard against a hang, never a verdict.
GUARD = 300.0

Diagnose = Callable[[], str]


def wait_until(
    condition: Callable[[], T],
    what: str,
    *,
    guard: float = GUARD,
    every: float = 0.05,
    diagnose: Diagnose | None = None,
    running: Sequence[subprocess.Popen[Any]] = (),
) -> T:
    """Poll ``condition()`` until it is truthy; return that value.

    ``what`` names the event (``"the worker claimed the delivery"``). A process
    of ``running`` that ends first fails the wait at once; so does the guard.
    """
    started = time.monotonic()
    while True:
        value = condition()
        if value:
            return value
        ended = [p for p in running if p.poll() is not None]
        if ended:
            value = condition()  # it may have done it on its way out
            if value:
                return value
            codes = ", ".join(f"pid {p.pid} exited with {p.returncode}" for p in ended)
            _fail(f"{codes} before {what}", started, diagnose, guard)
        if time.monotonic() - started > guard:
            _fail(f"still waiting for {what}", started, diagnose, guard)
        time.sleep(every)


def wait_exit(
    process: subprocess.Popen[Any],
    what: str,
    *,
    guard: float = GUARD,
    diagnose: Diagnose | None = None,
) -> int:
    """The process's exit status, once it ends (its output is not read: see :func:`finish`).

    Past the guard the process is killed and the wait fails with ``diagnose()``.
    """
    started = time.monotonic()
    try:
        return process.wait(guard)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        _fail(f"{what}: still running (killed)", started, diagnose, guard)


def finish(
    process: subprocess.Popen[str],
    what: str,
    *,
    guard: float = GUARD,
    diagnose: Diagnose | None = None,
) -> tuple[int, str]:
    """``(exit status, stdout + stderr)`` of a process whose output is piped, once it ends.

    Past the guard the process is killed; the failure shows what it had printed.
    """
    started = time.monotonic()
    try:
        out, err = process.communicate(timeout=guard)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
        said = (out or "") + (err or "")
        extra = diagnose() if diagnose is not None else ""
        _fail(
            f"{what}: still running (killed)",
            started,
            lambda: f"{extra}\nits output:\n{tail(said)}".strip(),
            guard,
        )
    return process.returncode, (out or "") + (err or "")


def run(
    command: Sequence[str],
    what: str = "",
    *,
    guard: float = GUARD,
    cwd: str | Path | None = None,
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """``subprocess.run`` to the end, its output captured as text; past the guard it fails
    with what the command had printed (its exit status is the caller's to judge)."""
    started = time.monotonic()
    try:
        return subprocess.run(
            command, cwd=cwd, env=env, capture_output=True, text=True, timeout=guard, check=False
        )
    except subprocess.TimeoutExpired as exc:
        said = "".join(
            part.decode(errors="replace") if isinstance(part, bytes) else part
            for part in (exc.stdout, exc.stderr)
            if part
        )
        label = what or " ".join(command)[:200]
        _fail(f"{label}: still running (killed)", started, lambda: tail(said), guard)


def join(
    thread: threading.Thread, what: str, *, guard: float = GUARD, diagnose: Diagnose | None = None
) -> None:
    """Wait for a thread to end."""
    started = time.monotonic()
    thread.join(guard)
    if thread.is_alive():
        _fail(f"{what}: the thread {thread.name} is still running", started, diagnose, guard)


def wait_event(
    event: threading.Event, what: str, *, guard: float = GUARD, diagnose: Diagnose | None = None
) -> None:
    """Wait for another thread to set ``event``."""
    started = time.monotonic()
    if not event.wait(guard):
        _fail(f"still waiting for {what}", started, diagnose, guard)


def browser_context(chromium: Any, **options: Any) -> Any:
    """A new Playwright context whose waits (clicks, selectors, navigations) guard at GUARD.

    Playwright's own default of 30 s is a deadline a loaded host reaches.
    """
    context = chromium.new_context(**options)
    context.set_default_timeout(GUARD * 1000)
    return context


def port_open(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket() as sock:
        return sock.connect_ex((host, port)) == 0


def url_answers(url: str) -> bool:
    """Whether an HTTP server answers at ``url`` (any status)."""
    try:
        requests.get(url, timeout=10)
    except requests.RequestException:
        return False
    return True


def wait_url(
    url: str,
    what: str,
    *,
    guard: float = GUARD,
    diagnose: Diagnose | None = None,
    running: Sequence[subprocess.Popen[Any]] = (),
) -> None:
    """Wait until a server answers at ``url``."""
    wait_until(
        lambda: url_answers(url),
        f"{what} to answer at {url}",
        guard=guard,
        every=0.2,
        diagnose=diagnose,
        running=running,
    )


def wait_deliveries(gateway: Any, what: str = "the fake gateway's webhook deliveries") -> None:
    """Every webhook delivery of a fake gateway server settled (its sender thread is idle)."""
    started = time.monotonic()
    if not gateway.state.sender.wait_idle(GUARD):
        _fail(f"still waiting for {what}", started, lambda: fake_gateway_report(gateway))


def tail(text: str | Path, lines: int = 40) -> str:
    """The last ``lines`` lines of a text, or of a file (missing: says so)."""
    if isinstance(text, Path):
        try:
            text = text.read_text(errors="replace")
        except OSError as exc:
            return f"({text}: {exc})"
    return "\n".join(text.splitlines()[-lines:])


def process_report(
    process: subprocess.Popen[Any], output: str | Path | None = None, name: str = ""
) -> str:
    """Whether a process still runs or how it ended, and the tail of its output."""
    label = f"{name or 'process'} (pid {process.pid})"
    code = process.poll()
    state = "still running" if code is None else f"exited with {code}"
    said = f"; its output:\n{tail(output)}" if output is not None else ""
    return f"{label} {state}{said}"


def ended_report(process: subprocess.Popen[str], name: str = "") -> str:
    """How a process whose output is piped ended, and what it printed (for a failing test).

    One still running is killed first: its pipes can be read to the end only then.
    """
    if process.poll() is None:
        process.kill()
        name = f"{name or 'process'}, still running (killed)"
    out, err = process.communicate()
    return f"{process_report(process, (out or '') + (err or ''), name)}"


def fake_gateway_report(gateway: Any, last: int = 15) -> str:
    """A fake gateway's last requests, its armed faults, keys in progress and deliveries."""
    state = gateway.state
    with state.lock:
        # The key alone: the first half of the dictionary's key is the caller's credentials.
        held = [key for (_, key), record in state.idempotency.items() if record.response is None]
        deliveries = [d.to_json() for d in state.deliveries[-last:]]
    requests_seen = [
        f"{r['method']} {r['path']}{'?' + r['query'] if r['query'] else ''}"
        for r in list(state.requests_log)[-last:]
    ]
    faults = [f.to_json() for f in state.faults.list()]
    return "\n".join(
        [
            f"fake gateway: last requests {requests_seen}",
            f"faults armed: {faults}",
            f"idempotency keys in progress: {held}",
            f"deliveries: {json.dumps(deliveries, default=str)[-3000:]}",
        ]
    )


def _fail(
    message: str, started: float, diagnose: Diagnose | None, guard: float = GUARD
) -> NoReturn:
    waited = time.monotonic() - started
    report = ""
    if diagnose is not None:
        try:
            report = diagnose()
        except Exception as exc:  # a report that breaks must not hide the failure
            report = f"(the diagnosis failed: {exc!r})"
    text = f"{message} (waited {waited:.1f} s; the guard: {guard:g} s)"
    pytest.fail(f"{text}\n{report}".rstrip())
