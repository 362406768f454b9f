from __future__ import annotations

from django.urls import URLPattern, URLResolver

app_name = "paycharge-api"

urlpatterns: list[URLPattern | URLResolver] = []
