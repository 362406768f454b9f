"""A new Django project, built the way the docs tell a reader to, with real processes."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django_paycharge.testing.server import free_port
from tests.django_shell import DjangoShell
from tests.waiting import GUARD, port_open, process_report, wait_until
from tests.waiting import run as run_guarded

from .snippets import Snippet, pip_requirements

REPO = Path(os.environ.get("PAYCHARGE_REPO") or Path(__file__).resolve().parents[2])
BIN = Path(sys.executable).parent  # this test run's virtualenv: django-paycharge is in it
DOC_PORTS = {"gateway": "8765", "shop": "8000", "redis": "6379"}
#: ``env`` options that unset the gateway's variables: a CI runner has none of them.
WITHOUT_GATEWAY = " ".join(
    f"-u {name}" for name in ("PAYCHARGE_BASE_URL", "PAYCHARGE_SECRET", "PAYCHARGE_JWT",
                              "PAYCHARGE_WIDGET_JWT", "PAYCHARGE_STORE_ID",
                              "PAYCHARGE_WEBHOOK_TOKEN")
)  # fmt: skip


def wait_for_port(port: int, process: subprocess.Popen[str], output: list[str]) -> None:
    wait_until(
        lambda: port_open(port),
        f"a listener on port {port}",
        every=0.1,
        running=[process],
        diagnose=lambda: process_report(process, "".join(output)),
    )


@dataclass
class Background:
    name: str
    process: subprocess.Popen[str]
    port: int
    command: str
    output: list[str] = field(default_factory=list)

    def text(self) -> str:
        return "".join(self.output)


@dataclass
class Project:
    """``django-admin startproject mysite`` plus ``startapp shop``: the reader's own shop."""

    root: Path
    env: dict[str, str]
    ports: dict[str, int]
    running: dict[str, Background] = field(default_factory=dict)
    outputs: list[str] = field(default_factory=list)
    # One kept ``manage.py shell`` for the test's reads, with the settings and environment
    # it started with: a snippet that changes either gets the next read a new one.
    shell: DjangoShell | None = None
    changes: int = 0
    shell_changes: int = -1

    @classmethod
    def create(cls, root: Path) -> Project:
        keep = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "PAYCHARGE_CHROMIUM")
        env = {k: v for k, v in os.environ.items() if k in keep}
        env["PATH"] = os.pathsep.join([str(BIN), env.get("PATH", "")])
        env["PYTHONUNBUFFERED"] = "1"
        root.mkdir(parents=True)
        project = cls(root, env, {name: free_port() for name in DOC_PORTS})
        project.run("django-admin startproject mysite .")
        project.run("python manage.py startapp shop")
        # The reader's shop is an installed app of theirs.
        with (root / "mysite" / "settings.py").open("a") as settings:
            settings.write('\nINSTALLED_APPS += ["shop"]\n')
        return project

    def run(self, command: str, *, timeout: float = GUARD) -> str:
        result = run_guarded(
            ["bash", "-euo", "pipefail", "-c", command],
            f"$ {command}",
            guard=timeout,
            cwd=self.root,
            env=self.env,
        )
        output = result.stdout + result.stderr
        assert result.returncode == 0, f"$ {command}\n{output}"
        self.outputs.append(output)
        return output

    def localise(self, text: str) -> str:
        """The docs' ports replaced by this run's free ones (nothing else changes)."""
        for name, port in DOC_PORTS.items():
            text = re.sub(rf"\b{port}\b", str(self.ports[name]), text)
        return text

    def apply(self, snippet: Snippet) -> str:
        """Do with the snippet what the docs say; returns what a command printed."""
        body = self.localise(snippet.body)
        self.changes += snippet.action in ("env", "append", "file")
        if snippet.action == "install":
            check_requirements(pip_requirements(body), snippet)
        elif snippet.action == "env":
            from .snippets import exports

            self.env.update(exports(body))
        elif snippet.action in ("append", "file"):
            path = self.path(snippet.target)
            path.parent.mkdir(parents=True, exist_ok=True)
            mode = "a" if snippet.action == "append" else "w"
            with path.open(mode, encoding="utf-8") as out:
                out.write(("\n" if mode == "a" else "") + body)
        elif snippet.action == "shell":
            return self.run(body)
        elif snippet.action == "background":
            self.background(snippet.target, body)
        elif snippet.action == "worker":
            self.background(snippet.target, body, listens=False)
        else:
            raise AssertionError(f"{snippet}: unknown action")
        return ""

    def path(self, target: str) -> Path:
        if target in ("settings.py", "urls.py"):
            return self.root / "mysite" / target
        return self.root / target

    def background(self, name: str, command: str, *, listens: bool = True) -> Background:
        if name in self.running:
            # Two pages start the same process (the quick start, then a guide that
            # builds on it): the one running already is the one asked for.
            assert self.running[name].command == command.strip(), (name, command)
            return self.running[name]
        process = subprocess.Popen(
            ["bash", "-c", f"exec {command.strip()}"],
            cwd=self.root,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
            start_new_session=True,
        )
        running = Background(name, process, self.ports.get(name, 0), command.strip())
        assert process.stdout is not None
        stream = process.stdout
        threading.Thread(target=lambda: running.output.extend(stream), daemon=True).start()
        self.running[name] = running
        if listens:
            wait_for_port(running.port, process, running.output)
        return running

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.ports[name]}"

    def query(self, code: str) -> Any:
        """Run Python in the project's Django (``manage.py shell``); it prints one JSON value."""
        if self.shell is None or self.shell_changes != self.changes:
            if self.shell is not None:
                self.shell.stop()
            self.shell = DjangoShell(str(BIN / "python"), self.root, self.env)
            self.shell_changes = self.changes
        return self.shell.query(code)

    def stop(self) -> None:
        if self.shell is not None:
            self.shell.stop()
        for running in self.running.values():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(running.process.pid, signal.SIGTERM)
            try:
                running.process.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(running.process.pid, signal.SIGKILL)
                running.process.wait(5)


def check_requirements(requirements: list[str], snippet: Snippet) -> None:
    """``django-paycharge`` and its extras as pyproject.toml defines them."""
    assert requirements, f"{snippet}: no pip install line"
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    for requirement in requirements:
        name, _, extras = requirement.partition("[")
        assert name == project["name"], f"{snippet}: installs {name}"
        for extra in filter(None, extras.rstrip("]").split(",")):
            assert extra in project["optional-dependencies"], f"{snippet}: no extra {extra!r}"
