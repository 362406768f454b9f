"""Front end 2: the fake gateway as a real HTTP server (test only: binds to loopback).

    python -m django_paycharge.testing.server --host 127.0.0.1 --port 8765 \\
        --secret S --jwt J [--store-id UUID] [--merchant-id UUID] [--seed N] \\
        [--processing-delay S]

It prints its base URL and the credentials it accepts (test credentials,
printed on purpose) and stops cleanly on SIGINT/SIGTERM. No Django needed.
"""

from __future__ import annotations

import argparse
import secrets
import signal
import socket
import socketserver
import sys
import threading
from http import HTTPStatus
from http.server import ThreadingHTTPServer

from .app import FakeApp
from .basics import TEST_JWT, TEST_MERCHANT_ID, TEST_SECRET, TEST_STORE_ID, TEST_WIDGET_JWT
from .handle import FakeGateway
from .seeding import seed_charges
from .state import FakeState
from .webhook_sender import WebhookSender, http_transport

_REASONS = {s.value: s.phrase for s in HTTPStatus}
#: What ``--webhook`` registers: what README tells a shop to choose in the console. A refund
#: or a cancel is answered pending; without its ``*_finished`` event only a sync ends it.
WEBHOOK_TRIGGERS = ("charge_updated", "charge_finished", "refund_finished", "cancel_finished")
_MAX_LINE = 65537


def free_port(host: str = "127.0.0.1") -> int:
    """A port free on ``host`` now, for a server started a little later.

    Chosen below the kernel's range of ephemeral ports (``ip_local_port_range``):
    a port found by binding port 0 comes from that range, where any process's
    outgoing connection or ``bind(0)`` may take it before the server starts (a
    test then talks to someone else's listener). Below the range, only another
    caller of this function could; it picks at random among thousands.
    """
    low = _ephemeral_low()
    for _ in range(100):
        port = 10_000 + secrets.randbelow(max(low - 10_000, 1_000))
        with socket.socket() as sock:
            try:
                sock.bind((host, port))
            except OSError:
                continue
            return port
    raise OSError(f"no free port on {host} below {low}")


def _ephemeral_low() -> int:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range", encoding="ascii") as lines:
            return int(lines.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768  # Linux's default


class _Handler(socketserver.StreamRequestHandler):
    """A minimal HTTP/1.1 keep-alive handler.

    ``BaseHTTPRequestHandler`` parses headers with the ``email`` package,
    which costs more than the fake's own work per request; plain splitting is
    enough for a loopback test server (``docs/benchmarks.md``, "Fake gateway").
    """

    disable_nagle_algorithm = True
    timeout = 120  # an idle keep-alive connection frees its thread eventually
    server: _Server

    def handle(self) -> None:
        try:
            while self._one_request():
                pass
        except (OSError, ValueError):
            pass  # the client went away, or sent garbage: nothing to answer

    def _one_request(self) -> bool:
        head = self._head()
        if head is None:
            return False
        method, target, version, headers = head
        connection = headers.get("connection", "").lower()
        keep_alive = connection == "keep-alive" if version == "HTTP/1.0" else connection != "close"
        if headers.get("expect", "").lower() == "100-continue":
            self.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        body = self._body(headers)
        path, _, query = target.partition("?")
        answer = self.server.app.handle(method, path, query, headers, body)
        if answer.fault_action in ("drop_before", "drop_after"):
            # No answer at all: the client sees the connection closed under it.
            self.connection.shutdown(socket.SHUT_RDWR)
            return False
        payload = b"" if method == "HEAD" else answer.body
        self._write(
            answer.status, answer.headers, payload, close=not keep_alive, length=len(answer.body)
        )
        return keep_alive

    def _head(self) -> tuple[str, str, str, dict[str, str]] | None:
        """The request line and the headers (names lower-cased); None when the client left."""
        line = self.rfile.readline(_MAX_LINE)
        while line in (b"\r\n", b"\n"):
            line = self.rfile.readline(_MAX_LINE)
        if not line:
            return None
        parts = line.decode("latin-1").split()
        if len(parts) != 3 or not parts[2].startswith("HTTP/"):
            self._write(400, {"Content-Type": "text/plain"}, b"bad request line", close=True)
            return None
        headers: dict[str, str] = {}
        while True:
            raw = self.rfile.readline(_MAX_LINE)
            if raw in (b"\r\n", b"\n", b""):
                break
            name, _, value = raw.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        return parts[0], parts[1], parts[2], headers

    def _body(self, headers: dict[str, str]) -> bytes:
        if "chunked" in headers.get("transfer-encoding", "").lower():
            chunks: list[bytes] = []
            while True:
                size = int(self.rfile.readline(_MAX_LINE).split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline(_MAX_LINE) not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline(_MAX_LINE)
        length = int(headers.get("content-length") or 0)
        return self.rfile.read(length) if length else b""

    def _write(
        self,
        status: int,
        headers: dict[str, str],
        body: bytes,
        *,
        close: bool,
        length: int | None = None,
    ) -> None:
        lines = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Unknown')}"]
        lines += [f"{name}: {value}" for name, value in headers.items()]
        lines.append(f"Content-Length: {len(body) if length is None else length}")
        if close:
            lines.append("Connection: close")
        self.wfile.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], state: FakeState) -> None:
        super().__init__(address, _Handler)
        host, port = str(self.server_address[0]), int(self.server_address[1])
        self.app = FakeApp(state, f"http://{host}:{port}")


class RunningServer(FakeGateway):
    """A fake gateway served over HTTP from a background thread; the same controls as in-process."""

    def __init__(
        self, host: str = "127.0.0.1", port: int = 0, state: FakeState | None = None
    ) -> None:
        state = state or FakeState()
        state.sender = WebhookSender(http_transport, background=True)
        self._server = _Server((host, port), state)
        super().__init__(state, self._server.app.base_url)
        self.app = self._server.app
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.1,), name="fake-gateway-server", daemon=True
        )
        self._thread.start()

    @property
    def port(self) -> int:
        """The port actually bound (useful with port 0)."""
        return int(self._server.server_address[1])

    def restore_sender(self) -> None:
        """Deliver by real HTTP again, with the default retry policy."""
        self.state.sender.transport = http_transport
        self.state.sender.max_attempts = 4
        self.state.sender.retry_delays = (0.5, 1.0, 2.0)

    def wait_for_deliveries(self, timeout: float = 5.0) -> bool:
        """Block until queued webhook deliveries (and their retries) are settled."""
        return self.state.sender.wait_idle(timeout)

    def stop(self) -> None:
        """Stop serving and close the listening socket."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def main(argv: list[str] | None = None) -> int:
    """Run the server until SIGINT or SIGTERM; exit 0."""
    args = _parser().parse_args(argv)
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    server = RunningServer(args.host, args.port, _state(args))
    for url in args.webhook:
        server.add_webhook(url, WEBHOOK_TRIGGERS, auth_token=args.webhook_token)
    _announce(server, args.webhook)
    while not stop.wait(0.5):
        pass
    server.stop()
    print("stopped", flush=True)
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description="Fake payment charge gateway (test only).")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--secret", default=TEST_SECRET)
    parser.add_argument("--jwt", default=TEST_JWT)
    parser.add_argument(
        "--widget-jwt", default=TEST_WIDGET_JWT, help="a browser app token's JWT (no secret)"
    )
    parser.add_argument("--store-id", default=TEST_STORE_ID)
    parser.add_argument("--merchant-id", default=TEST_MERCHANT_ID)
    parser.add_argument("--seed", type=int, default=0, help="create N charges at start")
    parser.add_argument("--processing-delay", type=float, default=0.0)
    parser.add_argument("--polling-timeout", type=float, default=2.0)
    parser.add_argument(
        "--webhook",
        metavar="URL",
        action="append",
        default=[],
        help="register a webhook configuration (charge_updated, charge_finished, "
        "refund_finished, cancel_finished) for the store, as a shop owner does in the "
        "gateway's console; repeatable",
    )
    parser.add_argument(
        "--webhook-token",
        default="test-webhook-token",
        help="the auth token the fake sends with each --webhook delivery "
        "(put it in PAYCHARGE['WEBHOOK_AUTH_TOKENS'])",
    )
    parser.add_argument(
        "--latency", type=float, default=0.0, help="seconds every API request waits first"
    )
    return parser


def _state(args: argparse.Namespace) -> FakeState:
    """The state the options describe, seeded when asked."""
    state = FakeState(
        secret=args.secret,
        jwt=args.jwt,
        store_id=args.store_id,
        merchant_id=args.merchant_id,
        widget_jwt=args.widget_jwt,
        processing_delay=args.processing_delay,
        polling_timeout=args.polling_timeout,
    )
    state.latency = args.latency
    if args.seed:
        seed_charges(state, args.seed)
    return state


def _announce(server: RunningServer, webhooks: list[str]) -> None:
    # Test credentials, printed on purpose: a script starting the fake needs them.
    print(f"Fake payment gateway (TEST ONLY) listening at {server.base_url}")
    for key, value in server.settings().items():
        print(f"  {key}={value}")
    for url in webhooks:
        print(f"  webhook: {url} ({', '.join(WEBHOOK_TRIGGERS)})")
    print("Controls under /_fake/ (no auth). Stop with Ctrl-C or SIGTERM.", flush=True)


if __name__ == "__main__":
    sys.exit(main())
