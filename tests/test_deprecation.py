"""Public names removed since 0.1.0 still import, warn, and name what replaces them."""

from __future__ import annotations

import importlib
import importlib.util

import pytest

from django_paycharge import deprecation
from django_paycharge.client import vocabulary
from django_paycharge.models import Charge

MOVED = [
    (module, name, target)
    for module, names in deprecation.MOVED.items()
    for name, target in names.items()
]


@pytest.mark.parametrize(("module", "name", "target"), MOVED)
def test_a_moved_name_is_the_replacement_with_a_warning(module, name, target):
    where, _, attribute = target.rpartition(".")
    replacement = getattr(importlib.import_module(where), attribute)
    with pytest.warns(DeprecationWarning, match=rf"{module}\.{name} .* use {target} instead"):
        value = getattr(importlib.import_module(module), name)
    assert value is replacement


def test_from_import_of_a_moved_name_warns_at_the_importer():
    with pytest.warns(DeprecationWarning) as caught:
        from django_paycharge.models import FINAL_STATUSES  # type: ignore[attr-defined]  # moved: __getattr__
    assert FINAL_STATUSES is vocabulary.FINAL_STATUSES
    assert caught[0].filename == __file__  # the warning points at the import, not at us


def test_other_missing_names_are_still_attribute_errors():
    from django_paycharge.services import actions  # type: ignore[attr-defined]  # no file: deprecation.OldPaths serves it

    with pytest.raises(AttributeError, match="open_request"):
        actions.open_request  # noqa: B018  (no replacement: gone, see the CHANGELOG)
    with pytest.raises(ImportError):
        from django_paycharge.models import NoSuchModel  # type: ignore[attr-defined]  # noqa: F401  (the point: it is missing)


@pytest.mark.parametrize(("status", "final"), [("successful", True), ("pending", False)])
def test_charge_is_final_warns_and_still_answers(status, final):
    charge = Charge(gateway_id="00000000-0000-4000-8000-000000000001", status=status)
    with pytest.warns(DeprecationWarning, match="FINAL_STATUSES"):
        assert charge.is_final is final


@pytest.mark.parametrize(("old", "new"), sorted(deprecation.MOVED_MODULES.items()))
def test_a_moved_module_still_imports_and_its_names_warn(old, new):
    module = importlib.import_module(old)
    replacement = importlib.import_module(new)
    public = [name for name in vars(replacement) if not name.startswith("_")]
    assert public, f"{new} has no public name to reach through {old}"
    for name in public:
        with pytest.warns(DeprecationWarning, match=rf"{old}\.{name} .* use {new}\.{name} instead"):
            assert getattr(module, name) is getattr(replacement, name)
    with pytest.raises(AttributeError):
        module.no_such_name  # noqa: B018


def test_a_moved_module_has_no_file_left_at_its_old_path():
    for old in deprecation.MOVED_MODULES:
        spec = importlib.util.find_spec(old)
        assert spec is not None, old
        assert isinstance(spec.loader, deprecation.OldPaths), old
