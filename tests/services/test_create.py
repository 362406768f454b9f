from __future__ import annotations

import uuid
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from django_paycharge import services, signals
from django_paycharge.exceptions import (
    BadRequestError,
    IdempotencyKeyReusedError,
    InvalidParametersError,
    NotFoundError,
)
from django_paycharge.models import Charge, ChargeRequest
from tests.waiting import GUARD

pytestmark = pytest.mark.django_db


@pytest.fixture
def card_token(fake_gateway):
    return fake_gateway.create_transaction_token("card")["id"]


def remote_charges(fake_gateway):
    return list(fake_gateway.charges)


def test_create_charge_stores_the_charge_and_leaves_its_payment_type_for_later(
    fake_gateway, card_token, django_capture_on_commit_callbacks
):
    created = []
    signals.charge_created.connect(lambda **kw: created.append(kw["charge"]), weak=False)
    try:
        with django_capture_on_commit_callbacks(execute=True):
            charge = services.create_charge(
                transaction_token_id=card_token,
                amount=1500,
                currency="JPY",
                metadata={"order": "A-1"},
            )
    finally:
        signals.charge_created.receivers.clear()
    assert charge.status == "pending"
    assert charge.requested_amount == 1500
    assert charge.metadata == {"order": "A-1"}
    assert [c.pk for c in created] == [charge.pk]
    request = ChargeRequest.objects.get()
    assert request.state == "succeeded"
    assert request.charge_id == charge.pk
    assert remote_charges(fake_gateway) == [str(charge.gateway_id)]
    # One request before the answer: the token's payment type is read off the
    # checkout's path, or at once by what needs it.
    assert [(r["method"], r["path"]) for r in fake_gateway.requests_log] == [("POST", "/charges")]
    assert charge.payment_type == ""
    assert services.known_payment_type(charge) == "card"
    assert Charge.objects.get(pk=charge.pk).payment_type == "card"
    assert services.known_payment_type(charge) == "card"  # known now: no second read
    assert len(fake_gateway.requests_log) == 2


def test_invalid_input_is_rejected_before_anything_is_stored_or_sent(fake_gateway, card_token):
    with pytest.raises(InvalidParametersError) as info:
        services.create_charge(transaction_token_id=card_token, amount=-5, currency="yen!")
    fields = {e.field for e in info.value.errors}
    assert {"amount", "currency"} <= fields
    assert ChargeRequest.objects.count() == 0
    assert remote_charges(fake_gateway) == []


def test_same_idempotency_key_twice_gives_one_charge(fake_gateway, card_token):
    key = uuid.uuid4()
    first = services.create_charge(
        transaction_token_id=card_token, amount=100, currency="JPY", idempotency_key=key
    )
    again = services.create_charge(
        transaction_token_id=card_token, amount=100, currency="JPY", idempotency_key=key
    )
    assert first.pk == again.pk
    assert len(remote_charges(fake_gateway)) == 1
    assert ChargeRequest.objects.count() == 1


def test_reusing_a_key_for_another_request_is_refused(fake_gateway, card_token):
    key = uuid.uuid4()
    services.create_charge(
        transaction_token_id=card_token, amount=100, currency="JPY", idempotency_key=key
    )
    with pytest.raises(IdempotencyKeyReusedError, match="already used") as info:
        services.create_charge(
            transaction_token_id=card_token, amount=999, currency="JPY", idempotency_key=key
        )
    assert info.value.outcome == "refused"
    assert len(remote_charges(fake_gateway)) == 1


def test_a_callers_key_stays_local_and_the_gateway_gets_a_uuid(fake_gateway, card_token):
    charge = services.create_charge(
        transaction_token_id=card_token, amount=100, currency="JPY", idempotency_key="order-7-a-1"
    )
    request = ChargeRequest.objects.get()
    assert request.caller_key == "order-7-a-1"
    sent = {r["headers"].get("idempotency-key") for r in fake_gateway.requests_log}
    assert str(request.idempotency_key) in sent and "order-7-a-1" not in sent
    again = services.create_charge(
        transaction_token_id=card_token, amount=100, currency="JPY", idempotency_key="order-7-a-1"
    )
    assert again.pk == charge.pk and len(remote_charges(fake_gateway)) == 1


@pytest.mark.parametrize("drops", [1, 2, 3])
def test_lost_responses_end_with_one_charge(fake_gateway, card_token, drops):
    fake_gateway.add_fault("POST", r"^/charges$", action="drop_after", count=drops)
    charge = services.create_charge(transaction_token_id=card_token, amount=100, currency="JPY")
    assert len(remote_charges(fake_gateway)) == 1
    assert Charge.objects.count() == 1
    keys = {
        r["headers"]["idempotency-key"]
        for r in fake_gateway.requests_log
        if r["method"] == "POST" and r["path"] == "/charges"
    }
    assert len(keys) == 1
    assert str(charge.gateway_id) in fake_gateway.charges


def test_a_lost_answer_on_every_ask_is_found_by_a_read_not_a_second_post(
    fake_gateway, card_token, settings
):
    settings.PAYCHARGE = {**settings.PAYCHARGE, "MAX_RETRIES": 0}
    fake_gateway.add_fault("POST", r"^/charges$", action="drop_after")
    charge = services.create_charge(transaction_token_id=card_token, amount=100, currency="JPY")
    assert len(remote_charges(fake_gateway)) == 1  # the gateway did the work once
    assert str(charge.gateway_id) in fake_gateway.charges
    request = ChargeRequest.objects.get()
    assert request.state == "succeeded" and request.charge_id == charge.pk
    assert request.error is not None
    assert request.error["type"] == "NetworkError"  # what was met on the way stays visible


def test_a_request_committed_but_never_sent_is_sent_once_by_recover(fake_gateway, card_token):
    ChargeRequest.objects.create(
        params={"transaction_token_id": card_token, "amount": 700, "currency": "JPY"}
    )
    from datetime import timedelta

    assert services.recover_charge_requests(older_than=timedelta(0)).settled == 1
    assert services.recover_charge_requests(older_than=timedelta(0)).settled == 0
    assert len(remote_charges(fake_gateway)) == 1
    assert Charge.objects.get().requested_amount == 700


def test_a_refused_request_is_marked_failed_and_says_so(fake_gateway):
    unknown_token = str(uuid.uuid4())
    with pytest.raises(NotFoundError) as info:
        services.create_charge(
            transaction_token_id=unknown_token, amount=100, currency="JPY", idempotency_key="k-404"
        )
    assert info.value.outcome == "refused"
    request = ChargeRequest.objects.get()
    assert request.state == "failed" and request.error is not None
    assert request.error["http_status"] == 404 and request.error["outcome"] == "refused"
    assert Charge.objects.count() == 0
    # Asked again with its key: the same refusal, from the record; nothing is sent.
    posts = len(fake_gateway.requests_log)
    with pytest.raises(NotFoundError) as again:
        services.create_charge(
            transaction_token_id=unknown_token, amount=100, currency="JPY", idempotency_key="k-404"
        )
    assert again.value.outcome == "refused" and len(fake_gateway.requests_log) == posts


def test_every_field_round_trips(fake_gateway):
    token = fake_gateway.create_transaction_token("online", brand="paypay", call_method="http_post")
    made = services.create_charge(
        transaction_token_id=token["id"],
        amount=1234,
        currency="USD",
        metadata={"order": "B-2", "qty": 3, "gift": True},
        redirect_endpoint="https://shop.example/return?x=1",
        merchant_transaction_id="MTX1",
    )
    fake_gateway.complete(str(made.gateway_id))
    charge = services.refresh_charge(made.gateway_id)
    gateway_json = fake_gateway.request(
        "GET", f"/stores/{charge.store_id}/charges/{charge.gateway_id}"
    ).json()
    stored = Charge.objects.get(pk=charge.pk)
    assert stored.raw == gateway_json
    assert str(stored.gateway_id) == gateway_json["id"]
    for name in ("store_id", "transaction_token_id"):
        assert str(getattr(stored, name)) == gateway_json[name]
    for name in (
        "transaction_token_type",
        "merchant_transaction_id",
        "requested_amount",
        "requested_currency",
        "charged_amount",
        "charged_currency",
        "fee_amount",
        "fee_currency",
        "only_direct_currency",
        "descriptor",
        "descriptor_phone_number",
        "status",
        "error",
        "metadata",
        "mode",
        "redirect",
        "merchant_name",
        "store_name",
        "three_ds",
    ):
        assert getattr(stored, name) == gateway_json.get(name), name
    for name in ("requested_amount_formatted", "charged_amount_formatted", "fee_amount_formatted"):
        assert stored.__dict__[name] == Decimal(str(gateway_json[name])), name
    assert stored.created_on is not None
    assert stored.created_on.isoformat().replace("+00:00", "Z") == gateway_json["created_on"]
    assert stored.payment_type == "online"
    assert stored.status == "successful"


def test_refresh_creates_a_row_for_a_charge_the_shop_did_not_have(fake_gateway):
    remote = fake_gateway.create_charge()
    charge = services.refresh_charge(remote["id"])
    assert charge.status == "successful"
    assert charge.payment_type == "card"
    assert Charge.objects.count() == 1


def test_wait_for_charge_returns_once_the_charge_left_pending(fake_gateway, card_token):
    fake_gateway.processing_delay = 0.3
    charge = services.create_charge(transaction_token_id=card_token, amount=100, currency="JPY")
    assert charge.status == "pending"
    done = services.wait_for_charge(charge, timeout=GUARD)
    assert done.status == "successful"


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"amount": 2**63}, "amount"),
        ({"merchant_transaction_id": "M" * 256}, "merchant_transaction_id"),
        ({"metadata": {"note": "a\x00b"}}, "metadata"),
        ({"metadata": {"k\x00": "v"}}, "metadata"),
        ({"merchant_transaction_id": "A\x00"}, "merchant_transaction_id"),
    ],
)
def test_what_the_mirror_cannot_store_is_refused_before_the_gateway_sees_it(
    fake_gateway, card_token, change, field
):
    params = {"transaction_token_id": card_token, "amount": 100, "currency": "JPY", **change}
    with pytest.raises(InvalidParametersError) as info:
        services.create_charge(**params)
    assert field in {e.field for e in info.value.errors}
    assert remote_charges(fake_gateway) == []
    assert ChargeRequest.objects.count() == 0


def test_a_params_object_is_the_same_request_as_its_keyword_arguments(fake_gateway, card_token):
    from django_paycharge.client.params import ChargeCreateParams

    params = ChargeCreateParams(transaction_token_id=card_token, amount=700, currency="JPY")
    first = services.create_charge(params, idempotency_key="order-7-pay-1")
    again = services.create_charge(
        transaction_token_id=card_token, amount=700, currency="JPY", idempotency_key="order-7-pay-1"
    )
    assert again.pk == first.pk
    assert ChargeRequest.objects.get().params == params.to_dict()
    with pytest.raises(TypeError):
        services.create_charge(params, amount=800)
    assert remote_charges(fake_gateway) == [str(first.gateway_id)]


def _statements(queries) -> list[str]:
    words = [q["sql"].split()[0].upper() for q in queries.captured_queries]
    return [w for w in words if w not in ("SAVEPOINT", "RELEASE", "BEGIN", "COMMIT")]


def test_a_create_writes_one_row_before_the_post_and_one_write_after(fake_gateway, card_token):
    with CaptureQueriesContext(connection) as queries:
        charge = services.create_charge(
            transaction_token_id=card_token, amount=1500, currency="JPY", idempotency_key="o-1"
        )
    # The request (committed, counted as sent), then the charge and the request's link:
    # on PostgreSQL one statement (no receiver listens, so nothing is announced).
    after = ["WITH"] if connection.vendor == "postgresql" else ["INSERT", "UPDATE"]
    assert _statements(queries) == ["INSERT", *after]
    first = next(q["sql"] for q in queries.captured_queries if q["sql"].startswith("INSERT"))
    assert "chargerequest" in first.lower()
    request = ChargeRequest.objects.get()
    assert (request.state, request.attempts, request.charge_id) == ("succeeded", 1, charge.pk)
    assert request.sent_at is not None and request.sent_at >= request.created_at
    # Asked again with the key: read, not created again.
    with CaptureQueriesContext(connection) as queries:
        again = services.create_charge(
            transaction_token_id=card_token, amount=1500, currency="JPY", idempotency_key="o-1"
        )
    assert again.pk == charge.pk
    assert _statements(queries)[0] == "INSERT" and "UPDATE" not in _statements(queries)
    assert len(fake_gateway.charges) == 1


def test_with_a_receiver_the_charge_its_link_and_announcements_are_one_transaction(
    fake_gateway, card_token, django_capture_on_commit_callbacks
):
    heard = []
    signals.charge_status_changed.connect(lambda **kw: heard.append(kw["status"]), weak=False)
    try:
        with (
            CaptureQueriesContext(connection) as queries,
            django_capture_on_commit_callbacks(execute=True),
        ):
            charge = services.create_charge(
                transaction_token_id=card_token, amount=1500, currency="JPY"
            )
    finally:
        signals.charge_status_changed.receivers.clear()
    assert heard == ["pending"]
    words = [q["sql"].split()[0].upper() for q in queries.captured_queries]
    # After the request's own write: the charge, its announcement's record and the
    # request's link, in one transaction (a savepoint in the test's transaction).
    assert words[3:8] == ["SAVEPOINT", "INSERT", "INSERT", "UPDATE", "RELEASE"]
    assert "announcement" in queries.captured_queries[5]["sql"].lower()
    assert ChargeRequest.objects.get().charge_id == charge.pk


def test_a_refused_create_writes_the_request_then_its_refusal(fake_gateway, card_token):
    fake_gateway.add_fault("POST", "/charges$", action="status", status=400)
    with CaptureQueriesContext(connection) as queries, pytest.raises(BadRequestError):
        services.create_charge(transaction_token_id=card_token, amount=1500, currency="JPY")
    # Nothing but the request before the POST; its refusal recorded after.
    assert _statements(queries) == ["INSERT", "UPDATE"]
    assert ChargeRequest.objects.get().state == "failed"


@pytest.mark.parametrize("orm", [False, True], ids=["one statement", "ORM fallback"])
def test_a_callers_key_finds_its_request_on_either_insert(
    fake_gateway, card_token, monkeypatch, orm
):
    from django_paycharge.services.mirror import inserts as _insert_once

    if orm:  # databases without INSERT ... ON CONFLICT ... RETURNING
        monkeypatch.setattr(_insert_once, "_has_upsert", lambda connection: False)
    fields = {"transaction_token_id": card_token, "amount": 1500, "currency": "JPY"}
    first = services.create_charge(**fields, idempotency_key="order-7-pay-1")
    assert services.create_charge(**fields, idempotency_key="order-7-pay-1").pk == first.pk
    with pytest.raises(IdempotencyKeyReusedError):
        services.create_charge(**{**fields, "amount": 1600}, idempotency_key="order-7-pay-1")
    keyless = services.create_charge(**fields)
    assert keyless.pk != first.pk
    assert ChargeRequest.objects.count() == 2
    assert len(fake_gateway.charges) == 2


def test_a_charge_the_mirror_holds_already_is_linked_not_inserted_again(fake_gateway, card_token):
    from django_paycharge.services.charges.charge_requests import _link, store_created
    from django_paycharge.services.mirror import insert_new_charge

    fields = {"transaction_token_id": card_token, "amount": 1500, "currency": "JPY"}
    remote = services.get_client().charges.create(**fields, idempotency_key=uuid.uuid4())
    stored = services.store_remote_charge(remote, account="default")  # a webhook came first
    request = ChargeRequest.objects.create(params=fields, state="unknown", attempts=1)
    link = _link(request, remote)
    assert insert_new_charge(remote, account="default", link=link) is None  # nothing written
    request.refresh_from_db()
    assert (request.state, request.charge_id) == ("unknown", None)
    assert store_created(request, remote).pk == stored.pk
    request.refresh_from_db()
    assert (request.state, request.charge_id) == ("succeeded", stored.pk)
    assert Charge.objects.count() == 1


@pytest.mark.skipif("connection.vendor != 'postgresql'", reason="runs in the PostgreSQL pass")
def test_on_postgresql_the_checkout_binds_its_values_on_the_server_and_prepares_as_told(
    fake_gateway, card_token
):
    import psycopg

    from django_paycharge.services.mirror import bound_cursor

    def prepared() -> set[str]:
        with connection.cursor() as cursor:
            cursor.execute("SELECT statement FROM pg_prepared_statements")
            return {row[0] for row in cursor.fetchall()}

    with bound_cursor(connection) as cursor:  # Django's default is client-side binding
        assert not isinstance(cursor.cursor, psycopg.ClientCursor)
    before = prepared()
    for n in range(7):  # past psycopg's usual threshold for preparing a statement
        charge = services.create_charge(
            transaction_token_id=card_token, amount=100 + n, currency="JPY", metadata={"n": n}
        )
        stored = Charge.objects.get(pk=charge.pk)
        assert (stored.requested_amount, stored.metadata) == (100 + n, {"n": n})
    # Django's default prepare_threshold (None): nothing prepared under a name, which
    # a pooler in transaction mode could not pass on.
    assert prepared() == before
    # A shop's OPTIONS["prepare_threshold"] (set on the connection when it opens) prepares
    # the request's insert and the charge's insert-and-link, Django's cursors still binding
    # on the client.
    connection.connection.prepare_threshold = 0
    try:
        services.create_charge(transaction_token_id=card_token, amount=200, currency="JPY")
        new = prepared() - before
    finally:
        connection.connection.prepare_threshold = None
    assert {text.split()[0] for text in new} == {"INSERT", "WITH"}
    assert any("chargerequest" in text for text in new)
    assert ChargeRequest.objects.filter(state="succeeded").count() == 8
