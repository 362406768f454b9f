"""Rewrite the test modules' asserts once, in the pytest-xdist controller, before any worker.

pytest rewrites the asserts of every test module and conftest.py it imports, and caches
the result beside the module (``__pycache__/*-pytest-<version>.pyc``). CI runs each leg
from a fresh copy of tests/ with a cold cache, and its xdist workers all start at once:
each rewrote every module again, the biggest part of each worker's collection. Written
here first, the cache is warm for all of them.

It uses pytest's assertion-rewriting internals (pytest is pinned by constraints.txt);
where they are missing it does nothing, and tests/test_pyc_warmup.py fails on the pinned
version if they moved.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any


def warm(config: Any, root: Path) -> int | None:
    """Write the rewritten pyc of each test module under ``root`` (or under the paths the
    command line names, within it) that lacks a valid one; returns how many were written
    (None: this pytest offers no way to)."""
    if sys.dont_write_bytecode or config.getoption("assertmode") != "rewrite":
        return 0
    try:
        from _pytest.assertion import rewrite

        state = config.stash[rewrite.assertstate_key]
        tail, read, compile_, write = (
            rewrite.PYC_TAIL, rewrite._read_pyc, rewrite._rewrite_test, rewrite._write_pyc,
        )  # fmt: skip
    except (ImportError, AttributeError, KeyError):
        return None
    named = [Path(arg.split("::")[0]).resolve() for arg in config.args]
    tops = [p for p in named if p.is_relative_to(root) and p.exists()] or [root]
    sources = sorted({s for top in tops for s in ([top] if top.is_file() else top.rglob("*.py"))})
    written = 0
    for source in sources:
        if not (source.name.startswith("test_") or source.name == "conftest.py"):
            continue
        pyc = source.parent / "__pycache__" / (source.name[:-3] + tail)
        if read(source, pyc, state.trace) is not None:
            continue
        try:
            stat, code = compile_(source, config)
        except SyntaxError:
            continue  # pytest reports it where it collects the module
        pyc.parent.mkdir(exist_ok=True)
        written += bool(write(state, code, stat, pyc))
    return written
