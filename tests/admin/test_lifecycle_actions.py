"""Capture, cancel and refund in the admin: permissions, confirmation pages, per-charge results."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from django_paycharge import services
from django_paycharge.models import Cancel, ChargeActionRequest, Refund

from .test_charge_actions import CHANGELIST, run_action, texts

pytestmark = pytest.mark.django_db


@pytest.fixture
def refunder(client, staff_user):
    user = staff_user("view_charge", "refund_charge", username="refunder")
    client.force_login(user)
    return client


def confirm(client, action, charges, **fields):
    """Open the confirmation page, then submit it with ``fields``; both responses."""
    before = ChargeActionRequest.objects.count()
    page = run_action(client, action, charges)
    assert ChargeActionRequest.objects.count() == before  # the page alone starts nothing
    key = re.search(r'name="idempotency_key" value="([^"]+)"', page.content.decode())
    assert key, page.content.decode()[:2000]
    data = {"post": "yes", "idempotency_key": key.group(1), **fields}
    return page, run_action(client, action, charges, **data)


def hidden_fields(page):
    """The hidden inputs of the restating page: what its "Yes" button sends (the action and
    the charges aside: ``run_action`` sends them)."""
    html = page.content.decode()
    fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', html))
    for name in ("csrfmiddlewaretoken", "action", "_selected_action"):
        fields.pop(name, None)
    return fields


def refund(client, charges, **fields):
    """The refund's three pages: the form, the amounts restated, the result."""
    page, review = confirm(client, "refund_charges", charges, **fields)
    assert 'data-step="review"' in review.content.decode(), review.content.decode()[-3000:]
    assert Refund.objects.count() == 0  # restating the amounts sends nothing
    sent = hidden_fields(review)
    return page, review, run_action(client, "refund_charges", charges, **sent)


def test_refund_asks_restates_the_amount_then_refunds(refunder, fake_gateway, gateway_charge):
    charge = gateway_charge("card")
    page, review, done = refund(
        refunder, [charge], scope="part", amount="300", reason="customer_request"
    )
    html = page.content.decode()
    assert page.status_code == 200 and 'data-action="refund_charges"' in html
    assert str(charge.gateway_id) in html and "¥1,500" in html  # what is left to refund
    assert 'name="amount"' in html and 'name="reason"' in html and 'name="scope"' in html
    restated = review.content.decode()
    assert f"refund <strong>¥300</strong> of charge {charge.gateway_id}" in restated
    assert 'value="Yes, refund ¥300"' in restated
    assert '<td class="paycharge-left-after">¥1,200</td>' in restated
    assert f"Charge {charge.gateway_id}: refund of ¥300 is Pending." in texts(done)  # its answer
    refund_row = Refund.objects.get()
    assert (refund_row.amount, refund_row.reason) == (300, "customer_request")
    assert ChargeActionRequest.objects.get().requested_by == "refunder"


def test_an_empty_amount_is_not_all_refund_all_must_be_chosen(
    refunder, fake_gateway, gateway_charge
):
    charge = gateway_charge("card")
    _page, again = confirm(refunder, "refund_charges", [charge], scope="part", amount="")
    assert "Enter the amount to refund." in again.content.decode()
    _page, again = confirm(refunder, "refund_charges", [charge], amount="")
    assert 'data-step="review"' not in again.content.decode()  # no choice made: asked again
    assert Refund.objects.count() == 0
    _page, review, _done = refund(refunder, [charge], scope="all")
    assert 'value="Yes, refund ¥1,500"' in review.content.decode()
    assert Refund.objects.get().amount == 1500


def test_refund_all_refunds_what_was_restated_not_what_is_left_later(
    refunder, fake_gateway, gateway_charge
):
    charge = gateway_charge("card")
    _page, review = confirm(refunder, "refund_charges", [charge], scope="all")
    services.refund_charge(charge, amount=500)  # another refund meanwhile (another tab)
    sent = hidden_fields(review)
    done = run_action(refunder, "refund_charges", [charge], **sent)
    assert any("must be at most 1000" in m for m in texts(done)), texts(done)
    assert list(Refund.objects.values_list("amount", flat=True)) == [500]


def test_submitting_the_same_page_twice_refunds_once(refunder, fake_gateway, gateway_charge):
    charge = gateway_charge("card")
    _page, review = confirm(refunder, "refund_charges", [charge], scope="all")
    sent = hidden_fields(review)
    for _ in range(2):  # a double click, or a reload of the result
        run_action(refunder, "refund_charges", [charge], **sent)
    assert Refund.objects.get().amount == 1500
    assert len(fake_gateway.state.refunds) == 1


def test_a_bad_amount_shows_the_page_again(refunder, fake_gateway, gateway_charge):
    charge = gateway_charge("card")
    _page, done = confirm(refunder, "refund_charges", [charge], scope="part", amount="0")
    assert 'data-action="refund_charges"' in done.content.decode()
    assert 'data-step="review"' not in done.content.decode()
    assert Refund.objects.count() == 0


def test_change_goes_back_to_the_form_with_what_was_given(refunder, fake_gateway, gateway_charge):
    charge = gateway_charge("card")
    _page, review = confirm(refunder, "refund_charges", [charge], scope="part", amount="300")
    sent = hidden_fields(review)
    back = run_action(refunder, "refund_charges", [charge], edit="Change", **sent)
    html = back.content.decode()
    assert 'data-step="review"' not in html and 'name="amount" value="300"' in html
    assert Refund.objects.count() == 0


def test_several_charges_have_no_amount_field_and_each_is_reported(
    refunder, fake_gateway, gateway_charge
):
    paid, konbini = gateway_charge("card"), gateway_charge("konbini")
    page, review, done = refund(refunder, [paid, konbini], scope="all")
    assert 'name="amount"' not in page.content.decode()
    assert 'value="Yes, refund these amounts"' in review.content.decode()
    messages = texts(done)
    assert f"Charge {paid.gateway_id}: refund of ¥1,500 is Pending." in messages
    assert any(m.startswith(f"Charge {konbini.gateway_id}: ") for m in messages)


def test_an_action_from_the_charge_page_ends_on_that_page(refunder, fake_gateway, gateway_charge):
    charge = gateway_charge("card")
    page_url = reverse("admin:django_paycharge_charge_change", args=[charge.pk])
    _page, review, done = refund(refunder, [charge], scope="part", amount="200",
                                 _paycharge_from_charge="1")  # fmt: skip
    assert f'href="{page_url}" class="button cancel-link"' in review.content.decode()
    assert done.redirect_chain[-1][0] == page_url
    assert "¥200" in texts(done)[0]


def test_without_the_permission_the_action_is_not_offered(client, staff_user, gateway_charge):
    client.force_login(staff_user("view_charge", "call_gateway", "capture_charge"))
    charge = gateway_charge("card")
    html = client.get(CHANGELIST).content.decode()
    assert 'value="capture_charges"' in html
    assert 'value="refund_charges"' not in html and 'value="cancel_charges"' not in html
    response = run_action(client, "refund_charges", [charge], post="yes", idempotency_key="k")
    assert Refund.objects.count() == 0
    assert response.status_code == 200


def test_capture_and_cancel(client, staff_user, fake_gateway):
    client.force_login(staff_user("view_charge", "capture_charge", "cancel_charge"))
    token = fake_gateway.create_transaction_token("card")["id"]
    first = services.create_charge(
        transaction_token_id=token, amount=900, currency="JPY", capture=False
    )
    second = services.create_charge(
        transaction_token_id=token, amount=700, currency="JPY", capture=False
    )
    _page, done = confirm(client, "capture_charges", [first], amount="500")
    assert f"Charge {first.gateway_id} captured: ¥500, status Successful." in texts(done)
    _page, done = confirm(client, "cancel_charges", [second])
    assert f"Charge {second.gateway_id}: the cancel is Successful." in texts(done)
    assert Cancel.objects.get().status == "successful"
    assert str(Cancel.objects.get().gateway_id) not in " ".join(texts(done))  # no cancel UUID
    # A canceled charge cannot be captured: said per charge, the page never fails.
    _page, done = confirm(client, "capture_charges", [second])
    assert any("Only an authorized charge can be captured" in m for m in texts(done))


def test_the_charge_page_shows_refunds_cancels_and_its_buttons(
    refunder, fake_gateway, gateway_charge
):
    charge = gateway_charge("card")
    services.refund_charge(charge, amount=200, requested_by="someone")
    html = refunder.get(reverse("admin:django_paycharge_charge_change", args=[charge.pk]))
    text = html.content.decode()
    assert "¥200" in text and "¥1,300" in text  # refunded, and left to refund
    assert 'data-action="refund_charges"' in text
    assert 'data-action="capture_charges"' not in text  # no permission, and not authorized
    assert str(Refund.objects.get().gateway_id) in text
    assert "someone" in text  # the request inline says who asked


def test_refund_and_cancel_lists_are_read_only_with_filters(
    admin_client, fake_gateway, gateway_charge
):
    charge = gateway_charge("card")
    services.refund_charge(charge, amount=100)
    url = reverse("admin:django_paycharge_refund_changelist")
    listed = admin_client.get(url).content.decode()
    assert str(Refund.objects.get().gateway_id) in listed
    assert "?status__exact=successful" in listed and "?reason__exact=fraud" in listed
    found = admin_client.get(url, {"q": str(charge.gateway_id)}).content.decode()
    assert str(Refund.objects.get().gateway_id) in found
    assert admin_client.get(url, {"status__exact": "failed"}).context["cl"].result_count == 0
    assert admin_client.get(reverse("admin:django_paycharge_refund_add")).status_code == 403
    detail = reverse("admin:django_paycharge_refund_change", args=[Refund.objects.get().pk])
    assert admin_client.get(detail).status_code == 200
    assert admin_client.get(reverse("admin:django_paycharge_cancel_changelist")).status_code == 200
    requests = reverse("admin:django_paycharge_chargeactionrequest_changelist")
    assert "refund" in admin_client.get(requests).content.decode()


def test_action_pages_share_the_frame(refunder, admin_client, gateway_charge):
    """The confirmation and the issuer-token result page: our styles, a way back to the list."""
    charge = gateway_charge("card")
    confirm_page = run_action(refunder, "refund_charges", [charge]).content.decode()
    tokens_page = run_action(
        admin_client, "fetch_issuer_token_action", [gateway_charge("online")]
    ).content.decode()
    for html in (confirm_page, tokens_page):
        assert "django_paycharge/admin.css" in html
        breadcrumbs = html.split('<div class="breadcrumbs">', 1)[1].split("</div>", 1)[0]
        assert f'href="{CHANGELIST}"' in breadcrumbs
