"""The built documentation site, with the docs gate's tool (mkdocs, in the dev group)."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(os.environ.get("PAYCHARGE_REPO") or Path(__file__).resolve().parents[2])


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
