"""One ``manage.py shell`` of a shop, kept running for the test's reads of its database.

A test reads what the shop stored through the shop's own Django: a new ``manage.py shell
-c`` a read started Django again each time (most of a second of CPU, dozens of times a
module). This shell starts once and runs each piece of code it is sent, in a fresh
namespace, in autocommit: every read sees what the shop's processes committed before it.
"""

from __future__ import annotations

import contextlib
import json
import queue
import subprocess
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tests.waiting import GUARD, tail

# Runs inside the shop's Django: one JSON line in (the code), one marked JSON line out
# (what it printed, or the traceback).
_MARK = "@@shell-reply "
_LOOP = """
import contextlib, io, json, sys, traceback
from django.db import close_old_connections
for line in sys.stdin:
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            exec(json.loads(line), {})
        reply = {"ok": True, "out": out.getvalue()}
    except BaseException:
        reply = {"ok": False, "out": out.getvalue() + traceback.format_exc()}
    close_old_connections()
    sys.__stdout__.write("@@shell-reply " + json.dumps(reply) + "\\n")
    sys.__stdout__.flush()
"""


class DjangoShell:
    """``python manage.py shell`` in ``cwd``, started at the first :meth:`query`."""

    def __init__(self, python: str, cwd: Path, env: Mapping[str, str]) -> None:
        self._command: Sequence[str] = [python, "manage.py", "shell", "-c", _LOOP]
        self._cwd, self._env = cwd, dict(env)
        self._process: subprocess.Popen[str] | None = None
        self._replies: queue.Queue[str | None] = queue.Queue()
        self._errors = tempfile.TemporaryFile("w+")  # noqa: SIM115 (its stderr, open as long as we are)

    def query(self, code: str, timeout: float = GUARD) -> Any:
        """The JSON value ``code`` printed last, read in the shop's own Django.

        It waits for the reply line (or the shell's end); ``timeout`` is a guard.
        """
        process = self._started()
        assert process.stdin is not None
        process.stdin.write(json.dumps(code) + "\n")
        process.stdin.flush()
        try:
            line = self._replies.get(timeout=timeout)
        except queue.Empty:
            line = None
        if line is None:
            state = "ended" if process.poll() is not None else f"hung for {timeout:g} s"
            self.stop()
            self._errors.seek(0)
            said = self._errors.read()
            raise AssertionError(f"the shop's shell {state} on:\n{code}\n{tail(said)}")
        reply = json.loads(line)
        assert reply["ok"], reply["out"]
        return json.loads(reply["out"].strip().splitlines()[-1])

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        with contextlib.suppress(OSError):
            assert process.stdin is not None
            process.stdin.close()  # the loop ends at the end of its input
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)

    def _started(self) -> subprocess.Popen[str]:
        if self._process is None or self._process.poll() is not None:
            self._replies = queue.Queue()  # nothing of an earlier shell's
            self._process = subprocess.Popen(
                self._command,
                cwd=self._cwd,
                env=self._env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._errors,
                text=True,
            )
            threading.Thread(target=self._read, args=(self._process,), daemon=True).start()
        return self._process

    def _read(self, process: subprocess.Popen[str]) -> None:
        assert process.stdout is not None
        for line in process.stdout:  # anything else the shell prints is not a reply
            if line.startswith(_MARK):
                self._replies.put(line[len(_MARK) :])
        self._replies.put(None)  # it ended
