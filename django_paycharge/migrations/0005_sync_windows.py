# A sync run reads creation-time windows side by side, each with its own place.
# A run interrupted before the upgrade (one cursor on its checkpoint) becomes one
# open-ended window from the same place, so it resumes where it stopped.

from typing import Any

import django.db.models.deletion
from django.db import migrations, models


def cursor_to_window(apps: Any, schema_editor: Any) -> None:
    Checkpoint = apps.get_model("django_paycharge", "SyncCheckpoint")
    Window = apps.get_model("django_paycharge", "SyncWindow")
    alias = schema_editor.connection.alias
    running = Checkpoint.objects.using(alias).filter(run_started_at__isnull=False)
    for checkpoint in running.filter(resource="charges"):
        Window.objects.using(alias).create(
            checkpoint=checkpoint, start=checkpoint.run_from, cursor=checkpoint.run_cursor
        )


def window_to_cursor(apps: Any, schema_editor: Any) -> None:
    # One cursor can only hold a run of one window; any other run starts again.
    Checkpoint = apps.get_model("django_paycharge", "SyncCheckpoint")
    alias = schema_editor.connection.alias
    for checkpoint in Checkpoint.objects.using(alias).filter(run_started_at__isnull=False):
        windows = list(checkpoint.windows.filter(done=False))
        if len(windows) == 1 and windows[0].end is None:
            checkpoint.run_from, checkpoint.run_cursor = windows[0].start, windows[0].cursor
        else:
            checkpoint.run_started_at = None
        checkpoint.save(update_fields=["run_from", "run_cursor", "run_started_at"])


class Migration(migrations.Migration):
    dependencies = [
        ("django_paycharge", "0004_delivery_leases"),
    ]

    operations = [
        migrations.AddField(
            model_name="synccheckpoint",
            name="run_holder",
            field=models.CharField(blank=True, max_length=200, verbose_name="run by"),
        ),
        migrations.CreateModel(
            name="SyncWindow",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("start", models.DateTimeField(blank=True, null=True, verbose_name="from")),
                ("end", models.DateTimeField(blank=True, null=True, verbose_name="until")),
                ("cursor", models.CharField(blank=True, max_length=64, verbose_name="cursor")),
                ("position", models.DateTimeField(blank=True, null=True, verbose_name="position")),
                ("pages", models.PositiveIntegerField(default=0, verbose_name="pages")),
                ("rows", models.PositiveIntegerField(default=0, verbose_name="rows")),
                ("done", models.BooleanField(default=False, verbose_name="done")),
                ("updated_at", models.DateTimeField(auto_now=True, verbose_name="updated at")),
                (
                    "checkpoint",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="windows",
                        to="django_paycharge.synccheckpoint",
                        verbose_name="sync",
                    ),
                ),
            ],
            options={
                "verbose_name": "sync window",
                "verbose_name_plural": "sync windows",
                "ordering": ["pk"],
            },
        ),
        migrations.RunPython(cursor_to_window, window_to_cursor),
        migrations.RemoveField(
            model_name="synccheckpoint",
            name="run_cursor",
        ),
    ]
