"""``manage.py shop_demo_setup``: demo products and a demo admin user (demo only)."""

from __future__ import annotations

import secrets
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser
from django.utils.translation import gettext_noop

from shop.models import Product

#: Names and descriptions are in the shop's catalogue (gettext_noop), so the product
#: pages speak the customer's language; a real shop keeps translations with its products.
DEMO_PRODUCTS = [
    (gettext_noop("Matcha tea, 100 g"), gettext_noop("Stone-ground green tea from Uji."), 1200),
    (
        gettext_noop("Furoshiki wrapping cloth"),
        gettext_noop("Cotton, 70 by 70 cm, wave pattern."),
        2400,
    ),
    (
        gettext_noop("Hinoki chopsticks"),
        gettext_noop("A pair of cypress chopsticks with a rest."),
        800,
    ),
]
#: Sold as a monthly subscription (named to sort last: the first product stays a one-off).
DEMO_SUBSCRIPTION = (
    gettext_noop("Uji sencha, every month"),
    gettext_noop("A 100 g bag of this month's sencha, delivered monthly. Cancel any time."),
    1500,
    "monthly",
)


class Command(BaseCommand):
    help = (
        "Create the demo products (when there are none), a monthly subscription product, "
        "and a demo admin user with a new random password, printed once. For the demo "
        "only: never on a real shop."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--username", default="admin")

    def handle(self, *args: Any, **options: Any) -> None:
        if not Product.objects.exists():
            Product.objects.bulk_create(
                Product(name=name, description=text, price=price)
                for name, text, price in DEMO_PRODUCTS
            )
            self.stdout.write(f"Created {len(DEMO_PRODUCTS)} demo products.")
        if not Product.objects.exclude(period="").exists():
            name, text, price, period = DEMO_SUBSCRIPTION
            Product.objects.create(name=name, description=text, price=price, period=period)
            self.stdout.write("Created the demo subscription product.")
        password = secrets.token_urlsafe(12)
        user_model = get_user_model()
        user, _created = user_model.objects.get_or_create(username=options["username"])
        user.is_staff = user.is_superuser = True
        user.set_password(password)
        user.save()
        # Printed on purpose: a fresh throwaway password for the local demo's admin.
        self.stdout.write(f"Demo admin: user {user.get_username()!r}, password {password!r}")
