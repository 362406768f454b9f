"""The example shop's Django project (settings, URLs, WSGI)."""
