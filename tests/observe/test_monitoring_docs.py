"""docs/monitoring.md does what it says: its protected endpoint, its LOGGING, its alert rules."""

from __future__ import annotations

import importlib.util
import io
import json
import logging
import logging.config
import re
from pathlib import Path

import pytest
import yaml
from django.test import RequestFactory

from django_paycharge import observe, services
from tests.docs.snippets import snippets

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "monitoring.md"
#: Metrics another branch adds (the announcement outbox, issue 31): named by the docs already.
WIRED_AT_MERGE = {'paycharge_attention{item="announcements_unheard"}'}


def block(action: str, target: str) -> str:
    """The page's blocks for ``target``, in order (the settings come in two)."""
    found = [s.body for s in snippets(DOC, REPO) if s.action == action and s.target == target]
    assert found, (action, target)
    return "\n".join(found)


def pasted_settings() -> dict[str, object]:
    namespace: dict[str, object] = {}
    exec(block("append", "settings.py"), namespace)
    return namespace


@pytest.mark.django_db
def test_the_protected_endpoint_wants_its_token(tmp_path, settings, monkeypatch):
    (tmp_path / "shop_metrics.py").write_text(block("file", "shop_metrics.py"))
    spec = importlib.util.spec_from_file_location("shop_metrics", tmp_path / "shop_metrics.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rf = RequestFactory()
    right = rf.get("/ops/metrics", HTTP_AUTHORIZATION="Bearer scrape-token-123")
    # The page's settings, as pasted: without the variable, nobody (a 403, never a 500).
    monkeypatch.delenv("METRICS_TOKEN", raising=False)
    del settings.METRICS_TOKEN  # a shop that never defined it
    assert module.protected_metrics(right).status_code == 403
    for sent in ("", "Bearer ", "Bearer scrape-token-123"):
        settings.METRICS_TOKEN = pasted_settings()["METRICS_TOKEN"]
        assert module.protected_metrics(rf.get("/", HTTP_AUTHORIZATION=sent)).status_code == 403
    monkeypatch.setenv("METRICS_TOKEN", "scrape-token-123")
    settings.METRICS_TOKEN = pasted_settings()["METRICS_TOKEN"]
    assert module.protected_metrics(rf.get("/ops/metrics")).status_code == 403
    wrong = rf.get("/ops/metrics", HTTP_AUTHORIZATION="Bearer nope")
    assert module.protected_metrics(wrong).status_code == 403
    answer = module.protected_metrics(right)
    assert answer.status_code == 200 and b"paycharge_attention" in answer.content


def test_the_logging_setup_writes_json_lines_that_join_up():
    namespace: dict[str, object] = {}
    exec(block("append", "settings.py"), namespace)
    config = json.loads(json.dumps(namespace["LOGGING"]))  # a copy to point at a test stream
    stream = io.StringIO()
    config["handlers"]["json"]["stream"] = stream
    config["loggers"] = {"paycharge-docs-test": config["loggers"]["django_paycharge"]}
    logging.config.dictConfig(config)
    logger = logging.getLogger("paycharge-docs-test")
    try:
        with observe.scoped(delivery="1842"):
            logger.info("processed", extra={"paycharge_status": 200})
    finally:
        logger.handlers.clear()
    line = json.loads(stream.getvalue())
    assert line["message"] == "processed" and line["paycharge_delivery"] == "1842"
    assert line["paycharge_status"] == 200 and line["level"] == "INFO"


@pytest.mark.django_db
def test_every_metric_the_docs_name_is_exposed(telemetry, fake_gateway, rf):
    from django_paycharge.views.metrics import metrics

    fake_gateway.seed(3)
    services.sync_charges()
    exposed = metrics(rf.get("/metrics")).content.decode()
    names = set(re.findall(r"^(paycharge_[a-z_]+)", exposed, re.M))
    text = DOC.read_text(encoding="utf-8")
    documented = set(re.findall(r"^\| `(paycharge_[a-z_]+)`", text, re.M))  # the metrics table
    assert len(documented) >= 15
    families = {re.sub(r"_(bucket|count|sum|created)$", "", n) for n in names} | names
    # Counters of events that have not happened in this test appear once they do.
    unseen = {
        "paycharge_webhook_deliveries_received_total",
        "paycharge_webhook_deliveries_processed_total",
        "paycharge_webhook_delivery_lag_seconds",
        "paycharge_webhook_lease_takeovers_total",
        "paycharge_gateway_errors_total",
        "paycharge_gateway_retries_total",
        "paycharge_quarantined_items_total",
        "paycharge_attention_amount",  # a series per currency only while money may have moved
        "paycharge_owner_problems_total",
    }
    assert documented - families - unseen == set()
    assert names - {f"{d}_created" for d in documented} <= families
    rules = yaml.safe_load(block("file", "paycharge-alerts.yml"))
    for rule in rules["groups"][0]["rules"]:
        for metric in re.findall(r"paycharge_[a-z_]+(?:\{[^}]*\})?", rule["expr"]):
            name = re.sub(r"_bucket$", "", metric.split("{")[0])
            assert name in families | unseen or metric in WIRED_AT_MERGE, metric


def _fires(expr: str, exposition: str) -> bool:
    """Whether a rule of the form ``name{label="v",label=~"re"} > N`` fires on a scrape."""
    from prometheus_client.parser import text_string_to_metric_families

    match = re.fullmatch(r"\s*(\w+)\{([^}]*)\}\s*>\s*([\d.]+)\s*", expr)
    assert match, f"not a simple threshold rule: {expr}"
    name, selector, threshold = match.group(1), match.group(2), float(match.group(3))
    matchers = re.findall(r'(\w+)(=~|=)"([^"]*)"', selector)
    for family in text_string_to_metric_families(exposition):
        for sample in family.samples:
            if sample.name != name:
                continue
            labels = sample.labels
            if (
                all(
                    re.fullmatch(v, labels.get(k, "")) if op == "=~" else labels.get(k) == v
                    for k, op, v in matchers
                )
                and sample.value > threshold
            ):
                return True
    return False


@pytest.mark.django_db
@pytest.mark.parametrize("model", ["create", "refund"])
def test_the_unknown_outcome_alert_fires_on_an_abandoned_request(model, rf):
    from django_paycharge.models import ChargeActionRequest, ChargeRequest
    from django_paycharge.views.metrics import metrics
    from tests.admin.conftest import charge_row

    [rule] = [
        r
        for r in yaml.safe_load(block("file", "paycharge-alerts.yml"))["groups"][0]["rules"]
        if r["alert"] == "PaymentOutcomeUnknown"
    ]
    assert not _fires(rule["expr"], metrics(rf.get("/metrics")).content.decode())
    lost = {"outcome": "unknown", "abandoned": model}
    params = {"amount": 300, "currency": "JPY"}
    if model == "create":
        ChargeRequest.objects.create(params=params, state="abandoned", error=lost)
    else:
        charge = charge_row()
        charge.save()
        ChargeActionRequest.objects.create(
            kind="refund", idempotency_key="k", charge=charge, params=params,
            state="abandoned", error=lost,
        )  # fmt: skip
    assert _fires(rule["expr"], metrics(rf.get("/metrics")).content.decode())
