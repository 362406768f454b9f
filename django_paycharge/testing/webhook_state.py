"""Webhook configurations and delivery records, as part of the fake's state."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Mapping

from ._common import ApiError, Json, iso, now
from .listing import micros, paginate, parse_page_query
from .records import Delivery, Store, WebhookConfig
from .validation import parse_webhook
from .webhooks import WebhookSender


class WebhookStateMixin:
    """Configuration CRUD, delivery recording and redelivery; needs the state's lock."""

    lock: threading.RLock
    sender: WebhookSender
    delivery_repeat: int
    delivery_include_id: bool

    def reset_webhooks(self) -> None:
        """Forget every configuration and delivery (and cancel deliveries still queued)."""
        if getattr(self, "sender", None) is not None:
            self.sender.cancel_pending()
        self.webhooks: dict[str, WebhookConfig] = {}
        self.deliveries: list[Delivery] = []

    def create_webhook(self, store: Store, body: Json) -> Json:
        """``POST /stores/{s}/webhooks``."""
        fields = parse_webhook(body)
        created = now()
        config = WebhookConfig(
            id=str(uuid.uuid4()),
            store=store,
            triggers=list(fields["triggers"]),
            url=fields["url"],
            auth_token=fields.get("auth_token"),
            active=fields["active"],
            created=created,
            updated=created,
        )
        with self.lock:
            if any(c.store.id == store.id and c.url == config.url for c in self.webhooks.values()):
                raise ApiError(409, "WEBHOOK_URL_EXISTS", [("url", "WEBHOOK_URL_EXISTS")])
            self.webhooks[config.id] = config
        return config.to_json()

    def webhook(self, store: Store, webhook_id: str) -> WebhookConfig:
        """One configuration of ``store``, or a 404."""
        with self.lock:
            config = self.webhooks.get(webhook_id)
        if config is None or config.store.id != store.id:
            raise ApiError(404, "NOT_FOUND", [("webhookId", "NOT_FOUND")])
        return config

    def update_webhook(self, store: Store, webhook_id: str, body: Json) -> Json:
        """``PATCH``: change any of triggers, url, auth_token, active."""
        fields = parse_webhook(body, partial=True)
        with self.lock:
            config = self.webhook(store, webhook_id)
            for name, value in fields.items():
                setattr(config, name, value)
            config.updated = now()
            return config.to_json()

    def delete_webhook(self, store: Store, webhook_id: str) -> None:
        """``DELETE``."""
        with self.lock:
            self.webhooks.pop(self.webhook(store, webhook_id).id)

    def list_webhooks(self, store: Store, query: Mapping[str, str]) -> Json:
        """A paginated list of the store's configurations (few, so sorted per request)."""
        page = parse_page_query(query)
        with self.lock:
            mine = {c.id: c for c in self.webhooks.values() if c.store.id == store.id}
            keys = sorted((micros(c.created), c.id) for c in mine.values())

            def cursor_key(wid: str) -> tuple[int, str] | None:
                c = mine.get(wid)
                return (micros(c.created), c.id) if c is not None else None

            result = paginate(keys, page, cursor_key)
            return {"items": [mine[i].to_json() for i in result.ids], "has_more": result.has_more}

    def record_deliveries(self, store: Store, events: list[str], data: Json) -> list[Delivery]:
        """Deliveries for each active configuration listening to each event (under the lock)."""
        out: list[Delivery] = []
        for event in events:
            for config in self.webhooks.values():
                if config.store.id != store.id or not config.active or event not in config.triggers:
                    continue
                delivery_id = str(uuid.uuid4())
                created_on = iso(now())
                payload: Json = {
                    "id": delivery_id,
                    "event": event,
                    "created_on": created_on,
                    "data": data,
                }
                if not self.delivery_include_id:
                    del payload["id"]
                headers = {
                    "Content-Type": "application/json",
                    "User-Agent": "paycharge-fake-gateway",
                }
                if config.auth_token:
                    headers["Authorization"] = f"Bearer {config.auth_token}"
                body = json.dumps(payload).encode()
                first = Delivery(
                    delivery_id, config.id, event, config.url, headers, body, created_on
                )
                out.append(first)
                for _ in range(self.delivery_repeat - 1):
                    out.append(self._copy(first))
        self.deliveries.extend(out)
        return out

    def _copy(self, original: Delivery, *, without_id: bool = False) -> Delivery:
        body = original.body
        if without_id:
            payload = json.loads(body)
            payload.pop("id", None)
            body = json.dumps(payload).encode()
        return Delivery(
            str(uuid.uuid4()),
            original.webhook_id,
            original.event,
            original.url,
            dict(original.headers),
            body,
            iso(now()),
            redelivery_of=original.id,
        )

    def redeliver(self, delivery_id: str, *, without_id: bool = False) -> Delivery:
        """Send a recorded delivery again, same body (optionally without its ``id``)."""
        with self.lock:
            original = next((d for d in self.deliveries if d.id == delivery_id), None)
            if original is None:
                raise ApiError(404, "NOT_FOUND", [("deliveryId", "NOT_FOUND")])
            copy = self._copy(original, without_id=without_id)
            self.deliveries.append(copy)
        self.sender.send([copy])
        return copy

    def flush_deliveries(self) -> int:
        """Send every still-pending delivery (recorded while no transport was set)."""
        with self.lock:
            pending = [d for d in self.deliveries if d.state == "pending" and not d.attempts]
        self.sender.send(pending)
        return len(pending)
