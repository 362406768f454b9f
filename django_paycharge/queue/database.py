"""django-tasks-db, where the tasks table can be asked: is a task waiting, and is it that backend.

Several flows avoid a task per event there: they enqueue one only when none has
started yet (a task that has not started reads the tables after the caller's
commit), or schedule a deferred run only when none is due by then.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.db import router
from django.db.models import QuerySet

from .. import conf
from ..models.compiled import Compiled
from .framework import BackgroundTask, backend_alias, background_enabled, routed

# (task, backend alias, queue) -> the task routed there. Routing a task validates
# it anew each time, which the receiver (and the checkout) would pay on every call.
_routed_tasks: dict[tuple[int, str, str], BackgroundTask[..., Any]] = {}


def routed_task(task: BackgroundTask[..., Any]) -> BackgroundTask[..., Any]:
    """``task`` routed to the configured backend and queue, made once per pair."""
    key = (id(task), backend_alias(), str(conf.get_setting("TASK_QUEUE")))
    if key not in _routed_tasks:
        _routed_tasks[key] = routed(task)
    return _routed_tasks[key]


def database_backend(task: BackgroundTask[..., Any]) -> bool:
    """Whether ``task`` (routed) goes to django-tasks-db."""
    try:
        from django_tasks_db.backend import DatabaseBackend
    except ImportError:
        return False
    return isinstance(task.get_backend(), DatabaseBackend)


def on_database(task: BackgroundTask[..., Any]) -> bool:
    """Whether work goes to the task backend, and that backend is django-tasks-db."""
    return background_enabled() and database_backend(routed_task(task))


def _queued(task_path: str, backend: str) -> QuerySet[Any]:
    """The tasks of ``task_path`` on ``backend`` queued and not started."""
    from django_tasks_db.models import DBTaskResult

    ready = DBTaskResult._meta.get_field("status").get_default()  # a queued task's status
    return DBTaskResult.objects.filter(status=ready, task_path=task_path, backend_name=backend)


def _waiting(task_path: str, backend: str) -> QuerySet[Any, Any]:
    """One of :func:`_queued`, if any."""
    return _queued(task_path, backend).values_list("pk")[:1]


#: Compiled once a connection: the webhook receiver asks often, and building the query
#: through the ORM cost it more than the query itself (docs/benchmarks.md, "receipt cost").
_WAITING = Compiled(_waiting)


def task_waiting(task: Any, due: datetime | None = None) -> bool:
    """Whether ``task`` is queued in django-tasks-db and not started (due by ``due``, if given).

    Through django-tasks-db's model: its queryset's ``ready()`` also asks that the
    task be due now, and a deferred sweep is waiting long before that.
    """
    from django_tasks_db.models import DBTaskResult

    alias = router.db_for_write(DBTaskResult)
    if due is not None:
        queued = _queued(task.module_path, task.backend).using(alias)
        return queued.filter(run_after__lte=due).exists()
    return bool(_WAITING.rows(alias, task.module_path, task.backend))


def ensure_run_after(task: BackgroundTask[[], Any], expiry: datetime) -> None:
    """Make sure ``task`` runs soon after ``expiry`` on django-tasks-db (one query when it
    is already due by then; a run due earlier schedules itself again)."""
    due = expiry + timedelta(seconds=1)
    routed_to = routed(task)
    if not task_waiting(routed_to, due=due):
        routed_to.using(run_after=due).enqueue()
