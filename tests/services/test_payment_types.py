"""fill_payment_types: one read per distinct token, remembered; 404s recorded; always progresses."""

from __future__ import annotations

import pytest

from django_paycharge import services
from django_paycharge.exceptions import NotFoundError
from django_paycharge.models import Charge, TransactionTokenInfo

pytestmark = pytest.mark.django_db


def _token_reads(gateway) -> list[str]:
    return [r["path"] for r in gateway.requests_log if "/tokens/" in r["path"]]


def _charges_of(gateway, token_id: str, count: int) -> None:
    for _ in range(count):
        gateway.create_charge(token_id)


def test_one_read_per_distinct_token_then_from_the_cache(fake_gateway):
    recurring = fake_gateway.create_transaction_token("card", type="recurring")["id"]
    _charges_of(fake_gateway, recurring, 5)
    konbini = fake_gateway.create_transaction_token("konbini")["id"]
    _charges_of(fake_gateway, konbini, 1)
    services.sync_charges()
    assert Charge.objects.filter(payment_type="").count() == 6

    assert services.fill_payment_types() == 6
    assert len(_token_reads(fake_gateway)) == 2
    assert set(Charge.objects.values_list("payment_type", flat=True)) == {"card", "konbini"}

    # A later charge of the same recurring token is filled from the cache: no read.
    _charges_of(fake_gateway, recurring, 1)
    services.sync_charges()
    assert services.fill_payment_types() == 1
    assert len(_token_reads(fake_gateway)) == 2


def test_a_404_is_recorded_and_not_asked_again(fake_gateway):
    fake_gateway.seed(3)
    services.sync_charges()
    gone = Charge.objects.order_by("transaction_token_id").first()
    assert gone is not None and gone.transaction_token_id is not None
    fake_gateway.add_fault(
        "GET", f"/tokens/{gone.transaction_token_id}$", action="status", status=404
    )
    assert services.fill_payment_types() == 2
    info = TransactionTokenInfo.objects.get(token_id=gone.transaction_token_id)
    assert info.state == TransactionTokenInfo.State.NOT_FOUND
    reads = len(_token_reads(fake_gateway))
    assert services.fill_payment_types() == 0
    assert len(_token_reads(fake_gateway)) == reads  # not asked again


def test_a_failing_token_goes_to_the_back_and_the_rest_progresses(fake_gateway, settings):
    settings.PAYCHARGE = {**settings.PAYCHARGE, "MAX_RETRIES": 0}
    fake_gateway.seed(6)
    services.sync_charges()
    first = Charge.objects.order_by("transaction_token_id").first()
    assert first is not None
    fake_gateway.add_fault(
        "GET", f"/tokens/{first.transaction_token_id}$", action="status", status=503
    )
    # A window of one token per run: the failing first token must not block the others.
    for _ in range(6):
        services.fill_payment_types(limit=1)
    assert list(Charge.objects.filter(payment_type="").values_list("pk", flat=True)) == [first.pk]
    fake_gateway.clear_faults()
    assert services.fill_payment_types(limit=1) == 1
    assert not Charge.objects.filter(payment_type="").exists()


def test_known_payment_type_reads_a_new_charges_token_once_and_fills_its_charges(fake_gateway):
    recurring = fake_gateway.create_transaction_token("online", type="recurring")["id"]
    first = services.create_charge(transaction_token_id=recurring, amount=500, currency="JPY")
    second = services.create_charge(transaction_token_id=recurring, amount=700, currency="JPY")
    assert (first.payment_type, second.payment_type) == ("", "")  # not read at the checkout
    assert _token_reads(fake_gateway) == []

    assert services.known_payment_type(first) == "online"
    assert first.payment_type == "online"
    assert len(_token_reads(fake_gateway)) == 1
    # Every charge of the token is filled, and the token is remembered.
    assert set(Charge.objects.values_list("payment_type", flat=True)) == {"online"}
    info = TransactionTokenInfo.objects.get(token_id=recurring)
    assert (info.state, info.payment_type) == (TransactionTokenInfo.State.KNOWN, "online")
    third = services.create_charge(transaction_token_id=recurring, amount=900, currency="JPY")
    assert services.known_payment_type(third) == "online"
    assert len(_token_reads(fake_gateway)) == 1  # from what was remembered: no read


def test_known_payment_type_raises_the_gateways_error_and_records_a_404(fake_gateway):
    token = fake_gateway.create_transaction_token("card")["id"]
    charge = services.create_charge(transaction_token_id=token, amount=500, currency="JPY")
    fake_gateway.add_fault("GET", f"/tokens/{token}$", action="status", status=404)
    with pytest.raises(NotFoundError):
        services.known_payment_type(charge)
    assert charge.payment_type == ""
    info = TransactionTokenInfo.objects.get(token_id=token)
    assert info.state == TransactionTokenInfo.State.NOT_FOUND
    no_token = Charge(account="default", payment_type="", transaction_token_id=None)
    assert services.known_payment_type(no_token) == ""
