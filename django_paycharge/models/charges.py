from __future__ import annotations

import uuid
from typing import Any

from django.db import models
from django.utils.translation import gettext_lazy as _

from .payload import PayloadEncoder


# Money: integers in minor units, plus the gateway's formatted amounts in major
# units. Three decimals cover every ISO-4217 currency (BHD, KWD, ...); one more
# leaves room for a gateway that sends extra precision.
def _formatted(verbose_name: Any) -> models.DecimalField[Any, Any]:
    return models.DecimalField(verbose_name, max_digits=24, decimal_places=4, null=True, blank=True)


class ChargeStatus(models.TextChoices):
    PENDING = "pending", _("Pending")
    AWAITING = "awaiting", _("Awaiting payment")
    AUTHORIZED = "authorized", _("Authorized")
    SUCCESSFUL = "successful", _("Successful")
    FAILED = "failed", _("Failed")
    ERROR = "error", _("Error")
    CANCELED = "canceled", _("Canceled")


#: Each status's label (lazy: translated when shown).
_STATUS_LABELS: dict[str | None, Any] = dict(ChargeStatus.choices)


class ChargeMode(models.TextChoices):
    LIVE = "live", _("Live")
    TEST = "test", _("Test")


class PaymentType(models.TextChoices):
    CARD = "card", _("Card")
    KONBINI = "konbini", _("Convenience store")
    BANK_TRANSFER = "bank_transfer", _("Bank transfer")
    ONLINE = "online", _("Online wallet")


class TransactionTokenType(models.TextChoices):
    """Kinds of transaction token (labels for display: the column keeps any value)."""

    ONE_TIME = "one_time", _("One-time")
    SUBSCRIPTION = "subscription", _("Subscription")
    RECURRING = "recurring", _("Recurring")


class ConvenienceStore(models.TextChoices):
    """The convenience stores of the gateway's konbini tokens (``data.convenience_store``)."""

    SEVEN_ELEVEN = "seven_eleven", _("7-Eleven")
    FAMILY_MART = "family_mart", _("FamilyMart")
    LAWSON = "lawson", _("LAWSON")
    MINI_STOP = "mini_stop", _("MINISTOP")
    SEICO_MART = "seico_mart", _("Seicomart")
    PAY_EASY = "pay_easy", _("Pay-easy")
    CIRCLE_K = "circle_k", _("Circle K")
    SUNKUS = "sunkus", _("Sunkus")
    DAILY_YAMAZAKI = "daily_yamazaki", _("Daily Yamazaki")
    YAMAZAKI_DAILY_STORE = "yamazaki_daily_store", _("Yamazaki Daily Store")


class Charge(models.Model):
    """A charge as the gateway last told us. Every field of the spec, plus bookkeeping.

    ``status``, ``mode`` and ``payment_type`` use choices for display, but keep
    any value the gateway sends. Every column the gateway may omit is nullable:
    NULL means unknown (missing, null, or a value that does not fit the
    column), and ``raw`` holds the payload exactly as received. The gateway is
    the source of truth: change a charge through :mod:`django_paycharge.services`,
    never by saving it here.
    """

    gateway_id = models.UUIDField(_("charge id"), unique=True)
    account = models.CharField(_("account"), max_length=64, default="default")
    store_id = models.UUIDField(_("store id"), null=True, blank=True)
    transaction_token_id = models.UUIDField(
        _("transaction token id"), null=True, blank=True, db_index=True
    )
    transaction_token_type = models.CharField(
        _("transaction token type"), max_length=32, null=True, blank=True
    )
    payment_type = models.CharField(
        _("payment type"), max_length=32, blank=True, choices=PaymentType.choices
    )
    subscription_id = models.UUIDField(_("subscription id"), null=True, blank=True)
    merchant_transaction_id = models.CharField(
        _("merchant transaction id"), max_length=255, null=True, blank=True
    )
    requested_amount = models.BigIntegerField(_("requested amount"), null=True, blank=True)
    requested_currency = models.CharField(
        _("requested currency"), max_length=3, null=True, blank=True
    )
    requested_amount_formatted = _formatted(_("requested amount (formatted)"))
    charged_amount = models.BigIntegerField(_("charged amount"), null=True, blank=True)
    charged_currency = models.CharField(_("charged currency"), max_length=3, null=True, blank=True)
    charged_amount_formatted = _formatted(_("charged amount (formatted)"))
    fee_amount = models.BigIntegerField(_("fee amount"), null=True, blank=True)
    fee_currency = models.CharField(_("fee currency"), max_length=3, null=True, blank=True)
    fee_amount_formatted = _formatted(_("fee amount (formatted)"))
    only_direct_currency = models.BooleanField(
        _("only direct currency"), null=True, blank=True, default=None
    )
    capture_at = models.DateTimeField(_("capture at"), null=True, blank=True)
    #: A convenience-store or bank-transfer payment's deadline, as the gateway's expiry said
    #: when the customer's instructions were last read (``services.payment_instructions``):
    #: the date their page shows, kept for the staff's lists. None: not read (yet).
    payment_deadline = models.DateTimeField(_("payment deadline"), null=True, blank=True)
    descriptor = models.CharField(_("descriptor"), max_length=255, null=True, blank=True)
    descriptor_phone_number = models.CharField(
        _("descriptor phone number"), max_length=64, null=True, blank=True
    )
    status = models.CharField(
        _("status"), max_length=32, null=True, blank=True, choices=ChargeStatus.choices
    )
    status_rank = models.PositiveSmallIntegerField(_("status rank"), default=0, editable=False)
    error = models.JSONField(_("error"), null=True, blank=True, encoder=PayloadEncoder)
    metadata = models.JSONField(
        _("metadata"), null=True, blank=True, default=dict, encoder=PayloadEncoder
    )
    mode = models.CharField(
        _("mode"), max_length=16, null=True, blank=True, choices=ChargeMode.choices
    )
    created_on = models.DateTimeField(_("created on"), null=True, blank=True)
    redirect = models.JSONField(_("redirect"), null=True, blank=True, encoder=PayloadEncoder)
    merchant_name = models.CharField(_("merchant name"), max_length=255, null=True, blank=True)
    store_name = models.CharField(_("store name"), max_length=255, null=True, blank=True)
    three_ds = models.JSONField(_("3-D Secure"), null=True, blank=True, encoder=PayloadEncoder)
    raw = models.JSONField(_("raw payload"), default=dict, encoder=PayloadEncoder)
    # A digest of ``raw``: a sync compares it to skip rewriting unchanged rows.
    raw_digest = models.CharField(max_length=64, blank=True, editable=False)
    # The sum of the successful refunds, kept by the one writer of refunds
    # (``services.mirror.store_refund``): lists filter and show it without reading refunds.
    # The database's default too, since the sync inserts charges without naming it.
    refunds_total = models.BigIntegerField(
        _("refunded (successful refunds)"), default=0, db_default=0, editable=False
    )
    synced_at = models.DateTimeField(_("synced at"))
    first_seen_at = models.DateTimeField(_("first seen at"))

    class Meta:
        verbose_name = _("charge")
        verbose_name_plural = _("charges")
        ordering = ["-created_on", "-id"]
        indexes = [
            models.Index(fields=["-created_on", "-id"], name="paycharge_charge_created"),
            models.Index(fields=["status", "-created_on"], name="paycharge_charge_status"),
            models.Index(fields=["store_id", "-created_on"], name="paycharge_charge_store"),
            models.Index(fields=["mode", "-created_on"], name="paycharge_charge_mode"),
            models.Index(fields=["account", "-created_on"], name="paycharge_charge_account"),
            models.Index(
                fields=["requested_currency", "-created_on"], name="paycharge_charge_currency"
            ),
            models.Index(fields=["merchant_transaction_id"], name="paycharge_charge_mtid"),
            # Ordered like the others: a filtered list reads its newest rows, never sorts.
            models.Index(fields=["payment_type", "-created_on"], name="paycharge_charge_ptype"),
            # The amount range filter: a range on the index, then a sort of what it found
            # (a scan in the page's order would read the whole table for a narrow range).
            models.Index(fields=["requested_amount"], name="paycharge_charge_amount"),
            # One store's amounts: without statistics SQLite trusts an equality over a range,
            # and would read the whole store's charges through its (store_id, -created_on).
            models.Index(
                fields=["store_id", "requested_amount"], name="paycharge_charge_store_amount"
            ),
            # The refund filters: the few charges with a successful refund, newest first,
            # with what the filters compare, so that the capped count reads the index alone.
            models.Index(
                fields=["-created_on", "-id", "charged_amount", "refunds_total"],
                condition=models.Q(refunds_total__gt=0),
                name="paycharge_charge_refunded",
            ),
            # Mode, status and currency together (the takings of one currency): SQLite, without
            # statistics, would count them through the currency index, a row read per charge.
            models.Index(
                fields=["mode", "status", "requested_currency", "-created_on"],
                name="paycharge_charge_mode_currency",
            ),
            # The dashboard: takings and failures by mode, status and day; open payments.
            models.Index(
                fields=["mode", "status", "payment_type", "created_on"],
                name="paycharge_charge_dashboard",
            ),
        ]
        permissions = [
            (
                "call_gateway",
                _("Can call the payment gateway (refresh, sync, fetch issuer tokens)"),
            ),
            ("view_bank_account_number", _("Can view full bank account numbers")),
        ]

    def __str__(self) -> str:
        # The status in the reader's language (page titles, breadcrumbs), the code when unknown.
        return f"{self.gateway_id} ({self.get_status_display() or self.status or _('unknown')})"

    def get_status_display(self) -> str | None:  # type: ignore[no-redef]
        """The status's label, or the code the gateway sent when it is not one of ours.

        Django's own builds the whole choices mapping (every label translated) on
        each call; lists call this once or twice a row.
        """
        label = _STATUS_LABELS.get(self.status)
        return self.status if label is None else str(label)

    @property
    def is_test(self) -> bool:
        return self.mode == ChargeMode.TEST

    @property
    def refunded_amount(self) -> int:
        """The sum of the charge's successful refunds, in minor units: its stored
        ``refunds_total`` (kept by ``services.mirror.store_refund``, the one writer of
        refunds), read from a charge of ``with_refunded_amounts`` without a query,
        otherwise from the database (one query, so a charge loaded before a refund
        still says it)."""
        annotated = getattr(self, REFUNDED_ANNOTATION, None)
        if annotated is not None:
            return int(annotated)
        stored = Charge.objects.filter(pk=self.pk).values_list("refunds_total", flat=True)
        return int(stored.first() or 0)


#: The annotation ``with_refunded_amounts`` gives each charge (its successful refunds' sum).
REFUNDED_ANNOTATION = "successful_refunds_total"


class RequestState(models.TextChoices):
    """Where a request that moves money stands (charge requests and action requests alike).

    ``pending`` (committed, never sent), ``unknown`` (sent, no final answer yet:
    the gateway may or may not have done it), ``succeeded``, ``failed`` (the
    gateway refused it: final), ``not_sent`` (nothing was processed: it never
    left, or the gateway refused the shop's own settings; final, and not the
    customer's doing; asked again with its key, it is sent again) and
    ``abandoned`` (never sent again; the gateway may still have done it, see
    ``sent_at``, until the request is looked for).
    """

    PENDING = "pending", _("Pending (not sent yet)")
    UNKNOWN = "unknown", _("Outcome unknown (sent, no answer yet)")
    SUCCEEDED = "succeeded", _("Succeeded")
    FAILED = "failed", _("Failed (refused by the gateway)")
    NOT_SENT = "not_sent", _("Not sent (unreachable, or the shop's settings were refused)")
    ABANDONED = "abandoned", _("Abandoned (never sent again)")


#: States in which a request may still be sent (with its own key).
OPEN_REQUEST_STATES = (RequestState.PENDING, RequestState.UNKNOWN)


class MoneyRequest(models.Model):
    """What every request of the one exactly-once machine keeps (``services.lifecycle``):
    its account, its body, where it stands, how often it was sent and what went wrong.
    States: :class:`RequestState`."""

    State = RequestState

    #: States that recovery may still send (with the request's own key).
    OPEN_STATES = OPEN_REQUEST_STATES

    account = models.CharField(_("account"), max_length=64, default="default")
    params = models.JSONField(_("request parameters"), encoder=PayloadEncoder)
    state = models.CharField(
        _("state"), max_length=16, choices=State.choices, default=State.PENDING
    )
    attempts = models.PositiveIntegerField(_("attempts"), default=0)
    #: When it was last sent: the gateway may finish a request some time after that.
    sent_at = models.DateTimeField(_("last sent at"), null=True, blank=True)
    error = models.JSONField(_("error"), null=True, blank=True, encoder=PayloadEncoder)
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)

    class Meta:
        abstract = True


class KeyedRequest(MoneyRequest):
    """A request on something that exists already (a charge's refund, a subscription's
    suspension): the caller's key kept as sent, and who asked."""

    # Text, not UUID: a caller's own key (an API client's Idempotency-Key header) is kept as sent.
    idempotency_key = models.CharField(_("idempotency key"), max_length=255, unique=True)
    requested_by = models.CharField(_("requested by"), max_length=150, blank=True)

    class Meta:
        abstract = True


class ChargeRequest(MoneyRequest):
    """A charge being created: committed with its idempotency key before the POST.

    If the process dies or the network drops after the gateway took the charge,
    resending the same body with the same key (``paycharge_recover``) ends with
    one remote charge and one local row. States: :class:`RequestState`.
    """

    #: The key sent to the gateway (always a UUID: the caller's own key stays local).
    idempotency_key = models.UUIDField(_("idempotency key"), unique=True, default=uuid.uuid4)
    #: The caller's key (e.g. ``order-12-attempt-1``): one request per key, ever.
    caller_key = models.CharField(
        _("caller's key"), max_length=255, unique=True, null=True, blank=True
    )
    charge = models.OneToOneField(
        Charge, null=True, blank=True, on_delete=models.SET_NULL, related_name="request"
    )
    #: The gateway's id of the charge when it answered but the mirror could not store it yet.
    charge_gateway_id = models.UUIDField(_("gateway charge id"), null=True, blank=True)
    #: The gateway's id of the answer that created the charge (errors keep theirs in ``error``).
    gateway_request_id = models.CharField(_("gateway request id"), max_length=100, blank=True)

    class Meta:
        verbose_name = _("charge request")
        verbose_name_plural = _("charge requests")
        indexes = [
            models.Index(fields=["state", "created_at"], name="paycharge_request_state"),
            # The admin's list, newest first: read in order, never sorted whole.
            models.Index(fields=["-created_at", "-id"], name="paycharge_request_created"),
        ]

    def __str__(self) -> str:
        return f"{self.caller_key or self.idempotency_key} ({self.get_state_display()})"

    @property
    def charged_nothing(self) -> bool:
        """Known to have charged nothing: refused, not sent, or abandoned and settled as
        "not charged".

        A new payment attempt (with a new key) is safe only then, or once the
        charge it made has failed. See ``services.check_charge_request``.
        """
        if self.state in (self.State.FAILED, self.State.NOT_SENT):
            return True
        error = self.error if isinstance(self.error, dict) else {}
        return self.state == self.State.ABANDONED and error.get("outcome") == "not_charged"


class IssuerToken(models.Model):
    """The latest issuer token fetched for a charge (online wallet or bank transfer)."""

    charge = models.OneToOneField(Charge, on_delete=models.CASCADE, related_name="issuer_token")
    payment_type = models.CharField(_("payment type"), max_length=32, null=True, blank=True)
    call_method = models.CharField(_("call method"), max_length=32, blank=True)
    issuer_token = models.TextField(_("issuer token"), blank=True)
    payload = models.JSONField(_("payload"), null=True, blank=True, encoder=PayloadEncoder)
    account_id = models.CharField(_("account id"), max_length=255, blank=True)
    branch_code = models.CharField(_("branch code"), max_length=64, blank=True)
    branch_name = models.CharField(_("branch name"), max_length=255, blank=True)
    account_holder_name = models.CharField(_("account holder name"), max_length=255, blank=True)
    account_number = models.CharField(_("account number"), max_length=64, blank=True)
    raw = models.JSONField(_("raw payload"), default=dict, encoder=PayloadEncoder)
    fetched_at = models.DateTimeField(_("fetched at"))

    class Meta:
        verbose_name = _("issuer token")
        verbose_name_plural = _("issuer tokens")

    def __str__(self) -> str:
        return f"{self.payment_type} {self.call_method or ''}".strip()

    def __repr__(self) -> str:
        return (
            f"<IssuerToken charge={self.charge_id} payment_type={self.payment_type!r} "
            f"call_method={self.call_method!r} account_number={self.masked_account_number!r}>"
        )

    @property
    def masked_account_number(self) -> str:
        return mask_account_number(self.account_number)


def mask_account_number(number: Any) -> str:
    """``"1234567"`` -> ``"•••4567"``: enough to recognise, not enough to use."""
    text = str(number or "")
    if len(text) <= 4:
        return "•" * len(text)
    return "•" * (len(text) - 4) + text[-4:]
