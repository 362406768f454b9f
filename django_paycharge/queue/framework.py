"""Django's Tasks framework, whichever is installed, and our tasks bound to the configured backend.

``django.tasks`` on Django 6, the ``django-tasks`` backport on 5.2, or none (our
tasks can then only be called). Each flow makes its own tasks with
:func:`background_task`, in its own module, and sends them itself; a task is
known to queues by its public path, ``django_paycharge.tasks.<name>``
(:data:`PUBLIC_MODULE` re-exports every one).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from importlib import import_module
from importlib.util import find_spec
from typing import Any, ParamSpec, Protocol, TypeVar

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.utils.translation import gettext

from .. import conf
from ..exceptions import ConfigurationError

P = ParamSpec("P")

T = TypeVar("T", covariant=True)

#: The values ``PAYCHARGE["TASKS"]`` accepts.
MODES = ("auto", "inline", "background")

# Backends that do not run work in the background: the immediate one (runs it
# inline anyway) and the dummy one (never runs it at all).
_NOT_BACKGROUND = ("ImmediateBackend", "DummyBackend")


class BackgroundTask(Protocol[P, T]):
    """What this module's tasks offer (a ``Task`` of whichever tasks framework is installed)."""

    def call(self, *args: P.args, **kwargs: P.kwargs) -> T: ...

    def enqueue(self, *args: P.args, **kwargs: P.kwargs) -> Any: ...

    def using(self, **options: Any) -> BackgroundTask[P, T]: ...

    def get_backend(self) -> Any: ...


class _InlineOnly:
    """Stands in for a task when no tasks framework is installed: it can only be called."""

    def __init__(self, func: Callable[..., Any]) -> None:
        self.func = func

    def call(self, *args: Any, **kwargs: Any) -> Any:
        return self.func(*args, **kwargs)

    def _unavailable(self, *args: Any, **kwargs: Any) -> Any:
        raise ConfigurationError(
            gettext("No tasks framework is installed: install django-tasks on Django 5.2.")
        )

    enqueue = using = get_backend = _unavailable


# Cached: installed modules do not change while the process runs, and the webhook
# receiver asks on every delivery (docs/benchmarks.md, "receipt cost").
@functools.cache
def tasks_framework() -> Any | None:
    """``django.tasks`` on Django 6, the ``django_tasks`` backport on 5.2, or None."""
    for module in ("django.tasks", "django_tasks"):
        if find_spec(module):
            return import_module(module)
    return None


class _Unbound(_InlineOnly):
    """Stands in for a task that no configured backend and queue accepts (the checks say why)."""

    def _unavailable(self, *args: Any, **kwargs: Any) -> Any:
        raise ConfigurationError(
            gettext(
                "Our tasks cannot be bound to PAYCHARGE['TASK_BACKEND'] / ['TASK_QUEUE']: "
                "run manage.py check (django_paycharge.E022)."
            )
        )

    enqueue = using = get_backend = _unavailable


#: The module every task is found in by workers, queued rows and Celery messages: its
#: public path (``django_paycharge/tasks.py`` re-exports each task under its name).
PUBLIC_MODULE = "django_paycharge.tasks"


def background_task(func: Callable[P, T]) -> BackgroundTask[P, T]:
    """Make ``func`` a task, known to queues as ``django_paycharge.tasks.<its name>``.

    The flow that defines the task sends it (:func:`routed`); a worker finds it
    again by that public path, whichever module defines it, so moving a task
    never changes what queued rows name. Every send binds the task to the
    backend and queue configured then. Making it validates it against a
    backend: it is made on the configured one, never on Django's ``default``
    alias and queue, which a shop's ``TASKS`` may not have (that crashed every
    ``manage.py`` command).
    """
    func.__module__ = PUBLIC_MODULE
    return _make(func)


def _make(func: Callable[P, T]) -> BackgroundTask[P, T]:
    framework = tasks_framework()
    if framework is None:
        return _InlineOnly(func)
    # A backend alias that does not exist (ImproperlyConfigured), a queue it does not
    # have (the framework's TaskException): the next candidate; the checks name it.
    refused = (
        ImproperlyConfigured,
        import_module(f"{framework.__name__}.exceptions").TaskException,
    )
    for alias, queue in _bindings():
        try:
            made: BackgroundTask[P, T] = framework.task(backend=alias, queue_name=queue)(func)
        except refused:
            continue
        return made
    return _Unbound(func)


def _bindings() -> list[tuple[str, str]]:
    """Backends and queues to make a task on: the configured ones first, then each backend's."""
    try:
        found = [(str(conf.get_setting("TASK_BACKEND")), str(conf.get_setting("TASK_QUEUE")))]
    except ConfigurationError:  # a malformed PAYCHARGE: the checks report it
        found = []
    tasks = getattr(settings, "TASKS", None) or {}
    for alias, entry in tasks.items() if isinstance(tasks, dict) else ():
        queues = entry.get("QUEUES") if isinstance(entry, dict) else None
        found.append((alias, str(queues[0]) if queues else "default"))
    return found


def backend_alias() -> str:
    """The alias of Django's ``TASKS`` our work goes to (``PAYCHARGE["TASK_BACKEND"]``)."""
    return str(conf.get_setting("TASK_BACKEND"))


def routed(task: BackgroundTask[P, T]) -> BackgroundTask[P, T]:
    """``task`` bound to the configured backend and queue (read now, not at import)."""
    return task.using(backend=backend_alias(), queue_name=str(conf.get_setting("TASK_QUEUE")))


def configured_backend_path() -> str:
    """The dotted path of the configured backend's class, or "" when ``TASKS`` has no such alias."""
    tasks = getattr(settings, "TASKS", None) or {}
    entry = tasks.get(backend_alias(), {}) if isinstance(tasks, dict) else {}
    return str(entry.get("BACKEND", "")) if isinstance(entry, dict) else ""


def background_enabled() -> bool:
    """Whether work goes to the task backend (see ``PAYCHARGE["TASKS"]``).

    ``"auto"`` uses it only when the configured alias names a backend that
    really runs work elsewhere: Django 6 always has a default (immediate)
    backend, and a dummy backend would never process a delivery.
    """
    mode = conf.get_setting("TASKS")
    if mode == "inline":
        return False
    backend = configured_backend_path()
    available = tasks_framework() is not None and bool(backend)
    if mode == "background":
        if not available:
            raise ConfigurationError(
                gettext(
                    "PAYCHARGE['TASKS'] is 'background' but no task backend is configured: set "
                    "TASKS (and install django-tasks on Django 5.2)."
                )
            )
        return True
    return available and not backend.endswith(_NOT_BACKGROUND)
