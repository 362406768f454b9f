"""docs/deployment.md's queue sections, run as written on top of the README's quick start.

The quick start's project is built as tests/docs does it (its blocks applied in
order, the fake gateway running), then one engine's section of the deployment
page: its settings pasted, its shell lines run, its worker commands started (the
tests' own Redis server stands for the page's 6379). ``runserver`` starts last.
A convenience-store payment is then completed at the gateway, announced by
webhook, and processed on the worker, where the quick start's signal receiver
hears it. With Celery, beat sends the periodic sweep, which takes a delivery
whose task was lost. Run on Django 5.2 and 6.1 (django-tasks-celery needs 6).
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from tests.docs.project import REPO, Project
from tests.docs.snippets import Snippet, snippets
from tests.docs.test_quick_start import checkout, widget_token
from tests.waiting import wait_until

from .backends import FRAMEWORK, selected

pytestmark = pytest.mark.slow
#: What the quick start's receiver logs (its order number is the session's own).
PAID = re.compile(r"Order A-\w+: payment successful")

SECTIONS = {"db": "### django-tasks-db", "rq": "### RQ", "celery": "### Celery"}
DJANGO_6 = FRAMEWORK == "django.tasks"


def deployment_blocks(kind: str) -> list[Snippet]:
    """The page's blocks for ``kind``: those common to every backend, then its section's,
    each only on the Django version it names."""
    text = (REPO / "docs" / "deployment.md").read_text(encoding="utf-8")
    lines = text.splitlines()
    start = lines.index("## Background work and queues") + 1
    first_section = next(n for n in range(start, len(lines)) if lines[n].startswith("### "))
    section = lines.index(SECTIONS[kind]) + 1
    end = next(
        (n for n in range(section, len(lines)) if lines[n].startswith(("### ", "## "))),
        len(lines),
    )
    wanted = [(start, first_section), (section, end)]
    found = []
    for snippet in snippets(REPO / "docs" / "deployment.md", REPO):
        if snippet.action == "not" or not any(a <= snippet.line <= b for a, b in wanted):
            continue
        head = snippet.body.splitlines()[0]
        if ("on Django 5.2 only" in head and DJANGO_6) or (
            "on Django 6 only" in head and not DJANGO_6
        ):
            continue
        found.append(snippet)
    return found


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Project]:
    made = Project.create(tmp_path / "mysite")
    yield made
    made.stop()


def query(project: Project, code: str) -> object:
    return project.query("import json; " + code)


def until(project: Project, code: str, expected: object, what: str) -> None:
    """Until ``code`` prints ``expected`` (tests/waiting.py's guard; the failure shows the
    last answer and each process's log)."""
    got: list[object] = [None]

    def printed() -> bool:
        got[0] = query(project, code)
        return got[0] == expected

    wait_until(printed, what, every=1, diagnose=lambda: f"last answer {got[0]!r}\n{logs(project)}")


def logs(project: Project) -> str:
    return "\n".join(f"== {name}\n{p.text()[-3000:]}" for name, p in project.running.items())


@pytest.mark.parametrize("kind", selected())
def test_a_queue_section_of_the_deployment_page_runs_as_written(kind, project, request):
    if kind != "db":
        redis = request.getfixturevalue("redis_server")
        project.ports["redis"] = redis.port
        subprocess.run(["redis-cli", "-p", str(redis.port), "flushall"], capture_output=True)
    readme = [s for s in snippets(REPO / "README.md", REPO) if s.action != "not"]
    runserver = next(s for s in readme if s.action == "background" and s.target == "shop")
    for snippet in readme[: readme.index(runserver)]:
        project.apply(snippet)
    blocks = deployment_blocks(kind)
    workers = {s.target for s in blocks if s.action == "worker"}
    assert workers == {"db": {"db_worker"}, "rq": {"rqworker"}, "celery": {"celery", "beat"}}[kind]
    for snippet in blocks:
        project.apply(snippet)
    check = project.run("python manage.py check --fail-level WARNING")
    assert "no issues" in check, check
    project.apply(runserver)

    store = checkout(project, widget_token(project, "konbini", {
        "customer_name": "TARO YAMADA", "convenience_store": "lawson"}))  # fmt: skip
    # The README sends an awaiting konbini charge to the app's payment page (what to do).
    assert "/payments/pay/" in store.url and "LAWSON" in store.text, store.text[:2000]
    charge_id = query(
        project,
        "from django_paycharge.models import Charge; "
        "print(json.dumps(str(Charge.objects.latest('id').gateway_id)))",
    )
    completed = requests.post(
        f"{project.url('gateway')}/_fake/charges/{charge_id}/complete", timeout=10
    )
    assert completed.ok, completed.text
    until(
        project,
        "from django_paycharge.models import Charge, WebhookDelivery; "
        f"c = Charge.objects.get(gateway_id='{charge_id}'); print(json.dumps([c.status, "
        "sorted(set(WebhookDelivery.objects.filter(charge=c).values_list('status', flat=True)))]))",
        ["successful", ["processed"]],
        "the webhook processed on the worker",
    )
    worker = project.running["celery" if kind == "celery" else next(iter(workers))]
    wait_until(
        lambda: PAID.search(worker.text()),
        "the receiver to say the order was paid",
        every=0.5,
        diagnose=lambda: logs(project),
    )
    assert not PAID.search(project.running["shop"].text())
    heard = query(
        project,
        "from django_paycharge.models import Announcement; "
        "print(json.dumps(list(Announcement.objects.values_list('signal', 'status'))))",
    )
    assert isinstance(heard, list) and ["charge_status_changed", "heard"] in heard

    if kind == "celery":  # beat's sweep sends on a delivery whose task was lost
        lost = query(
            project,
            "from datetime import timedelta; from django.utils import timezone; "
            "from django_paycharge.models import WebhookDelivery; "
            "d = WebhookDelivery.objects.create(dedupe_key='id:lost', delivery_id='lost', "
            "event='token_created', body='{}', headers={}, account='default', "
            "received_at=timezone.now() - timedelta(hours=1)); print(d.pk)",
        )
        until(
            project,
            "from django_paycharge.models import WebhookDelivery; "
            f"print(json.dumps(WebhookDelivery.objects.get(pk={lost}).status))",
            "ignored",
            "beat's sweep to send on the lost delivery",
        )
