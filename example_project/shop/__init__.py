"""The example shop: products, orders, checkout, and payments through django_paycharge."""
