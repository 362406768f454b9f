"""Views the gateway and the shop's customers reach: webhooks, returns, payment pages."""
