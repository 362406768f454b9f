"""The Japanese translation: complete, compiled, and what every page actually shows.

(a) The committed ``ja`` catalog holds every string ``makemessages`` finds, each
translated and none fuzzy, and the committed ``.mo`` is compiled from it.
(b) With ``LANGUAGE_CODE="ja"`` the admin, the customer pages and the system
checks show no English text of our catalog; the same detector run on English
pages does find it, so the check cannot pass vacuously.
"""

from __future__ import annotations

import ast
import gettext
import json
import os
import re
import shutil
import subprocess
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.test import override_settings
from django.urls import reverse
from django.utils import timezone, translation

import django_paycharge
from django_paycharge import services
from django_paycharge.checks import check_paycharge_settings
from django_paycharge.models import Charge, IssuerToken, WebhookConfiguration, WebhookDelivery
from django_paycharge.services.webhooks.deliveries import process_delivery
from django_paycharge.testing import CARD_DECLINED

PACKAGE = Path(django_paycharge.__file__).parent
PO = PACKAGE / "locale" / "ja" / "LC_MESSAGES" / "django.po"
MO = PO.with_suffix(".mo")
JAPANESE = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]")

# -- (a) the catalog ---------------------------------------------------------------------------


@dataclass
class Entry:
    msgid: str
    msgstrs: list[str] = field(default_factory=list)
    flags: set[str] = field(default_factory=set)
    context: str = ""
    obsolete: bool = False

    @property
    def key(self) -> tuple[str, str]:
        return (self.context, self.msgid)


def parse_po(path: Path) -> list[Entry]:
    """The entries of a .po file (header included as the entry whose msgid is "")."""
    entries = []
    for block in re.split(r"\n\s*\n", path.read_text(encoding="utf-8").strip()):
        fields: dict[str, str] = {}
        flags: set[str] = set()
        current = ""
        obsolete = False
        for line in block.splitlines():
            if line.startswith("#~"):
                obsolete, line = True, line[2:].strip()
            if line.startswith("#,"):
                flags.update(f.strip() for f in line[2:].split(","))
                continue
            if line.startswith("#") or not line.strip():
                continue
            match = re.match(r"(msgctxt|msgid_plural|msgid|msgstr(?:\[\d+\])?)\s+(\".*\")$", line)
            if match:
                current = match.group(1)
                fields[current] = ast.literal_eval(match.group(2))
            elif line.startswith('"') and current:
                fields[current] += ast.literal_eval(line)
        if "msgid" in fields:
            strs = [v for k, v in sorted(fields.items()) if k.startswith("msgstr")]
            entries.append(Entry(fields["msgid"], strs, flags, fields.get("msgctxt", ""), obsolete))
    return entries


def live_entries(path: Path) -> dict[tuple[str, str], Entry]:
    return {e.key: e for e in parse_po(path) if not e.obsolete and e.msgid}


def test_every_string_is_translated_and_none_is_fuzzy() -> None:
    entries = parse_po(PO)
    header = next(e for e in entries if e.msgid == "")
    assert "fuzzy" not in header.flags
    assert "Plural-Forms: nplurals=1; plural=0;" in header.msgstrs[0]
    assert "Language: ja" in header.msgstrs[0]
    live = live_entries(PO)
    assert len(live) > 200  # the whole app, not a stub
    untranslated = [e.msgid for e in live.values() if not all(s.strip() for s in e.msgstrs)]
    fuzzy = [e.msgid for e in live.values() if "fuzzy" in e.flags]
    assert not untranslated, f"empty msgstr: {untranslated}"
    assert not fuzzy, f"fuzzy: {fuzzy}"


def test_placeholders_are_kept() -> None:
    placeholder = re.compile(r"%\(\w+\)[sd]|\{\w*\}")
    broken = {
        e.msgid: s
        for e in live_entries(PO).values()
        for s in e.msgstrs
        if sorted(placeholder.findall(e.msgid)) != sorted(placeholder.findall(s))
    }
    assert not broken, f"placeholders differ: {broken}"


# The example shop is the checkout's (the matrix runs a copy of tests/ beside the wheel).
REPO = Path(os.environ.get("PAYCHARGE_REPO") or Path(__file__).parents[1])
SHOP_PO = REPO / "example_project/shop/locale/ja/LC_MESSAGES/django.po"


@pytest.mark.parametrize("po", [PO, SHOP_PO], ids=["app", "example-shop"])
def test_a_charge_is_called_one_thing(po: Path) -> None:
    """決済 everywhere, never 課金 (subscriptions are 定期課金, recurring payments 継続課金)."""
    mixed = {
        e.msgid: s
        for e in live_entries(po).values()
        for s in e.msgstrs
        if "課金" in s.replace("定期課金", "").replace("継続課金", "")
    }
    assert not mixed, f"課金 where the catalog says 決済: {mixed}"


def test_the_admins_results_read_as_japanese_sentences() -> None:
    with translation.override("ja"):
        status = translation.gettext("Successful")
        refund = translation.gettext("Charge %(id)s: refund of %(amount)s is %(status)s.")
        cancel = translation.gettext("Charge %(id)s: the cancel is %(status)s.")
    values = {"id": "5f0c2b9e", "amount": "￥200", "status": status}
    assert refund % values == "決済 5f0c2b9e: ￥200の返金は「成功」です。"
    assert cancel % values == "決済 5f0c2b9e: キャンセルは「成功」です。"


def test_makemessages_finds_nothing_the_catalog_lacks(tmp_path: Path, monkeypatch: Any) -> None:
    copy = tmp_path / "django_paycharge"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__", "*.mo"))
    monkeypatch.chdir(copy)
    call_command("makemessages", locale=["ja"], ignore_patterns=["testing/*"], verbosity=0)
    fresh = live_entries(copy / "locale" / "ja" / "LC_MESSAGES" / "django.po")
    committed = live_entries(PO)
    missing = sorted(key[1] for key in fresh if key not in committed)
    stale = sorted(key[1] for key in committed if key not in fresh)
    assert not missing, (
        f"strings not in the committed catalog (run makemessages -l ja and translate): {missing}"
    )
    assert not stale, f"strings the code no longer has (run makemessages -l ja): {stale}"


def test_the_committed_mo_is_compiled_from_the_po(tmp_path: Path) -> None:
    compiled = tmp_path / "django.mo"
    subprocess.run(["msgfmt", "--check-format", "-o", str(compiled), str(PO)], check=True)
    with compiled.open("rb") as fresh_file, MO.open("rb") as committed_file:
        fresh = gettext.GNUTranslations(fresh_file)._catalog  # type: ignore[attr-defined]
        committed = gettext.GNUTranslations(committed_file)._catalog  # type: ignore[attr-defined]
    differing = sorted(str(k) for k in fresh.keys() ^ committed.keys()) or sorted(
        str(k) for k in fresh if fresh[k] != committed[k]
    )
    assert not differing, f"django.mo is out of date (run compilemessages): {differing}"


# -- (b) what the pages show ---------------------------------------------------------------------


class _Text(HTMLParser):
    """Visible text, plus the attributes people read; not scripts, styles or JSON dumps."""

    SKIPPED = {"script", "style", "pre"}
    READ_ATTRIBUTES = {"title", "placeholder", "alt", "aria-label"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skipping = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self.SKIPPED:
            self.skipping += 1
        self.parts.extend(v for k, v in attrs if k in self.READ_ATTRIBUTES and v)

    def handle_endtag(self, tag: str) -> None:
        if tag in self.SKIPPED and self.skipping:
            self.skipping -= 1

    def handle_data(self, data: str) -> None:
        if not self.skipping:
            self.parts.append(data)


def visible_text(html: str) -> str:
    parser = _Text()
    parser.feed(html)
    text = " ".join(parser.parts)
    text = re.sub(r"https?://\S+", " ", text)  # URLs are data
    return re.sub(r"\s+", " ", text)


_PLACEHOLDER = re.compile(r"%\(\w+\)[sd]")


def english_detector(*catalogs: Path) -> Callable[[str], list[str]]:
    """A function listing the catalogs' English strings (5+ letters, translated) found in a text.

    The app's catalog by default; the example shop's tests add the shop's.
    """
    patterns = []
    entries = [e for path in catalogs or (PO,) for e in live_entries(path).values()]
    for entry in entries:
        msgid = re.sub(r"\s+", " ", entry.msgid)
        literal = _PLACEHOLDER.sub("", msgid).strip()
        if len(literal) < 5 or entry.msgstrs[0] == entry.msgid:
            continue
        parts = _PLACEHOLDER.split(msgid.replace("%%", "%"))
        body = ".+?".join(re.escape(p) for p in parts)
        patterns.append((entry.msgid, re.compile(rf"(?<!\w){body}(?!\w)")))

    def find(text: str) -> list[str]:
        return [msgid for msgid, pattern in patterns if pattern.search(text)]

    return find


@pytest.fixture
def shop(fake_gateway: Any, settings: Any) -> dict[str, Any]:
    """Charges of every kind (two with issuer tokens), webhook rows, deliveries."""
    settings.PAYCHARGE = {**settings.PAYCHARGE, "MAX_RETRIES": 0}

    def create(payment_type: str, **data: Any) -> Charge:
        token = fake_gateway.create_transaction_token(payment_type, **data)["id"]
        return services.create_charge(transaction_token_id=token, amount=2500, currency="JPY")

    bank = create("bank_transfer")
    online = create("online", brand="paypay", call_method="http_post")
    card = create("card")
    declined = services.refresh_charge(create("card", card_number=CARD_DECLINED).gateway_id)
    assert declined.status == "failed" and declined.error
    services.fetch_issuer_token(bank)
    services.fetch_issuer_token(online)
    return {"gateway": fake_gateway, "bank": bank, "online": online, "card": card}


def _webhook_rows(shop: dict[str, Any]) -> WebhookDelivery:
    now = timezone.now()
    for url, active, triggers, removed in [
        ("https://shop.example.jp/a/", False, ["charge_finished"], None),
        ("https://shop.example.jp/b/", True, ["charge_updated"], None),
        ("https://shop.example.jp/c/", True, ["charge_finished"], now),
    ]:
        WebhookConfiguration.objects.create(
            gateway_id=uuid.uuid4(),
            url=url,
            active=active,
            triggers=triggers,
            removed_at=removed,
            synced_at=now,
            raw={},
        )
    WebhookDelivery.objects.create(
        event="charge_finished",
        delivery_id="d-ok",
        dedupe_key="id:d-ok",
        body="{}",
        received_at=now,
        status="processed",
        charge=shop["bank"],
    )
    broken = WebhookDelivery.objects.create(
        event="", delivery_id="d-bad", dedupe_key="id:d-bad", body="not json", received_at=now
    )
    process_delivery(broken.pk)  # its error is stored in the active language
    return broken


def _subscription_pages(shop: dict[str, Any], get: Any, post: Any) -> None:
    """The subscription admin: its list, its page, a confirmation page and a refusal."""
    token = shop["gateway"].create_transaction_token(type="subscription")["id"]
    made = services.create_subscription(
        transaction_token_id=token, amount=1200, currency="JPY", period="monthly"
    )
    listed = reverse("admin:django_paycharge_subscription_changelist")
    get("subscription changelist", listed)
    get(
        "subscription detail", reverse("admin:django_paycharge_subscription_change", args=[made.pk])
    )
    chosen = {"_selected_action": [made.pk]}
    post("subscription cancel page", listed, {"action": "cancel_subscriptions", **chosen})
    refused = {"action": "resume_subscriptions", "post": "yes", "idempotency_key": "k-1"}
    post("subscription refusal", listed, {**refused, **chosen})


def render_everything(client: Any, shop: dict[str, Any]) -> dict[str, str]:
    """Page name -> visible text, in whatever language is active."""
    pages: dict[str, str] = {}

    def get(name: str, url: str, status: int = 200, **kwargs: Any) -> None:
        response = client.get(url, **kwargs)
        assert response.status_code == status, (name, response.status_code)
        pages[name] = visible_text(response.content.decode())

    def post(name: str, url: str, data: dict[str, Any]) -> None:
        response = client.post(url, data, follow=True)
        assert response.status_code == 200, (name, response.status_code)
        pages[name] = visible_text(response.content.decode())

    charges = reverse("admin:django_paycharge_charge_changelist")
    configs = reverse("admin:django_paycharge_webhookconfiguration_changelist")
    get("webhook configurations (none)", configs)
    broken = _webhook_rows(shop)
    bank, online, card = shop["bank"], shop["online"], shop["card"]
    selected = [c.pk for c in (bank, online, card)]
    get("charge changelist", charges)
    get(
        "charge detail (bank transfer)",
        reverse("admin:django_paycharge_charge_change", args=[bank.pk]),
    )
    declined = Charge.objects.get(status="failed")
    get(
        "charge detail (declined)",
        reverse("admin:django_paycharge_charge_change", args=[declined.pk]),
    )
    post(
        "refresh action", charges, {"action": "refresh_from_gateway", "_selected_action": selected}
    )
    post(
        "issuer token results",
        charges,
        {"action": "fetch_issuer_token_action", "_selected_action": selected},
    )
    post("sync now", reverse("admin:django_paycharge_charge_sync"), {})
    get("webhook configurations", configs)
    get("webhook deliveries", reverse("admin:django_paycharge_webhookdelivery_changelist"))
    get(
        "delivery detail",
        reverse("admin:django_paycharge_webhookdelivery_change", args=[broken.pk]),
    )
    _subscription_pages(shop, get, post)
    client.logout()

    session = client.session
    session["paycharge_charges"] = [str(c.gateway_id) for c in (bank, online)]
    session.save()
    get("payment page (bank transfer)", f"/payments/pay/{bank.gateway_id}/")
    get("payment page (online)", f"/payments/pay/{online.gateway_id}/")
    gateway = shop["gateway"]
    gateway.add_fault("GET", r"/issuer_token$", action="status", status=500, count=1)
    get("payment unavailable (gateway)", f"/payments/pay/{online.gateway_id}/", status=503)
    gateway.complete(str(bank.gateway_id))
    get("payment unavailable (status)", f"/payments/pay/{bank.gateway_id}/", status=409)
    gateway.add_fault("GET", r"/charges/", action="status", status=503, count=5)
    query = {"serviceChargeId": str(online.gateway_id)}
    get("return retry", "/payments/return/", status=503, data=query)
    get("charge not found", f"/payments/pay/{uuid.uuid4()}/", status=404)
    pages["system checks"] = check_texts()
    return pages


def check_texts() -> str:
    broken = {
        "SECRET": "",
        "JWT": "not-a-jwt",
        "BASE_URL": "http://gateway.example",
        "STORE_ID": "x",
        "TIMEOUT": -1,
        "MAX_RETRIES": 99,
        "RETRY_BACKOFF": "soon",
        "WEBHOOK_AUTH_TOKENS": [""],
        "WEBHOOK_MAX_BODY_BYTES": 1,
        "RETURN_URL": "",
        "TYPO": 1,
        "ACCOUNTS": {"b": 1},
    }
    with override_settings(PAYCHARGE=broken, DEBUG=False):
        messages = check_paycharge_settings()
    with override_settings(PAYCHARGE=[]):
        messages += check_paycharge_settings()
    assert len(messages) >= 12
    return " ".join(f"{m.msg} {m.hint or ''}" for m in messages)


def gateway_data() -> list[str]:
    """Names the gateway sent (the fake's "Fake Branch", ...): data shown as it is, not ours."""
    values: set[str] = set()
    for row in IssuerToken.objects.values_list(
        "account_id", "branch_name", "account_holder_name", "branch_code"
    ):
        values.update(row)
    for names in Charge.objects.values_list("store_name", "merchant_name", "descriptor"):
        values.update(v for v in names if v)
    return sorted((v for v in values if v), key=len, reverse=True)


def _offenders(pages: dict[str, str]) -> dict[str, list[str]]:
    find = english_detector()
    data = gateway_data()
    assert data  # the pages do show some; without removing them "Branch" would be reported
    found: dict[str, list[str]] = {}
    for name, text in pages.items():
        for value in data:
            text = text.replace(value, " ")
        if english := find(text):
            found[name] = english
    return found


@pytest.mark.django_db
def test_japanese_pages_show_no_english_app_string(
    admin_client: Any, shop: dict[str, Any], settings: Any
) -> None:
    settings.LANGUAGE_CODE = "ja"
    with translation.override("ja"):
        pages = render_everything(admin_client, shop)
    not_japanese = [name for name, text in pages.items() if not JAPANESE.search(text)]
    assert not not_japanese, f"pages with no Japanese at all: {not_japanese}"
    offenders = _offenders(pages)
    assert not offenders, "untranslated app strings under LANGUAGE_CODE='ja':\n" + json.dumps(
        offenders, ensure_ascii=False, indent=1
    )


@pytest.mark.django_db
def test_the_detector_finds_english_on_english_pages(
    admin_client: Any, shop: dict[str, Any], settings: Any
) -> None:
    settings.LANGUAGE_CODE = "en"
    with translation.override("en"):
        pages = render_everything(admin_client, shop)
    offenders = _offenders(pages)
    # Every page but the system checks' raw list shows English app strings in English.
    assert set(offenders) == set(pages), sorted(set(pages) - set(offenders))
    assert "Transfer to this bank account" in offenders["payment page (bank transfer)"]
    assert "Refresh from gateway" in offenders["charge detail (bank transfer)"]


def test_errors_raised_without_django_are_translated_when_shown() -> None:
    # The client builds these messages in English (it imports no Django); str() translates them.
    from django_paycharge.exceptions import NetworkError, NotFoundError

    missing = NotFoundError(f"{NotFoundError.default_message} (HTTP 404)", request_id="r-1")
    with translation.override("ja"):
        assert str(NetworkError()) == (
            "決済サービスに接続できませんでした。しばらくしてから再度お試しください。"
        )
        assert (
            str(missing)
            == "決済サービスに該当するデータがありません。 (HTTP 404) [リクエストID r-1]"
        )
    with translation.override("en"):
        assert (
            str(missing) == "The payment service has no such resource. (HTTP 404) [request id r-1]"
        )
