"""A bench-only app: the table of the webhook receipt's floor (``bench/minimal_webhook.py``)."""
