"""MkDocs hook: the changelog page shows the repository's CHANGELOG.md."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

CHANGELOG = Path(__file__).resolve().parent.parent / "CHANGELOG.md"
# CHANGELOG.md links pages as the repository sees them ("docs/x.md"); on the changelog
# page, which lives in docs/, the same page is "x.md".
_REPO_DOCS_LINK = re.compile(r"\]\(docs/")


def on_page_markdown(markdown: str, page: Any, **kwargs: Any) -> str:
    if page.file.src_uri == "changelog.md":
        return _REPO_DOCS_LINK.sub("](", CHANGELOG.read_text(encoding="utf-8"))
    return markdown
