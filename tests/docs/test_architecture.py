"""docs/architecture.md's module map names every module of the package, and only those."""

from __future__ import annotations

import re

from .project import REPO

PACKAGE = REPO / "django_paycharge"
MAP_ROW = re.compile(r"^\| `(?P<module>[\w/]+\.py)` \|", re.M)


def test_the_module_map_lists_every_module():
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    mapped = set(MAP_ROW.findall(text))
    modules = {
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        # Migrations are not modules one changes; empty package markers say nothing.
        if "migrations" not in path.parts and path.read_text(encoding="utf-8").strip()
    }
    missing = sorted(modules - mapped)
    gone = sorted(mapped - modules)
    assert missing == [], f"add a row to docs/architecture.md's module map for: {missing}"
    assert gone == [], f"remove from docs/architecture.md's module map: {gone}"
