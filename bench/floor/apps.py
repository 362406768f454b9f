from __future__ import annotations

from django.apps import AppConfig


class FloorConfig(AppConfig):
    name = "bench.floor"
    label = "bench_floor"
    default_auto_field = "django.db.models.BigAutoField"
