"""The example shop as real processes: the fake gateway's HTTP server and shop servers.

``start_stack`` starts the fake gateway (``python -m django_paycharge.testing.server``)
and one or more ``manage.py runserver`` processes of the example shop on one
database (``DATABASE_URL``: ``sqlite:///...`` gives Django's default SQLite
settings, as a new shop has them), registers the shop's webhook, and returns a
handle. :class:`Customer` drives a checkout the way the browser does: an order,
a transaction token from the gateway with the widget's JWT, the pay form.
Everything listens on 127.0.0.1 on free ports, and ``stop`` ends every process.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests

from django_paycharge.testing.server import free_port
from tests.django_shell import DjangoShell
from tests.waiting import GUARD, finish, process_report, tail, wait_url

# nox runs the suite from a copy of tests/ and says where the repository is.
ROOT = Path(os.environ.get("PAYCHARGE_REPO") or Path(__file__).resolve().parents[2])
SHOP = ROOT / "example_project"
CARD = {
    "cardholder": "TARO YAMADA",
    "card_number": "4242424242424242",
    "exp_month": 12,
    "exp_year": 2040,
    "cvv": "123",
}
_DROPPED = ("DJANGO_", "PAYCHARGE_", "SHOP_", "PYTEST")


@dataclass
class Stack:
    """Running processes: the fake gateway and the shop servers."""

    gateway_url: str
    shop_urls: list[str]
    env: dict[str, str]
    data_dir: Path
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    shell: DjangoShell | None = None

    def manage(self, *args: str) -> str:
        """Run ``manage.py`` of the shop with the stack's environment; returns stdout + stderr."""
        process = subprocess.Popen(
            [sys.executable, "manage.py", *args],
            cwd=SHOP,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        code, output = finish(process, f"manage.py {' '.join(args)}", diagnose=self.report)
        assert code == 0, output
        return output

    def report(self) -> str:
        """What the stack's processes are doing: each one's state, and their log's tail."""
        states = "\n".join(process_report(p, name=_named(p.args)) for p in self.processes)
        return f"{states}\nprocesses.log:\n{tail(self.data_dir / 'processes.log')}"

    def query(self, code: str) -> Any:
        """A JSON value printed by Python run in the shop's own Django (its database)."""
        if self.shell is None:
            self.shell = DjangoShell(sys.executable, SHOP, self.env)
        return self.shell.query(code)

    def gateway(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        """Call the fake gateway with the shop's credentials (or its controls under /_fake/)."""
        secret, jwt = self.env["PAYCHARGE_SECRET"], self.env["PAYCHARGE_JWT"]
        headers = {"Authorization": f"Bearer {secret}.{jwt}"}
        return requests.request(
            method, self.gateway_url + path, headers=headers, timeout=30, **kwargs
        )

    def remote_charges(self) -> list[dict[str, Any]]:
        """Every charge the fake gateway holds (all pages)."""
        items: list[dict[str, Any]] = []
        cursor = None
        while True:
            params: dict[str, Any] = {"limit": 100}
            if cursor:
                params["cursor"] = cursor
            page = self.gateway("GET", "/charges", params=params).json()
            items += page["items"]
            if not page["has_more"]:
                return items
            cursor = page["items"][-1]["id"]

    def add_fault(self, **fault: Any) -> None:
        answer = requests.post(self.gateway_url + "/_fake/faults", json=fault, timeout=10)
        assert answer.status_code in (200, 201), answer.text

    def clear_faults(self) -> None:
        requests.post(self.gateway_url + "/_fake/faults", json={"clear": True}, timeout=10)

    def deliveries(self, wait: float = GUARD) -> list[dict[str, Any]]:
        """The fake's webhook deliveries with their attempts, once its sender is idle.

        ``wait`` is a guard: the fake answers as soon as its sender is idle.
        """
        answer = requests.get(
            self.gateway_url + "/_fake/deliveries", params={"wait": wait}, timeout=wait + 30
        )
        items: list[dict[str, Any]] = answer.json()["items"]
        return items

    def stop(self) -> None:
        if self.shell is not None:
            self.shell.stop()
        for process in self.processes:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)


def _named(args: Any) -> str:
    return " ".join(map(str, args[1:4])) if isinstance(args, list) else str(args)


def start_stack(
    data_dir: Path, database_url: str, *, shops: int = 2, env: dict[str, str] | None = None
) -> Stack:
    """Start the fake gateway and ``shops`` shop servers on ``database_url``; see the module."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(_DROPPED)}
    base.pop("PYTHONPATH", None)
    credentials = subprocess.run(
        [sys.executable, str(SHOP / "demo_support.py"), "credentials"],
        capture_output=True,
        text=True,
        check=True,
        env=base,
    ).stdout
    gateway_port = free_port()
    shop_urls = [f"http://127.0.0.1:{free_port()}" for _ in range(shops)]
    stack_env = {
        **base,
        **dict(line.split("=", 1) for line in credentials.split()),
        "DJANGO_SETTINGS_MODULE": "example_project.settings",
        "SHOP_DATA_DIR": str(data_dir),
        "DATABASE_URL": database_url,
        "PAYCHARGE_BASE_URL": f"http://127.0.0.1:{gateway_port}",
        "SHOP_WEBHOOK_URL": f"{shop_urls[-1]}/payments/webhook/",
        **(env or {}),
    }
    stack = Stack(f"http://127.0.0.1:{gateway_port}", shop_urls, stack_env, data_dir)
    log = (data_dir / "processes.log").open("ab")
    try:
        stack.processes.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "django_paycharge.testing.server",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(gateway_port),
                    "--secret",
                    stack_env["PAYCHARGE_SECRET"],
                    "--jwt",
                    stack_env["PAYCHARGE_JWT"],
                    "--store-id",
                    stack_env["PAYCHARGE_STORE_ID"],
                    "--merchant-id",
                    stack_env["PAYCHARGE_MERCHANT_ID"],
                ],
                env=stack_env,
                stdout=log,
                stderr=log,
            )
        )
        wait_url(
            stack.gateway_url + "/_fake/faults",
            "the fake gateway",
            diagnose=stack.report,
            running=stack.processes,
        )
        stack.manage("migrate", "--no-input", "-v", "0")
        stack.manage("shop_demo_setup")
        subprocess.run(
            [sys.executable, str(SHOP / "demo_support.py"), "register-webhook"],
            env=stack_env,
            check=True,
            capture_output=True,
        )
        stack.manage("paycharge_sync", "--webhooks", "-v", "0")
        for url in shop_urls:
            stack.processes.append(
                subprocess.Popen(
                    [sys.executable, "manage.py", "runserver", "--noreload", url[len("http://") :]],
                    cwd=SHOP,
                    env=stack_env,
                    stdout=log,
                    stderr=log,
                )
            )
        for url in shop_urls:
            wait_url(url + "/", "the shop", diagnose=stack.report, running=stack.processes)
    except BaseException:
        stack.stop()
        raise
    return stack


class Customer:
    """One browser: its own session and CSRF cookie, on one of the shop's servers."""

    def __init__(self, stack: Stack, shop_url: str) -> None:
        self.stack = stack
        self.shop = shop_url
        self.session = requests.Session()

    def csrf(self) -> str:
        return str(self.session.cookies.get("csrftoken", ""))

    def place_order(self, product: int | None = None) -> str:
        """An order of ``product`` (its pk; the first listed by default); returns its public id."""
        page = self.session.get(self.shop + "/", timeout=30)
        assert page.status_code == 200, page.status_code
        listed = re.search(r'name="product" value="(\d+)"', page.text)
        assert listed, page.text[:500]
        chosen = str(product) if product is not None else listed.group(1)
        answer = self.session.post(
            self.shop + "/orders/",
            data={"product": chosen, "quantity": "1", "csrfmiddlewaretoken": self.csrf()},
            allow_redirects=False,
            timeout=30,
        )
        assert answer.status_code == 302, (answer.status_code, answer.text[:500])
        found = re.search(r"/orders/([0-9a-f-]{36})/checkout/", answer.headers["Location"])
        assert found, answer.headers["Location"]
        return found.group(1)

    def token(self, card: dict[str, Any] | None = None, *, token_type: str = "one_time") -> str:
        """A card transaction token, made as the checkout page's script makes it
        (``token_type="subscription"`` for a product sold by the month)."""
        answer = requests.post(
            self.stack.gateway_url + "/tokens",
            json={
                "payment_type": "card",
                "type": token_type,
                "email": "taro@example.com",
                "data": card or CARD,
            },
            headers={"Authorization": f"Bearer {self.stack.env['PAYCHARGE_JWT']}"},
            timeout=30,
        )
        assert answer.status_code == 201, answer.text
        return str(answer.json()["id"])

    def pay(self, public_id: str, token: str, *, timeout: float = 120) -> requests.Response:
        """Submit the pay form (no redirect followed)."""
        return self.session.post(
            f"{self.shop}/orders/{public_id}/pay/",
            data={"transaction_token_id": token, "csrfmiddlewaretoken": self.csrf()},
            allow_redirects=False,
            timeout=timeout,
        )
