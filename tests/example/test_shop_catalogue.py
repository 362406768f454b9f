"""The example shop speaks Japanese too: its catalogue is complete, current and compiled.

A Japanese browser must not get the shop's texts in English around the app's
Japanese ones (the browser tests check the pages themselves).
"""

from __future__ import annotations

import gettext
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

from django.core.management import call_command

from ..test_i18n import live_entries, parse_po
from .demo_process import REPO

SHOP = REPO / "example_project" / "shop"
PO = SHOP / "locale" / "ja" / "LC_MESSAGES" / "django.po"
PLACEHOLDER = re.compile(r"%\(\w+\)[sd]")


def test_every_shop_string_is_translated_with_its_placeholders():
    header = next(e for e in parse_po(PO) if e.msgid == "")
    assert "fuzzy" not in header.flags and "Language: ja" in header.msgstrs[0]
    live = live_entries(PO)
    assert len(live) > 80
    assert [e.msgid for e in live.values() if not all(s.strip() for s in e.msgstrs)] == []
    assert [e.msgid for e in live.values() if "fuzzy" in e.flags] == []
    broken = [
        e.msgid
        for e in live.values()
        for s in e.msgstrs
        if sorted(PLACEHOLDER.findall(e.msgid)) != sorted(PLACEHOLDER.findall(s))
    ]
    assert broken == []


def test_makemessages_finds_nothing_the_shop_catalogue_lacks(tmp_path: Path, monkeypatch: Any):
    copy = tmp_path / "shop"
    shutil.copytree(SHOP, copy, ignore=shutil.ignore_patterns("__pycache__", "*.mo"))
    monkeypatch.chdir(copy)
    call_command("makemessages", locale=["ja"], verbosity=0)
    fresh = live_entries(copy / "locale" / "ja" / "LC_MESSAGES" / "django.po")
    committed = live_entries(PO)
    assert sorted(k[1] for k in fresh if k not in committed) == [], "run makemessages -l ja"
    assert sorted(k[1] for k in committed if k not in fresh) == [], "run makemessages -l ja"


def test_the_shop_mo_is_compiled_from_its_po(tmp_path: Path):
    compiled = tmp_path / "django.mo"
    subprocess.run(["msgfmt", "--check-format", "-o", str(compiled), str(PO)], check=True)
    with compiled.open("rb") as fresh, PO.with_suffix(".mo").open("rb") as committed:
        assert (
            gettext.GNUTranslations(fresh)._catalog  # type: ignore[attr-defined]
            == gettext.GNUTranslations(committed)._catalog  # type: ignore[attr-defined]
        ), "compile it: msgfmt -o django.mo django.po"
