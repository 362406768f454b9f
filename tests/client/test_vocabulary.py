"""The gateway's vocabulary: one definition, and the mirror's choices agree with it."""

from __future__ import annotations

import pytest

from django_paycharge.client import vocabulary as v
from django_paycharge.models import (
    Charge,
    ChargeMode,
    ChargeStatus,
    OperationStatus,
    PaymentType,
    RefundReason,
)


def test_the_models_choices_are_the_gateways_values():
    assert tuple(ChargeStatus.values) == v.CHARGE_STATUSES
    assert tuple(ChargeMode.values) == v.MODES
    assert tuple(PaymentType.values) == v.PAYMENT_TYPES
    assert tuple(OperationStatus.values) == v.REFUND_STATUSES
    assert tuple(RefundReason.values) == v.REPORTED_REFUND_REASONS


def test_every_mirrored_charge_field_is_a_column():
    columns = {f.name for f in Charge._meta.concrete_fields}
    assert set(v.CHARGE_FIELDS) <= columns


@pytest.mark.parametrize(
    ("status", "rank"),
    [
        (None, 0),
        ("", 0),
        ("pending", 0),
        ("awaiting", 1),
        ("authorized", 2),
        ("something_new", v.UNKNOWN_STATUS_RANK),
        *((status, v.FINAL_RANK) for status in sorted(v.FINAL_STATUSES - {"canceled"})),
        ("canceled", v.CANCELED_RANK),  # it may follow "successful": a cancel voids a payment
    ],
)
def test_a_status_never_ranks_below_the_one_it_may_follow(status, rank):
    assert v.status_rank(status) == rank


def test_every_final_status_outranks_every_other():
    waiting = [s for s in v.CHARGE_STATUSES if s not in v.FINAL_STATUSES]
    assert max(map(v.status_rank, waiting)) < v.FINAL_RANK
    assert min(map(v.status_rank, v.FINAL_STATUSES)) == v.FINAL_RANK
    assert v.status_rank("canceled") > v.status_rank("successful")
    assert v.UNPAID_FINAL_STATUSES < v.FINAL_STATUSES


def test_refund_and_cancel_statuses_rank_pending_unknown_final():
    ranks = [v.operation_rank(s) for s in ("pending", "something_new", "successful")]
    assert ranks == [0, 1, 2]
    assert v.REQUIRED_TRIGGER in v.TRIGGERS
    assert {v.REFUND_EVENT, v.CANCEL_EVENT} <= set(v.TRIGGERS)
