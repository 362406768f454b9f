"""The documentation stays true to the code: every setting and every public object documented."""

from __future__ import annotations

import importlib
import inspect
import os
from pathlib import Path

import pytest

from django_paycharge import conf

REPO = Path(os.environ.get("PAYCHARGE_REPO", Path(__file__).resolve().parent.parent))
PUBLIC_MODULES = [
    "django_paycharge.access",
    "django_paycharge.charge_errors",
    "django_paycharge.client",
    "django_paycharge.client.backoff",
    "django_paycharge.client.observe",
    "django_paycharge.client.options",
    "django_paycharge.client.params",
    "django_paycharge.client.vocabulary",
    "django_paycharge.conf",
    "django_paycharge.debug",
    "django_paycharge.exceptions",
    "django_paycharge.money",
    "django_paycharge.observe.logs",
    "django_paycharge.periodic",
    "django_paycharge.services",
    "django_paycharge.tasks",
    "django_paycharge.templatetags.paycharge",
    "django_paycharge.testing",
    "django_paycharge.views.metrics",
]


def test_every_setting_is_in_the_settings_reference():
    text = (REPO / "docs" / "settings.md").read_text(encoding="utf-8")
    missing = [key for key in conf.DEFAULTS if f"`{key}`" not in text]
    assert missing == []


@pytest.mark.parametrize("module_name", PUBLIC_MODULES)
def test_public_functions_and_classes_have_docstrings(module_name):
    module = importlib.import_module(module_name)
    names = getattr(module, "__all__", None) or [n for n in vars(module) if not n.startswith("_")]
    undocumented = []
    for name in names:
        obj = getattr(module, name)
        if not (inspect.isfunction(obj) or inspect.isclass(obj)):
            continue
        if getattr(obj, "__module__", "").startswith("django_paycharge") and not obj.__doc__:
            undocumented.append(f"{obj.__module__}.{name}")
    assert undocumented == []


@pytest.mark.parametrize("module_name", [*PUBLIC_MODULES, "django_paycharge.celery"])
def test_every_public_module_is_in_the_generated_api_reference(module_name):
    # docs/reference/*.md hold mkdocstrings' "::: module" directives (built by mkdocs --strict).
    directives = "".join(
        page.read_text(encoding="utf-8") for page in (REPO / "docs" / "reference").glob("*.md")
    )
    assert f"::: {module_name}\n" in directives


def test_the_package_reports_the_version_of_its_metadata():
    from importlib.metadata import version

    import django_paycharge

    assert django_paycharge.__version__ == version("django-paycharge")
    assert f"## {django_paycharge.__version__}" in (REPO / "CHANGELOG.md").read_text()


def test_the_readme_works_on_the_package_index():
    """README.md is the package's long description: on the index, a relative link or image
    points nowhere. Every one is absolute, to a file this repository has."""
    import re

    text = (REPO / "README.md").read_text(encoding="utf-8")
    blob = "https://github.com/django-paycharge/django-paycharge/blob/main/"
    raw = "https://raw.githubusercontent.com/django-paycharge/django-paycharge/main/"
    links = re.findall(r"(!?)\[[^\]]*\]\(([^)\s]+)\)", text)
    assert len(links) > 20
    relative = [target for _bang, target in links if not re.match(r"https?://|#", target)]
    assert relative == []
    for bang, target in links:
        prefix = raw if bang else blob
        if target.startswith(prefix):
            path = target.removeprefix(prefix).split("#", 1)[0]
            assert (REPO / path).is_file(), target
    images = [target for bang, target in links if bang]
    assert images and all(target.startswith(raw) for target in images)


def test_the_built_site_ships_no_python_bytecode():
    """mkdocs imports docs/_hooks.py, so Python writes docs/__pycache__/: none of it ships."""
    from mkdocs.config import load_config
    from mkdocs.structure.files import File, set_exclusions

    config = load_config(str(REPO / "mkdocs.yml"))
    names = ["_hooks.py", "__pycache__/_hooks.cpython-311.pyc", "reference/__pycache__/x.pyc"]
    files = [File(name, config["docs_dir"], config["site_dir"], True) for name in names]
    files.append(File("index.md", config["docs_dir"], config["site_dir"], True))
    set_exclusions(files, config)
    assert [f.src_uri for f in files if f.inclusion.is_included()] == ["index.md"]
