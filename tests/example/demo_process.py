"""Run ``scripts/demo`` from a fresh clone of the repository, as a new user would."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from tests.django_shell import DjangoShell
from tests.waiting import GUARD, join, process_report, wait_exit, wait_until

# nox runs the suite from a copy of tests/ and says where the repository is.
REPO = Path(os.environ.get("PAYCHARGE_REPO") or Path(__file__).resolve().parents[2])
READY = "The demo is running"
# Variables of this test run that must not leak into the "clean environment".
_DROPPED_PREFIXES = ("PAYCHARGE_", "SHOP_", "DJANGO_", "PYTEST", "VIRTUAL_ENV", "PYTHON")
_DROPPED = {"DATABASE_URL", "GATEWAY_PORT"}


def clean_environment(**extra: str) -> dict[str, str]:
    """This machine's environment minus this test run's own (its venv, Django settings...)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(_DROPPED_PREFIXES) and k not in _DROPPED
    }
    # Not this run's virtualenv either (the repository's .venv, or nox's).
    venvs = {str(REPO / ".venv" / "bin"), os.path.join(sys.prefix, "bin")}
    if os.environ.get("VIRTUAL_ENV"):
        venvs.add(os.path.join(os.environ["VIRTUAL_ENV"], "bin"))
    env["PATH"] = os.pathsep.join(
        p for p in env.get("PATH", "").split(os.pathsep) if p not in venvs
    )
    env.update(extra)
    return env


def clone_head(target: Path) -> Path:
    """``git clone`` the repository's committed HEAD into ``target``."""
    subprocess.run(
        ["git", "clone", "--quiet", "--no-hardlinks", str(REPO), str(target)],
        check=True,
        env=clean_environment(),
        timeout=GUARD,  # a guard: a local clone takes seconds
    )
    return target


@dataclass
class Demo:
    """A running ``scripts/demo``: its URLs, output and admin credentials."""

    root: Path
    process: subprocess.Popen[str]
    env: dict[str, str]
    output: list[str] = field(default_factory=list)
    shop_url: str = ""
    gateway_url: str = ""
    admin_user: str = ""
    admin_password: str = ""
    reader: threading.Thread | None = None
    shell: DjangoShell | None = None

    def text(self) -> str:
        return "".join(self.output)

    def read_output(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.output.append(line)

    def wait_ready(self) -> None:
        wait_until(
            lambda: READY in self.text() and "Press Ctrl-C" in self.text(),
            "scripts/demo to say it is running",
            guard=2 * GUARD,  # it makes a virtualenv and installs into it first: minutes
            every=0.2,
            running=[self.process],
            diagnose=lambda: process_report(self.process, self.text(), "scripts/demo"),
        )
        self._parse(self.text())

    def _parse(self, text: str) -> None:
        shop = re.search(r"Shop:\s+(http://\S+?)/?\s", text)
        gateway = re.search(r"Fake gateway:\s+(http://\S+?)/?\s", text)
        admin = re.search(r"user '([^']+)', password '([^']+)'", text)
        assert shop and gateway and admin, text
        self.shop_url, self.gateway_url = shop.group(1), gateway.group(1)
        self.admin_user, self.admin_password = admin.group(1), admin.group(2)

    def query(self, code: str) -> Any:
        """Run Python in the demo's own Django (``manage.py shell``); it prints one JSON value."""
        if self.shell is None:
            python = str(self.root / ".venv" / "bin" / "python")
            self.shell = DjangoShell(python, self.root / "example_project", self.env)
        return self.shell.query(code)

    def interrupt(self) -> int:
        """Ctrl-C: SIGINT to the script alone (it must stop what it started itself)."""
        if self.shell is not None:  # the tests' own reader, not one of the demo's processes
            self.shell.stop()
        self.process.send_signal(signal.SIGINT)
        report = lambda: process_report(self.process, self.text(), "scripts/demo")  # noqa: E731
        status = wait_exit(self.process, "scripts/demo to stop on Ctrl-C", diagnose=report)
        if self.reader is not None:  # its last lines: read to the end before anyone looks
            join(self.reader, "the reader of the demo's output", diagnose=report)
        return status

    def leftover_processes(self) -> list[str]:
        """Processes still in the demo's process group (its children, had any survived)."""
        out = subprocess.run(
            ["ps", "-eo", "pid=,sid=,args="], capture_output=True, text=True, check=True
        ).stdout
        session = str(self.process.pid)
        rows = (line.split(None, 2) for line in out.splitlines() if line.strip())
        return [" ".join(row) for row in rows if len(row) >= 2 and row[1] == session]


def _hear_interrupts() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)


def start_demo(root: Path, env: dict[str, str]) -> Demo:
    """Start ``scripts/demo`` in ``root`` as its own session (like a terminal's foreground job)."""
    process = subprocess.Popen(
        ["scripts/demo"],
        cwd=root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
        # A terminal's job hears Ctrl-C. Started in the background by a script without job
        # control (a CI lane), this run ignores SIGINT and its children would inherit that;
        # a shell cannot trap a signal ignored at its start, so the demo never stopped.
        preexec_fn=_hear_interrupts,
    )
    demo = Demo(root=root, process=process, env=env)
    demo.reader = threading.Thread(target=demo.read_output, daemon=True)
    demo.reader.start()
    try:
        demo.wait_ready()
    except BaseException:
        with contextlib.suppress(ProcessLookupError):  # it may have stopped by itself
            os.killpg(process.pid, signal.SIGKILL)
        raise
    return demo


def port_is_closed(url: str) -> bool:
    parts = urlsplit(url)
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex((parts.hostname or "", parts.port or 80)) != 0
