"""The xdist controller's warm-up of the rewritten-assert cache (tests/pyc_warmup.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from _pytest.assertion import rewrite

from tests import pyc_warmup


def test_the_warm_up_writes_the_pyc_pytest_reads_with_its_asserts_rewritten(
    pytestconfig: pytest.Config, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    (tmp_path / "test_sample.py").write_text("def test_one():\n    assert 1 + 1 == 3\n")
    (tmp_path / "helper.py").write_text("X = 1\n")  # not a test module: left to Python
    assert pyc_warmup.warm(pytestconfig, tmp_path) == 1
    pyc = tmp_path / "__pycache__" / ("test_sample" + rewrite.PYC_TAIL)
    code = rewrite._read_pyc(tmp_path / "test_sample.py", pyc)
    assert code is not None  # the file pytest itself would read, valid for the source
    namespace: dict[str, object] = {}
    exec(code, namespace)
    with pytest.raises(AssertionError, match=r"assert \(1 \+ 1\) == 3"):
        namespace["test_one"]()  # type: ignore[operator]
    assert sorted(p.name for p in (tmp_path / "__pycache__").iterdir()) == [pyc.name]
    assert pyc_warmup.warm(pytestconfig, tmp_path) == 0  # warm already


def test_nothing_is_written_where_python_writes_no_bytecode(
    pytestconfig: pytest.Config, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    (tmp_path / "test_sample.py").write_text("def test_one():\n    assert True\n")
    assert pyc_warmup.warm(pytestconfig, tmp_path) == 0
    assert not (tmp_path / "__pycache__").exists()
