"""Take online payments in a Django shop through the payment charge service."""

__version__ = "0.1.0"
