"""Take online payments in a Django shop through the payment charge service."""

from . import deprecation as _deprecation

__version__ = "0.1.0"

_deprecation.install()  # the old paths of modules that moved keep importing, with a warning
