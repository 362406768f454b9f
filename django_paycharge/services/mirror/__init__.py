"""The mirror's one writer: what the gateway said, stored (charges, refunds, cancels,
subscriptions and their payments), or set aside.

Every flow that read something from the gateway stores it through this package:
the guarded upsert (never a status moving backwards) and its statements per
database, a checkout's new charge in one insert, one-statement inserts, refunds
and cancels, the quarantine; and what is announced when a charge is written
(:mod:`.announced`, the one place that says it). Other
flows import only the names below.
"""

from __future__ import annotations

from .inserts import Link, as_stored, bound_cursor, insert_once, new_id
from .lifecycle_store import recount_refunds_total, store_cancel, store_refund
from .new_charge import NEW_CHARGE_ID, insert_new_charge
from .quarantined import (
    Report,
    dismiss_quarantined,
    mark_reported,
    quarantine,
    readable_alone,
    report,
    retry_quarantined,
    store_quarantined_by_id,
)
from .reads import WAIT_BACKOFF, refresh_charge, store_of, store_remote_charge, wait_for_charge
from .subscriptions import (
    refresh_latest_charge,
    refresh_subscription,
    store_scheduled_payment,
    store_scheduled_payments,
    store_subscription,
    subscription_place,
)
from .tokens import refresh_saved_card, saved_card_place, store_saved_card
from .upsert import (
    UpsertResult,
    WriteCounts,
    prepare_page,
    statements,
    upsert_charges,
    upsert_prepared,
)

__all__ = [
    "NEW_CHARGE_ID",
    "WAIT_BACKOFF",
    "Link",
    "Report",
    "UpsertResult",
    "WriteCounts",
    "as_stored",
    "bound_cursor",
    "dismiss_quarantined",
    "insert_new_charge",
    "insert_once",
    "mark_reported",
    "new_id",
    "prepare_page",
    "quarantine",
    "readable_alone",
    "recount_refunds_total",
    "refresh_charge",
    "refresh_latest_charge",
    "refresh_saved_card",
    "refresh_subscription",
    "report",
    "retry_quarantined",
    "saved_card_place",
    "statements",
    "store_cancel",
    "store_of",
    "store_quarantined_by_id",
    "store_refund",
    "store_remote_charge",
    "store_saved_card",
    "store_scheduled_payment",
    "store_scheduled_payments",
    "store_subscription",
    "subscription_place",
    "upsert_charges",
    "upsert_prepared",
    "wait_for_charge",
]
