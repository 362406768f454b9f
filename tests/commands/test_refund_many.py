"""paycharge_refund_many: a canceled event's charges refunded, with progress and a summary."""

from __future__ import annotations

import io
import uuid
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from django_paycharge import services
from django_paycharge.management.commands.paycharge_refund_many import Command
from django_paycharge.models import Charge, ChargeActionRequest
from django_paycharge.testing import CARD_DECLINED

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def slept(monkeypatch) -> list[float]:
    """The command's pauses, on a clock that moves only when slept on."""
    now = [0.0]
    pauses: list[float] = []

    def sleep(seconds: float) -> None:
        pauses.append(seconds)
        now[0] += seconds

    monkeypatch.setattr(Command, "clock", staticmethod(lambda: now[0]))
    monkeypatch.setattr(Command, "sleep", staticmethod(sleep))
    return pauses


def run(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("paycharge_refund_many", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def paid(fake_gateway, event: str = "E42", **fields: Any) -> Charge:
    token = fake_gateway.create_transaction_token("card", **fields)["id"]
    charge = services.create_charge(
        transaction_token_id=token, amount=1000, currency="JPY", metadata={"event": event}
    )
    return services.refresh_charge(charge.gateway_id)


def test_the_event_is_refunded_with_progress_and_a_summary(fake_gateway, slept):
    charges = [paid(fake_gateway) for _ in range(4)]
    declined = paid(fake_gateway, card_number=CARD_DECLINED)
    paid(fake_gateway, event="E43")
    out, err = run(
        "--batch", "E42", "--metadata", "event=E42", "--reason", "customer_request",
        "--progress-every", "2",
    )  # fmt: skip
    assert err == ""
    assert f"Skipped charge {declined.gateway_id}: Only a successful charge" in out
    assert "Progress: 2/5 charges: 2 refunded, 0 done earlier, 0 skipped" in out
    assert "Progress: 4/5 charges" in out and "Progress: 5/5" not in out
    assert out.rstrip().endswith(
        "Batch E42: 5 charges: 4 refunded, 0 done earlier, 1 skipped, 0 failed, 0 unknown, "
        "0 left; refunded by the batch: ¥4,000."
    )
    assert slept == [0.5, 0.5, 0.5]  # the default rate: 2 refunds a second
    assert [len(fake_gateway.state.charge_refunds[str(c.gateway_id)]) for c in charges] == [1] * 4
    assert {r.requested_by.split(":")[0] for r in ChargeActionRequest.objects.all()} == {"command"}
    out, _ = run("--batch", "E42", "--metadata", "event=E42", "-v", "2")
    assert f"Charge {charges[0].gateway_id}: refunded by an earlier run." in out
    assert "0 refunded, 4 done earlier, 1 skipped" in out


def test_quiet_with_verbosity_0(fake_gateway):
    paid(fake_gateway)
    assert run("--batch", "q", "--metadata", "event=E42", "-v", "0") == ("", "")
    assert Charge.objects.get().refunds.count() == 1


def test_a_dry_run_lists_what_would_be_refunded_and_the_total(fake_gateway):
    first, second = paid(fake_gateway), paid(fake_gateway)
    services.refund_charge(second, amount=300)
    out, _ = run("--batch", "dry", "--metadata", "event=E42", "--dry-run")
    assert f"Would refund ¥1,000 of charge {first.gateway_id}." in out
    assert f"Would refund ¥700 of charge {second.gateway_id}." in out
    assert "Dry run of batch dry: 2 charges: 2 to refund" in out and "to refund: ¥1,700." in out
    assert len(fake_gateway.state.refunds) == 1


def test_a_failure_does_not_stop_the_batch_and_exits_non_zero(fake_gateway, tmp_path: Path):
    refused, good = paid(fake_gateway), paid(fake_gateway)
    fake_gateway.add_fault(
        "POST", rf"/charges/{refused.gateway_id}/refunds$", action="status", status=400
    )
    missing = uuid.uuid4()
    ids = tmp_path / "ids.txt"
    ids.write_text(f"# the event's tickets\n{refused.gateway_id}\n\n{good.gateway_id}\n{missing}\n")
    out = io.StringIO()
    err = io.StringIO()
    with pytest.raises(CommandError, match="2 charges failed and 0 have an unknown outcome"):
        call_command(
            "paycharge_refund_many", "--batch", "b", "--ids-file", str(ids), stdout=out, stderr=err
        )
    assert f"No charge {missing} in the mirror" in err.getvalue()
    assert f"FAILED: charge {refused.gateway_id}:" in err.getvalue()
    assert "1 refunded, 0 done earlier, 0 skipped, 1 failed" in out.getvalue()
    assert len(fake_gateway.state.charge_refunds[str(good.gateway_id)]) == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--batch", "b"], "Choose the charges"),
        (["--batch", "b", "--metadata", "event"], "KEY=VALUE"),
        (["--batch", "b", "--metadata", "event=E42", "--rate", "0"], "above 0"),
        (["--batch", "a b", "--metadata", "event=E42"], "batch"),
        (["--batch", "b", "--ids-file", "/nonexistent/ids"], "--ids-file"),
    ],
)
def test_bad_arguments_are_one_line(fake_gateway, args: list[str], message: str):
    paid(fake_gateway)
    with pytest.raises(CommandError, match=message):
        run(*args)
    assert not ChargeActionRequest.objects.exists()


def test_a_progress_line_every_so_many_seconds_too(fake_gateway, monkeypatch):
    for _ in range(4):
        paid(fake_gateway)
    monkeypatch.setattr(
        "django_paycharge.management.commands.paycharge_refund_many.PROGRESS_SECONDS", 1.0
    )
    out, _ = run("--batch", "timed", "--metadata", "event=E42")  # 0.5 s a refund on the clock
    assert [line.split(":")[0] for line in out.splitlines()] == ["Progress", "Batch timed"]
    assert "Progress: 3/4 charges" in out
