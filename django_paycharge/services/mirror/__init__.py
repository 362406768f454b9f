"""The mirror's one writer: what the gateway said, stored (charges, refunds, cancels), or set aside.

Every flow that read something from the gateway stores it through this package:
the guarded upsert (never a status moving backwards) and its statements per
database, one-statement inserts, refunds and cancels, the quarantine. Other
flows import only the names below.
"""

from __future__ import annotations

from .inserts import as_stored, bound_cursor, insert_once, insert_statement
from .lifecycle_store import recount_refunds_total, store_cancel, store_refund
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
from .reads import refresh_charge, store_of, store_remote_charge, wait_for_charge
from .rows import EncodedJSON, charge_row
from .upsert import (
    UpsertResult,
    WriteCounts,
    prepare_page,
    statements,
    upsert_charges,
    upsert_prepared,
)

__all__ = [
    "EncodedJSON",
    "Report",
    "UpsertResult",
    "WriteCounts",
    "as_stored",
    "bound_cursor",
    "charge_row",
    "dismiss_quarantined",
    "insert_once",
    "insert_statement",
    "mark_reported",
    "prepare_page",
    "quarantine",
    "readable_alone",
    "recount_refunds_total",
    "refresh_charge",
    "report",
    "retry_quarantined",
    "statements",
    "store_cancel",
    "store_of",
    "store_quarantined_by_id",
    "store_refund",
    "store_remote_charge",
    "upsert_charges",
    "upsert_prepared",
    "wait_for_charge",
]
