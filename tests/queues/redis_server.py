"""A real Redis server (Debian's ``redis-server``) that a test can stop and start again.

``scripts/redis.sh`` starts one for CI and exports ``PAYCHARGE_TEST_REDIS_CONF``;
without it the tests start their own on a free port. Either way the server is
described by its configuration file, so a test can take it down (a broker
outage) and bring it back on the same port.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

from django_paycharge.testing.server import free_port
from tests.waiting import wait_until


class RedisServer:
    def __init__(self, conf: Path, *, owned: bool) -> None:
        self.conf = conf
        self.owned = owned  # started by us: stopped by us at the end
        settings = dict(
            line.split(None, 1) for line in conf.read_text().splitlines() if " " in line
        )
        self.port = int(settings["port"])
        self.url = f"redis://127.0.0.1:{self.port}/0"

    @classmethod
    def create(cls) -> RedisServer:
        """A new server in a temporary directory, on a free port of 127.0.0.1."""
        binary = shutil.which("redis-server") or "/usr/bin/redis-server"
        if not os.path.exists(binary):
            raise RuntimeError(
                "redis-server is missing: scripts/test installs Debian's redis-server package."
            )
        workdir = Path(tempfile.mkdtemp(prefix="paycharge-redis-"))
        conf = workdir / "redis.conf"
        conf.write_text(
            f"port {free_port()}\nbind 127.0.0.1\ndir {workdir}\ndaemonize yes\n"
            f"pidfile {workdir}/redis.pid\nlogfile {workdir}/redis.log\n"
            'save ""\nappendonly no\n'
        )
        server = cls(conf, owned=True)
        server.start()
        return server

    @classmethod
    def from_environment(cls) -> RedisServer | None:
        conf = os.environ.get("PAYCHARGE_TEST_REDIS_CONF")
        return cls(Path(conf), owned=False) if conf else None

    def ping(self) -> bool:
        try:
            # Refused at once when down; a server that is up may answer late on a busy host.
            with socket.create_connection(("127.0.0.1", self.port), timeout=5) as s:
                s.sendall(b"PING\r\n")
                return s.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def start(self) -> None:
        if self.ping():
            return
        subprocess.run(["redis-server", str(self.conf)], check=True, capture_output=True)
        self._wait(up=True)

    def stop(self) -> None:
        """Shut the server down at once, without saving (a broker outage)."""
        if not self.ping():
            return
        subprocess.run(
            ["redis-cli", "-p", str(self.port), "shutdown", "nosave"], capture_output=True
        )
        self._wait(up=False)

    def _wait(self, *, up: bool) -> None:
        wait_until(
            lambda: self.ping() == up,
            f"Redis on port {self.port} to {'start' if up else 'stop'}",
        )
