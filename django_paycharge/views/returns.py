"""Where the gateway sends the customer back after paying (``redirect.endpoint``)."""

from __future__ import annotations

import logging
import uuid

from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.module_loading import import_string

from .. import conf, outbox, signals
from ..exceptions import NotFoundError, PayChargeError
from ..models import Charge
from ..services import refresh_returned_charge
from .payment import charge_not_found

logger = logging.getLogger("django_paycharge.returns")


def charge_return(request: HttpRequest) -> HttpResponse:
    """Refresh the charge named by ``serviceChargeId`` and send the customer on.

    Nothing else in the query is trusted: the charge's state comes from the
    gateway, and the next URL from settings or the shop's hook.
    """
    return _return(request, three_ds=False)


def three_ds_return(request: HttpRequest) -> HttpResponse:
    """Where the gateway sends the customer after 3-D Secure (``three_ds.redirect_endpoint``).

    The same query as the payment return (rule 4), handled the same way: the
    charge is re-read from the gateway, then the customer goes to the shop's
    next page. ``charge_returned`` is sent with ``three_ds=True``.
    """
    return _return(request, three_ds=True)


def _return(request: HttpRequest, *, three_ds: bool) -> HttpResponse:
    charge = _local_charge(request)
    if charge is None:
        return charge_not_found(request)
    try:
        # A subscription's first payment brings its subscription's new status too.
        charge = refresh_returned_charge(charge.gateway_id, charge.store_id, account=charge.account)
    except NotFoundError:
        return charge_not_found(request)
    except PayChargeError as exc:
        logger.warning("Return for charge %s: gateway unavailable (%s)", charge.gateway_id, exc)
        return render(request, "django_paycharge/return_retry.html", {"charge": charge}, status=503)
    outbox.send(
        signals.charge_returned, sender=Charge, charge=charge, request=request, three_ds=three_ds
    )
    return HttpResponseRedirect(next_url(request, charge))


def _local_charge(request: HttpRequest) -> Charge | None:
    try:
        charge_id = uuid.UUID(request.GET.get("serviceChargeId", ""))
    except ValueError:
        return None
    # Only charges this shop created or mirrored: a return can't import foreign ones.
    charge = Charge.objects.filter(gateway_id=charge_id).first()
    if charge is None:
        return None
    token = request.GET.get("serviceTokenId")
    if token and str(charge.transaction_token_id) != token.strip().lower():
        return None
    return charge


def next_url(request: HttpRequest, charge: Charge) -> str:
    """The shop's next page for this charge: the hook's answer, else ``RETURN_URL``.

    Whatever it is must be on an allowed host; otherwise ``/`` is used.
    """
    hook = conf.get_setting("RETURN_URL_HOOK")
    url = None
    if hook:
        func = import_string(hook) if isinstance(hook, str) else hook
        url = func(request, charge)
    if not url:
        url = str(conf.get_setting("RETURN_URL")).format(charge_id=charge.gateway_id)
    safe = url_has_allowed_host_and_scheme(
        url, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    )
    return url if safe else "/"
