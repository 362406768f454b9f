"""The retry matrix: what is retried, how often, how long it waits, with which key."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import pytest
import requests
import responses

from django_paycharge.client import PayChargeClient
from django_paycharge.exceptions import (
    APIError,
    BadRequestError,
    ConflictError,
    NetworkError,
    RateLimitError,
    ServerError,
)

from .conftest import BASE, CHARGE, STORE, TOKEN, SleepRecorder, charge_json, make_client

GET_URL = f"{BASE}/stores/{STORE}/charges/{CHARGE}"
POST_URL = f"{BASE}/charges"


def _error(code: str) -> dict[str, object]:
    return {"status": "error", "code": code, "errors": []}


def _create(client: PayChargeClient, **kwargs: Any) -> None:
    client.charges.create(transaction_token_id=TOKEN, amount=1000, currency="JPY", **kwargs)


@pytest.mark.parametrize("status", [429, 500, 502, 503, 504])
def test_get_retried_on_transient_status(
    client: PayChargeClient, rsps: responses.RequestsMock, sleeps: SleepRecorder, status: int
) -> None:
    rsps.get(GET_URL, status=status, json=_error("X"))
    rsps.get(GET_URL, json=charge_json())
    assert client.charges.retrieve(STORE, CHARGE).id.hex == CHARGE.replace("-", "")
    assert len(rsps.calls) == 2
    assert len(sleeps.calls) == 1


@pytest.mark.parametrize(
    "exc",
    [requests.ConnectionError("reset"), requests.ReadTimeout("slow"), requests.ConnectTimeout()],
)
def test_get_retried_on_network_errors(
    client: PayChargeClient, rsps: responses.RequestsMock, exc: Exception
) -> None:
    rsps.get(GET_URL, body=exc)
    rsps.get(GET_URL, json=charge_json())
    client.charges.retrieve(STORE, CHARGE)
    assert len(rsps.calls) == 2


@pytest.mark.parametrize(
    ("status", "code", "cls"),
    [
        (400, "VALIDATION_ERROR", BadRequestError),
        (401, "NOT_AUTHENTICATED", APIError),
        (403, "FORBIDDEN", APIError),
        (404, "RESOURCE_NOT_FOUND", APIError),
        (409, "IDEMPOTENCY_KEY_CONFLICT", ConflictError),
        (409, "NON_UNIQUE_MERCHANT_TRANSACTION_ID", ConflictError),
        (501, "NOT_IMPLEMENTED", ServerError),
    ],
)
def test_other_errors_not_retried(
    client: PayChargeClient,
    rsps: responses.RequestsMock,
    sleeps: SleepRecorder,
    status: int,
    code: str,
    cls: type[APIError],
) -> None:
    rsps.post(POST_URL, status=status, json=_error(code))
    with pytest.raises(cls):
        _create(client)
    assert len(rsps.calls) == 1
    assert sleeps.calls == []


def test_gives_up_after_max_retries_with_last_error(
    rsps: responses.RequestsMock, sleeps: SleepRecorder
) -> None:
    client = make_client(sleeps, max_retries=2)
    rsps.get(GET_URL, status=500, json=_error("INTERNAL_ERROR"))
    rsps.get(GET_URL, body=requests.ConnectionError("down"))
    rsps.get(GET_URL, status=503, json=_error("SERVICE_UNAVAILABLE"))
    with pytest.raises(ServerError) as info:
        client.charges.retrieve(STORE, CHARGE)
    assert info.value.http_status == 503
    assert info.value.code == "SERVICE_UNAVAILABLE"
    assert len(rsps.calls) == 3
    assert len(sleeps.calls) == 2


def test_network_error_last(rsps: responses.RequestsMock, sleeps: SleepRecorder) -> None:
    client = make_client(sleeps, max_retries=1)
    rsps.get(GET_URL, status=502)
    rsps.get(GET_URL, body=requests.ConnectionError("down"))
    with pytest.raises(NetworkError):
        client.charges.retrieve(STORE, CHARGE)
    assert len(rsps.calls) == 2


def test_zero_retries(rsps: responses.RequestsMock, sleeps: SleepRecorder) -> None:
    client = make_client(sleeps, max_retries=0)
    rsps.get(GET_URL, status=503)
    with pytest.raises(ServerError):
        client.charges.retrieve(STORE, CHARGE)
    assert len(rsps.calls) == 1
    assert sleeps.calls == []


def test_post_retried_with_the_same_key(
    client: PayChargeClient, rsps: responses.RequestsMock
) -> None:
    rsps.post(POST_URL, body=requests.ReadTimeout("slow"))
    rsps.post(POST_URL, status=503, json=_error("SERVICE_UNAVAILABLE"))
    rsps.post(POST_URL, status=409, json=_error("IDEMPOTENCY_KEY_IN_PROGRESS"))
    rsps.post(POST_URL, json=charge_json(), status=201)
    _create(client)
    keys = [c.request.headers["Idempotency-Key"] for c in rsps.calls]
    assert len(keys) == 4
    assert len(set(keys)) == 1
    bodies = {c.request.body for c in rsps.calls}
    assert len(bodies) == 1


def test_callers_key_kept_on_retries(client: PayChargeClient, rsps: responses.RequestsMock) -> None:
    rsps.post(POST_URL, status=500)
    rsps.post(POST_URL, json=charge_json(), status=201)
    _create(client, idempotency_key="my-key")
    assert [c.request.headers["Idempotency-Key"] for c in rsps.calls] == ["my-key", "my-key"]


def test_in_progress_409_retried_until_limit(
    rsps: responses.RequestsMock, sleeps: SleepRecorder
) -> None:
    client = make_client(sleeps, max_retries=3)
    rsps.post(POST_URL, status=409, json=_error("IDEMPOTENCY_KEY_IN_PROGRESS"))
    with pytest.raises(ConflictError) as info:
        _create(client)
    assert info.value.code == "IDEMPOTENCY_KEY_IN_PROGRESS"
    assert len(rsps.calls) == 4


def test_backoff_is_exponential_and_capped_at_full_jitter(
    rsps: responses.RequestsMock, sleeps: SleepRecorder
) -> None:
    client = make_client(sleeps, jitter=1.0, max_retries=6, backoff_base=0.5, backoff_max=4.0)
    rsps.get(GET_URL, status=503)
    with pytest.raises(ServerError):
        client.charges.retrieve(STORE, CHARGE)
    assert sleeps.calls == [0.5, 1.0, 2.0, 4.0, 4.0, 4.0]


@pytest.mark.parametrize("jitter", [0.0, 0.25, 0.999])
def test_jitter_scales_the_delay(
    rsps: responses.RequestsMock, sleeps: SleepRecorder, jitter: float
) -> None:
    client = make_client(sleeps, jitter=jitter, max_retries=3, backoff_base=1.0, backoff_max=30.0)
    rsps.get(GET_URL, status=500)
    with pytest.raises(ServerError):
        client.charges.retrieve(STORE, CHARGE)
    assert sleeps.calls == pytest.approx([jitter * 1.0, jitter * 2.0, jitter * 4.0])


def test_real_random_stays_within_bounds(rsps: responses.RequestsMock) -> None:
    sleeps = SleepRecorder()
    client = PayChargeClient(
        base_url=BASE, secret="s", jwt="j", sleep=sleeps, max_retries=5, backoff_max=3.0
    )
    rsps.get(GET_URL, status=500)
    with pytest.raises(ServerError):
        client.charges.retrieve(STORE, CHARGE)
    caps = [0.5, 1.0, 2.0, 3.0, 3.0]
    assert all(0.0 <= s <= cap for s, cap in zip(sleeps.calls, caps, strict=True))


def test_retry_after_seconds_honoured(
    client: PayChargeClient, rsps: responses.RequestsMock, sleeps: SleepRecorder
) -> None:
    rsps.get(GET_URL, status=429, json=_error("RATE_LIMITED"), headers={"Retry-After": "7"})
    rsps.get(GET_URL, json=charge_json())
    client.charges.retrieve(STORE, CHARGE)
    assert sleeps.calls == [7.0]


def test_retry_after_http_date_honoured(
    client: PayChargeClient, rsps: responses.RequestsMock, sleeps: SleepRecorder
) -> None:
    when = format_datetime(datetime.now(UTC) + timedelta(seconds=10), usegmt=True)
    rsps.get(GET_URL, status=503, headers={"Retry-After": when})
    rsps.get(GET_URL, json=charge_json())
    client.charges.retrieve(STORE, CHARGE)
    assert len(sleeps.calls) == 1
    assert 8.0 <= sleeps.calls[0] <= 10.0


def test_retry_after_in_the_past_or_garbage(
    client: PayChargeClient, rsps: responses.RequestsMock, sleeps: SleepRecorder
) -> None:
    rsps.get(GET_URL, status=503, headers={"Retry-After": "Mon, 01 Jan 2001 00:00:00 GMT"})
    rsps.get(GET_URL, status=503, headers={"Retry-After": "soon"})
    rsps.get(GET_URL, json=charge_json())
    client.charges.retrieve(STORE, CHARGE)
    assert sleeps.calls == [0.0, 1.0]  # garbage falls back to backoff (jitter pinned to 1)


def test_retry_after_beyond_cap_gives_up(
    rsps: responses.RequestsMock, sleeps: SleepRecorder
) -> None:
    client = make_client(sleeps, max_retry_after=30.0)
    rsps.get(GET_URL, status=429, json=_error("RATE_LIMITED"), headers={"Retry-After": "31"})
    with pytest.raises(RateLimitError) as info:
        client.charges.retrieve(STORE, CHARGE)
    assert info.value.code == "RATE_LIMITED"
    assert len(rsps.calls) == 1
    assert sleeps.calls == []


def test_retry_after_at_cap_is_waited(rsps: responses.RequestsMock, sleeps: SleepRecorder) -> None:
    client = make_client(sleeps, max_retry_after=30.0)
    rsps.get(GET_URL, status=429, headers={"Retry-After": "30"})
    rsps.get(GET_URL, json=charge_json())
    client.charges.retrieve(STORE, CHARGE)
    assert sleeps.calls == [30.0]


def test_webhook_create_not_retried_on_5xx_but_on_429(
    client: PayChargeClient, rsps: responses.RequestsMock
) -> None:
    url = f"{BASE}/stores/{STORE}/webhooks"
    rsps.post(url, status=503)
    with pytest.raises(ServerError):
        client.webhooks.create(
            STORE, url="https://shop.example/hook", triggers=["x"], auth_token="t"
        )
    assert len(rsps.calls) == 1
    rsps.replace(responses.POST, url, status=429)
    with pytest.raises(RateLimitError):
        client.webhooks.create(
            STORE, url="https://shop.example/hook", triggers=["x"], auth_token="t"
        )
    assert len(rsps.calls) == 1 + 4


def test_webhook_create_not_retried_on_read_timeout(
    client: PayChargeClient, rsps: responses.RequestsMock
) -> None:
    rsps.post(f"{BASE}/stores/{STORE}/webhooks", body=requests.ReadTimeout("slow"))
    with pytest.raises(NetworkError):
        client.webhooks.create(
            STORE, url="https://shop.example/hook", triggers=["x"], auth_token="t"
        )
    assert len(rsps.calls) == 1


def test_a_request_the_connected_system_cannot_serve_is_not_retried(
    rsps: responses.RequestsMock, sleeps: SleepRecorder
) -> None:
    """504 NO_GATEWAY_AVAILABLE_TO_PROCESS_THE_REQUEST: "not supported", not a time-out."""
    from django_paycharge.exceptions import UnsupportedByGatewayError

    client = make_client(sleeps, max_retries=3)
    rsps.get(GET_URL, status=504, json=_error("NO_GATEWAY_AVAILABLE_TO_PROCESS_THE_REQUEST"))
    with pytest.raises(UnsupportedByGatewayError):
        client.charges.retrieve(STORE, CHARGE)
    assert len(rsps.calls) == 1
    assert sleeps.calls == []
