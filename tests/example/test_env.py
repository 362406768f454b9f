"""The example shop's settings helpers: DATABASE_URL and friends, parsed without dependencies."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from types import ModuleType

import pytest

# nox runs the suite from a copy of tests/ and says where the repository is.
_REPO = Path(os.environ.get("PAYCHARGE_REPO") or Path(__file__).resolve().parents[2])
_PATH = _REPO / "example_project" / "example_project" / "env.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("example_shop_env", _PATH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


env = _load()


def test_postgres_url_becomes_a_django_database() -> None:
    parsed = env.parse_database_url("postgres://shop:p%40ss%2Fword@db.internal:6432/shop_prod")
    assert parsed["ENGINE"] == "django.db.backends.postgresql"
    assert (parsed["NAME"], parsed["USER"], parsed["PASSWORD"]) == (
        "shop_prod",
        "shop",
        "p@ss/word",
    )
    assert (parsed["HOST"], parsed["PORT"]) == ("db.internal", "6432")
    assert parsed["OPTIONS"] == {}


def test_postgres_query_parameters_become_options() -> None:
    parsed = env.parse_database_url("postgresql://u@localhost/db?sslmode=require")
    assert parsed["OPTIONS"] == {"sslmode": "require"}
    assert (parsed["PASSWORD"], parsed["PORT"]) == ("", "")


@pytest.mark.parametrize(
    ("url", "name"),
    [
        ("sqlite:////var/lib/shop/db.sqlite3", "/var/lib/shop/db.sqlite3"),
        ("sqlite:///db.sqlite3", "db.sqlite3"),
    ],
)
def test_sqlite_urls(url: str, name: str) -> None:
    assert env.parse_database_url(url) == {"ENGINE": "django.db.backends.sqlite3", "NAME": name}


@pytest.mark.parametrize(
    "url", ["mysql://u:p@h/db", "postgres://u:p@h:5432/", "sqlite://", "nonsense"]
)
def test_unusable_urls_are_refused_with_a_reason(url: str) -> None:
    with pytest.raises(ValueError, match="DATABASE_URL"):
        env.parse_database_url(url)


def test_booleans(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHOP_X", "Yes")
    assert env.env_bool("SHOP_X") is True
    monkeypatch.setenv("SHOP_X", "off")
    assert env.env_bool("SHOP_X", True) is False
    monkeypatch.delenv("SHOP_X")
    assert env.env_bool("SHOP_X", True) is True
    monkeypatch.setenv("SHOP_X", "maybe")
    with pytest.raises(ValueError, match="SHOP_X"):
        env.env_bool("SHOP_X")


def test_lists(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHOP_HOSTS", " a.example, ,b.example ")
    assert env.env_list("SHOP_HOSTS") == ["a.example", "b.example"]
    assert env.env_list("SHOP_UNSET_LIST", ["x"]) == ["x"]
