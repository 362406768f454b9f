"""Fixtures shared by the whole suite: a real headless Chromium for customer-facing pages.

Also which tests are ``slow`` (see CONTRIBUTING.md): every test of the folders below,
which start processes (shops, workers, servers, pytest itself) or run whole stories,
every test that drives Chromium (also ``db_independent``: the PostgreSQL leg leaves them
to the SQLite leg), and the tests marked ``@pytest.mark.slow`` one by one.
The quick run and the newer-Django legs leave them out; the oldest Django leg and the
PostgreSQL leg run them all. Under pytest-xdist (``--dist loadgroup``) each module of
those folders runs on one worker, so its module fixtures start once.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import hypothesis_profiles, pyc_warmup
from tests.waiting import browser_context

hypothesis_profiles.load()
SLOW_FOLDERS = frozenset({"reliability", "example", "docs", "queues", "bench", "gates"})
_TESTS = Path(__file__).resolve().parent


def pytest_configure(config: pytest.Config) -> None:
    # The pytest-xdist controller (it never collects) warms the rewritten-assert cache
    # for the workers it is about to start (tests/pyc_warmup.py).
    if config.getoption("numprocesses", None) and not hasattr(config, "workerinput"):
        pyc_warmup.warm(config, _TESTS)


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups (it adds them to node ids)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        path = Path(str(item.path)).resolve().relative_to(_TESTS)
        if path.parts[0] in SLOW_FOLDERS:
            item.add_marker(pytest.mark.slow)
            # One xdist worker runs the module (``--dist loadgroup``): its shop, demo or
            # stack (module fixtures) starts once, not once on each worker.
            item.add_marker(pytest.mark.xdist_group(str(path)))
        elif "chromium" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)
            # What Chromium shows does not depend on the database: one leg renders it.
            item.add_marker(pytest.mark.db_independent)


@pytest.hookimpl(trylast=True, specname="pytest_collection_modifyitems")
def pytest_collection_modifyitems_slow_first(items: list[pytest.Item]) -> None:
    """The slow tests first, the biggest modules of them foremost; the rest in their order.

    pytest-xdist hands the tests out in this order (noxfile.py turns off its own ordering,
    by group size alone, which put a one-test module of two minutes among the thousand
    one-test scopes of the fast tests, at random, often last: one worker busy, the others
    done). Started first, the long ones end while the short ones fill the other workers.
    """
    size: dict[str, int] = {}
    for item in items:
        group = _group(item)
        size[group] = size.get(group, 0) + 1
    items.sort(key=lambda item: (item.get_closest_marker("slow") is None, -size[_group(item)]))


@pytest.hookimpl(trylast=True, specname="pytest_collection_modifyitems")
def pytest_collection_modifyitems_smoke(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``PAYCHARGE_SMOKE=1``: the first selected test of each module, the others deselected.

    The middle Django's leg (noxfile.py's ``sdist``) collects the whole suite, so every
    module imports and every fixture resolves there, and runs one test a module: each
    module's fixtures and the code it imports first run once on that Django. The oldest
    and the newest Django run every test."""
    if os.environ.get("PAYCHARGE_SMOKE") != "1":
        return
    kept: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    seen: set[str] = set()
    for item in items:
        module = str(item.path)
        (dropped if module in seen else kept).append(item)
        seen.add(module)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def _group(item: pytest.Item) -> str:
    marker = item.get_closest_marker("xdist_group")
    return str(marker.args[0]) if marker and marker.args else item.nodeid


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """An xdist worker under ``coverage run`` (the coverage leg, noxfile.py) saves what it
    measured before it tells the controller it is done.

    Otherwise it saves at exit, and the controller kills a worker that has not exited ten
    seconds after the run: on a busy host one worker's whole share of the measurements
    was lost that way (coverage 94 % read as 91 %)."""
    if not hasattr(session.config, "workerinput"):
        return
    try:
        import coverage
    except ImportError:
        return
    measuring = coverage.Coverage.current()
    if measuring is not None:
        measuring.save()


@pytest.fixture
def no_owner_problems(db: None) -> None:
    """No owner problem left by an earlier test on this worker (for tests that count them).

    The app records a problem that is the owner's (a wrong secret, an unreachable gateway)
    on the connection of the thread whose gateway call met it: a sync's page read ahead
    runs on a thread of its own, whose connection commits outside a test's transaction.
    Such a row outlives the test that caused it, and showed a later one (the order is
    random) a banner and an attention item it never caused. Deleted here inside the test's
    transaction, it is gone for this test."""
    from django_paycharge.models import OwnerProblem

    OwnerProblem.objects.all().delete()


@pytest.fixture(autouse=True)
def _default_language() -> Iterator[None]:
    """Each test starts in the default language: ``LocaleMiddleware`` activates a request's
    language in the thread and leaves it there, so a Japanese request made one test on the
    same xdist worker read every later message in Japanese."""
    yield
    from django.utils import translation

    translation.deactivate()


CHROMIUM = os.environ.get("PAYCHARGE_CHROMIUM", "/usr/bin/chromium")
# Without these, Chromium tries to reach Google's hosts at every start and this
# machine's closed network refuses it.
CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    # Each new context opens a browser window, and each window loads the address bar's
    # suggestion popups (chrome://omnibox-popup.top-chrome) in a renderer of their own:
    # they cost more CPU than the pages under test and keep spending it while a window
    # stays open. Headless tests never type into the address bar.
    "--disable-features=WebUIOmniboxPopup,WebUIOmniboxAimPopup",
]


@pytest.fixture(scope="session")
def chromium() -> Iterator[Any]:
    """Debian's Chromium driven by Playwright. Missing Chromium fails the test: no silent skip."""
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"Chromium not found at {CHROMIUM}: install Debian's chromium package.")
    # Playwright's sync API keeps an event loop on this thread; Django refuses
    # ORM calls from such a thread unless told the tests know what they do.
    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def browser_page(chromium: Any) -> Iterator[Any]:
    """A fresh page (own cookies); ``page.console_errors`` collects console errors."""
    context = browser_context(chromium, java_script_enabled=True)
    page = context.new_page()
    page.console_errors = []
    page.on(
        "console", lambda msg: page.console_errors.append(msg.text) if msg.type == "error" else None
    )
    yield page
    context.close()


@pytest.fixture
def browser_page_no_js(chromium: Any) -> Iterator[Any]:
    """A page with JavaScript disabled (for ``<noscript>`` fallbacks)."""
    context = browser_context(chromium, java_script_enabled=False)
    page = context.new_page()
    yield page
    context.close()
