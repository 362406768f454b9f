"""Error answers map to the right exception with code, field errors and request id."""

from __future__ import annotations

import ssl
import uuid
from typing import Any

import pytest
import requests
import responses
import urllib3.exceptions

from django_paycharge.client import PayChargeClient
from django_paycharge.exceptions import (
    APIError,
    AuthenticationError,
    BadRequestError,
    ConflictError,
    FieldError,
    IdempotencyKeyConflictError,
    InvalidResponseError,
    NetworkError,
    NotFoundError,
    NotSentError,
    PayChargeError,
    PaymentDetailsRejectedError,
    PermissionDeniedError,
    RateLimitError,
    RefundExceedsChargeError,
    ServerError,
    StoreNotFoundError,
    UnsupportedByGatewayError,
    WebhookURLExistsError,
)

from .conftest import BASE, CHARGE, STORE, TOKEN, SleepRecorder, charge_json, make_client

URL = f"{BASE}/stores/{STORE}/charges/{CHARGE}"


@pytest.fixture
def no_retry_client(sleeps: SleepRecorder) -> PayChargeClient:
    return make_client(sleeps, max_retries=0)


@pytest.mark.parametrize(
    ("status", "code", "cls"),
    [
        (400, "VALIDATION_ERROR", BadRequestError),
        (400, "INVALID_REQUEST_BODY", BadRequestError),
        (400, "UNSUPPORTED_PAYMENT_TYPE", BadRequestError),
        # The gateway's documented codes (the official SDKs' error-code table).
        (400, "TRANSACTION_TOKEN_EXPIRED", PaymentDetailsRejectedError),
        (400, "TRANSACTION_ALREADY_PROCESSED", PaymentDetailsRejectedError),
        (400, "NOT_SUPPORTED_BY_PROCESSOR", UnsupportedByGatewayError),
        (401, "AUTH_HEADER_MISSING", AuthenticationError),
        (401, "INVALID_APP_TOKEN", AuthenticationError),
        (401, "INVALID_CREDENTIALS", AuthenticationError),
        (403, "INVALID_PERMISSIONS", PermissionDeniedError),
        (403, "CARD_LOCKED", PaymentDetailsRejectedError),  # the card, not our token
        (404, "NOT_FOUND", NotFoundError),
        # One refund above the charge, and partial refunds adding up beyond it: one meaning.
        (400, "REFUND_EXCEEDS_CHARGE_AMOUNT", RefundExceedsChargeError),
        (400, "REFUND_NOT_WITHIN_BOUNDS", RefundExceedsChargeError),
        (409, "IDEMPOTENCY_KEY_CONFLICT", IdempotencyKeyConflictError),
        (409, "WEBHOOK_URL_EXISTS", WebhookURLExistsError),
        (409, "NON_UNIQUE_ACTIVE_TOKEN", ConflictError),
        (409, "NON_UNIQUE_MERCHANT_TRANSACTION_ID", ConflictError),
        (409, "INVALID_CHARGE_STATUS", ConflictError),
        (429, None, RateLimitError),
        (500, "UNKNOWN_ERROR", ServerError),
        (500, "TIMEOUT", ServerError),
        (500, "CARD_LOCKED", ServerError),  # a 5xx is the gateway's trouble whatever it says
        (502, None, ServerError),
        (503, "SERVICE_UNAVAILABLE_TRY_AGAIN", ServerError),
        (504, None, ServerError),
        (504, "NO_GATEWAY_AVAILABLE_TO_PROCESS_THE_REQUEST", UnsupportedByGatewayError),
        (418, "TEAPOT", APIError),
    ],
)
def test_status_maps_to_class(
    no_retry_client: PayChargeClient,
    rsps: responses.RequestsMock,
    status: int,
    code: str | None,
    cls: type[APIError],
) -> None:
    body: dict[str, Any] = {"status": "error", "code": code, "errors": []}
    rsps.get(URL, json=body, status=status, headers={"X-Request-Id": "req-123"})
    with pytest.raises(APIError) as info:
        no_retry_client.charges.retrieve(STORE, CHARGE)
    err = info.value
    assert type(err) is cls
    assert err.permanent is (cls is UnsupportedByGatewayError)
    assert isinstance(err, PayChargeError)
    assert err.http_status == status
    assert err.code == code
    assert err.errors == []
    assert err.request_id == "req-123"
    assert f"HTTP {status}" in str(err)
    assert "req-123" in str(err)


def test_validation_errors_carried(
    no_retry_client: PayChargeClient, rsps: responses.RequestsMock
) -> None:
    rsps.post(
        f"{BASE}/charges",
        status=400,
        json={
            "status": "error",
            "code": "VALIDATION_ERROR",
            "errors": [
                {"field": "three_ds.mode", "reason": "INVALID_FORMAT"},
                {"field": "merchant_transaction_id", "reason": "TOO_LONG"},
            ],
        },
        headers={"Request-Id": "fallback-id"},
    )
    with pytest.raises(BadRequestError) as info:
        no_retry_client.charges.create(transaction_token_id=TOKEN, amount=1, currency="JPY")
    err = info.value
    assert err.code == "VALIDATION_ERROR"
    assert err.errors == [
        FieldError("three_ds.mode", "INVALID_FORMAT"),
        FieldError("merchant_transaction_id", "TOO_LONG"),
    ]
    assert err.request_id == "fallback-id"
    assert "three_ds.mode: INVALID_FORMAT" in str(err)
    assert len(rsps.calls) == 1


@pytest.mark.parametrize(
    ("body", "content_type", "code", "errors"),
    [
        (b"<html><body>502 Bad Gateway</body></html>", "text/html", None, []),
        (b"", "application/json", None, []),
        (b'{"status": "error"}', "application/json", None, []),
        (b'{"code": 42, "errors": "oops"}', "application/json", None, []),
        (b'["not", "an", "object"]', "application/json", None, []),
        (
            b'{"code": "X", "errors": [1, {"field": null, "reason": "bad"}, {"field": "f"}]}',
            "application/json",
            "X",
            [FieldError("", "bad"), FieldError("f", "")],
        ),
    ],
)
def test_malformed_error_bodies_still_map(
    no_retry_client: PayChargeClient,
    rsps: responses.RequestsMock,
    body: bytes,
    content_type: str,
    code: str | None,
    errors: list[FieldError],
) -> None:
    rsps.get(URL, body=body, status=502, content_type=content_type)
    with pytest.raises(ServerError) as info:
        no_retry_client.charges.retrieve(STORE, CHARGE)
    assert info.value.code == code
    assert info.value.errors == errors
    assert info.value.request_id is None


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (b"<html>maintenance</html>", "text/html"),
        (b"", "application/json"),
        (b"[]", "application/json"),
        (b'"charge"', "application/json"),
        (b"{bad json", "application/json"),
        (b'{"status": "pending"}', "application/json"),  # no id
        (b'{"id": "not-a-uuid"}', "application/json"),
        (b"[" * 100000, "application/json"),
    ],
)
def test_2xx_with_unreadable_body(
    client: PayChargeClient, rsps: responses.RequestsMock, body: bytes, content_type: str
) -> None:
    rsps.get(URL, body=body, status=200, content_type=content_type, headers={"X-Request-Id": "r"})
    with pytest.raises(InvalidResponseError) as info:
        client.charges.retrieve(STORE, CHARGE)
    assert info.value.http_status == 200
    assert info.value.request_id == "r"
    assert len(rsps.calls) == 1  # not retried


@pytest.mark.parametrize(
    "body",
    [
        {"has_more": False},
        {"items": {}, "has_more": False},
        [],
    ],
)
def test_list_with_bad_shape(
    client: PayChargeClient, rsps: responses.RequestsMock, body: Any
) -> None:
    rsps.get(f"{BASE}/charges", json=body)
    with pytest.raises(InvalidResponseError):
        client.charges.list_page()


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("requested_amount", 10.5),
        ("requested_amount", True),
        ("created_on", "yesterday"),
        ("metadata", [1]),
        ("error", "declined"),
        ("store_id", "store-7"),
    ],
)
def test_2xx_with_odd_field_is_read(
    client: PayChargeClient, rsps: responses.RequestsMock, field: str, value: Any
) -> None:
    """Only the id is required: an odd field is unknown (None), kept in raw as sent."""
    rsps.get(URL, json={"id": CHARGE, field: value}, status=200)
    charge = client.charges.retrieve(STORE, CHARGE)
    assert getattr(charge, field) is None
    assert charge.raw == {"id": CHARGE, field: value}


def test_list_item_without_id_is_rejected_not_fatal(
    client: PayChargeClient, rsps: responses.RequestsMock
) -> None:
    items = [{"id": "x", "status": "pending"}, {"id": CHARGE}, "junk", {"status": "failed"}]
    rsps.get(f"{BASE}/charges", json={"items": items, "has_more": "no"})
    page = client.charges.list_page()
    assert [c.id for c in page.items] == [uuid.UUID(CHARGE)]
    assert [r.raw for r in page.rejected] == [items[0], "junk", items[3]]
    assert "not a UUID" in page.rejected[0].reason
    assert "not a JSON object" in page.rejected[1].reason
    assert "missing" in page.rejected[2].reason
    assert page.has_more is True  # unreadable has_more on a non-empty page: ask once more


def test_connection_error_is_network_error(
    no_retry_client: PayChargeClient, rsps: responses.RequestsMock
) -> None:
    rsps.get(URL, body=requests.ConnectionError("refused"))
    with pytest.raises(NetworkError) as info:
        no_retry_client.charges.retrieve(STORE, CHARGE)
    assert info.value.http_status is None
    assert isinstance(info.value.__cause__, requests.ConnectionError)


def test_post_read_timeout_says_it_may_have_happened(
    no_retry_client: PayChargeClient, rsps: responses.RequestsMock
) -> None:
    rsps.post(f"{BASE}/charges", body=requests.ReadTimeout("slow"))
    with pytest.raises(NetworkError) as info:
        no_retry_client.charges.create(transaction_token_id=TOKEN, amount=1, currency="JPY")
    assert "idempotency key" in str(info.value)


def test_redirect_is_not_followed(client: PayChargeClient, rsps: responses.RequestsMock) -> None:
    rsps.get(URL, status=302, headers={"Location": "https://elsewhere.example/"})
    with pytest.raises(APIError) as info:
        client.charges.retrieve(STORE, CHARGE)
    assert info.value.http_status == 302
    assert len(rsps.calls) == 1


def test_2xx_other_than_200_accepted(client: PayChargeClient, rsps: responses.RequestsMock) -> None:
    rsps.get(URL, json=charge_json(), status=203)
    assert client.charges.retrieve(STORE, CHARGE).status == "pending"


@pytest.mark.parametrize(("status", "body"), [(201, b""), (200, b"  "), (204, b""), (200, b"{}")])
def test_a_capture_answered_with_an_empty_body_went_through(
    client: PayChargeClient, rsps: responses.RequestsMock, status: int, body: bytes
) -> None:
    """The Java SDK's own capture test serves 201 with no body: that capture succeeded."""
    rsps.post(f"{URL}/capture", body=body, status=status)
    answer = client.charges.capture(STORE, CHARGE, idempotency_key="capture-1")
    assert (answer.amount, answer.currency, answer.raw) == (None, None, {})
    assert len(rsps.calls) == 1


def test_a_charge_answered_with_an_empty_body_cannot_be_read(
    client: PayChargeClient, rsps: responses.RequestsMock
) -> None:
    rsps.get(URL, body=b"", status=200)
    with pytest.raises(InvalidResponseError):
        client.charges.retrieve(STORE, CHARGE)


def _wrapped(reason: Exception, cls: type[requests.RequestException] = requests.ConnectionError):
    """What requests raises: its exception around urllib3's MaxRetryError around ``reason``."""
    return cls(urllib3.exceptions.MaxRetryError(None, "/charges", reason))  # type: ignore[arg-type]  # no pool: none was made


def _cert_failure() -> Exception:
    return urllib3.exceptions.SSLError(ssl.SSLCertVerificationError(1, "certificate verify failed"))


@pytest.mark.parametrize(
    ("failure", "not_sent"),
    [
        # Provably before any byte was sent: nothing was done.
        (requests.ConnectTimeout("connect timed out"), True),
        (_wrapped(urllib3.exceptions.NewConnectionError(None, "refused")), True),  # type: ignore[arg-type]  # no connection object
        (_wrapped(urllib3.exceptions.NameResolutionError("gw", None, OSError("no name"))), True),  # type: ignore[arg-type]  # likewise
        (_wrapped(_cert_failure(), requests.exceptions.SSLError), True),
        # Perhaps after sending: the gateway may have processed it.
        (requests.ReadTimeout("slow"), False),
        (_wrapped(urllib3.exceptions.ProtocolError("reset", ConnectionResetError())), False),
        (requests.ConnectionError("Connection aborted"), False),
        (
            _wrapped(
                urllib3.exceptions.SSLError(ssl.SSLError(1, "bad record mac")),
                requests.exceptions.SSLError,
            ),
            False,
        ),
    ],
)
def test_only_a_failure_before_sending_is_not_sent(
    no_retry_client: PayChargeClient, rsps: responses.RequestsMock, failure, not_sent: bool
) -> None:
    rsps.post(f"{BASE}/charges", body=failure)
    with pytest.raises(NetworkError) as info:
        no_retry_client.charges.create(
            transaction_token_id=TOKEN, amount=1, currency="JPY", idempotency_key="k-1"
        )
    assert isinstance(info.value, NotSentError) is not_sent
    assert (info.value.outcome == "not_sent") is not_sent


def test_a_send_that_never_left_after_one_that_may_have_is_not_called_not_sent(
    sleeps: SleepRecorder, rsps: responses.RequestsMock
) -> None:
    client = make_client(sleeps, max_retries=1)
    rsps.post(f"{BASE}/charges", body=requests.ReadTimeout("slow"))
    rsps.post(f"{BASE}/charges", body=requests.ConnectTimeout("connect timed out"))
    with pytest.raises(NetworkError) as info:
        client.charges.create(
            transaction_token_id=TOKEN, amount=1, currency="JPY", idempotency_key="k-1"
        )
    assert len(rsps.calls) == 2
    assert not isinstance(info.value, NotSentError) and info.value.outcome is None


def test_a_404_naming_the_store_is_the_owners(
    no_retry_client: PayChargeClient, rsps: responses.RequestsMock
) -> None:
    body = {
        "status": "error",
        "code": "NOT_FOUND",
        "errors": [{"field": "storeId", "reason": "NOT_FOUND"}],
    }
    rsps.get(URL, json=body, status=404)
    with pytest.raises(StoreNotFoundError) as info:
        no_retry_client.charges.retrieve(STORE, CHARGE)
    assert (info.value.owner_problem, info.value.outcome) == ("store", "not_sent")
