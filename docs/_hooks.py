"""MkDocs hook: the changelog page shows the repository's CHANGELOG.md."""

from __future__ import annotations

from pathlib import Path
from typing import Any

CHANGELOG = Path(__file__).resolve().parent.parent / "CHANGELOG.md"


def on_page_markdown(markdown: str, page: Any, **kwargs: Any) -> str:
    if page.file.src_uri == "changelog.md":
        # Its links are the repository's (docs/x.md); on the site the page is beside x.md.
        return CHANGELOG.read_text(encoding="utf-8").replace("](docs/", "](")
    return markdown
