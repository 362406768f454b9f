"""Every app signal goes out through one helper: robust, after the outermost commit."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.db import transaction

from django_paycharge import outbox, services, signals
from django_paycharge.models import Charge, ChargeRequest

PACKAGE = Path(signals.__file__).parent


@pytest.fixture
def seen():
    got: list[int] = []

    def receiver(sender, **kwargs):
        got.append(kwargs["n"])

    signals.charge_created.connect(receiver, sender=Charge, weak=False)
    yield got
    signals.charge_created.disconnect(receiver, sender=Charge)


@pytest.mark.django_db(transaction=True)
def test_sent_after_the_outermost_commit_and_never_for_a_rollback(seen):
    outbox.send(signals.charge_created, sender=Charge, n=1)
    assert seen == [1]  # no transaction: at once
    with transaction.atomic():
        with transaction.atomic():
            outbox.send(signals.charge_created, sender=Charge, n=2)
        assert seen == [1]  # an inner block's end is not the commit
    assert seen == [1, 2]
    with pytest.raises(RuntimeError), transaction.atomic():
        outbox.send(signals.charge_created, sender=Charge, n=3)
        raise RuntimeError("rolled back")
    assert seen == [1, 2]


@pytest.mark.django_db(transaction=True)
def test_a_raising_receiver_is_logged_by_name_and_changes_nothing(seen, caplog):
    def broken(sender, **kwargs):
        raise ValueError("a shop's bug")

    signals.charge_created.connect(broken, sender=Charge, weak=False)
    try:
        outbox.send(signals.charge_created, sender=Charge, n=1)
    finally:
        signals.charge_created.disconnect(broken, sender=Charge)
    assert seen == [1]  # the other receiver ran
    assert (
        "Receiver tests.test_signals.test_a_raising_receiver_is_logged_by_name_and_changes_"
        "nothing.<locals>.broken of charge_created failed (ValueError)"
    ) in caplog.text


@pytest.mark.django_db(transaction=True)
def test_raising_receivers_never_turn_a_created_charge_into_an_error(fake_gateway, caplog):
    def broken(**kwargs):
        raise RuntimeError("receiver bug")

    for signal in (signals.charge_created, signals.charge_updated, signals.charge_status_changed):
        signal.connect(broken, weak=False)
    try:
        token = fake_gateway.create_transaction_token("bank_transfer")["id"]
        charge = services.create_charge(transaction_token_id=token, amount=100, currency="JPY")
        fake_gateway.complete(str(charge.gateway_id))
        refreshed = services.refresh_charge(charge.gateway_id)
    finally:
        for signal in (
            signals.charge_created,
            signals.charge_updated,
            signals.charge_status_changed,
        ):
            signal.disconnect(broken)
    assert refreshed.status == "successful"
    assert ChargeRequest.objects.get().state == "succeeded"
    failures = [r for r in caplog.records if r.name == "django_paycharge.signals"]
    assert {r.getMessage().split(" of ")[1].split()[0] for r in failures} == {
        "charge_created",
        "charge_updated",
        "charge_status_changed",
    }


def test_every_signal_of_the_package_is_sent_through_the_helper():
    direct = re.compile(r"\.\w+\.(send|send_robust|asend|asend_robust)\(")
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        if path.name in ("signals.py", "send.py") or "testing" in path.parts:
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if direct.search(line):
                offenders.append(f"{path.relative_to(PACKAGE)}:{number}")
    assert offenders == []
    sent = set(re.findall(r"outbox\.send\(\s*signals\.(\w+)", _package_text()))
    # Or together, as (signal, sender, kwargs) of outbox.send_all (a page's charges), the
    # signal named in the tuple, chosen by a function (return) or from a table (a value).
    together = [p.read_text() for p in PACKAGE.rglob("*.py") if "outbox.send_all(" in p.read_text()]
    named = r"(?:\(|return |: )\s*signals\.(\w+)\b"
    sent |= {name for text in together for name in re.findall(named, text)}
    assert sent == set(signals.SIGNALS)


def _package_text() -> str:
    return "\n".join(p.read_text() for p in PACKAGE.rglob("*.py") if "testing" not in p.parts)
