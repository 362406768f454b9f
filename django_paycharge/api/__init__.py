"""DRF endpoints for storefronts and back offices (mount ``django_paycharge.api.urls``)."""
