"""How many examples the fuzz and property tests draw, by the leg's profile.

``PAYCHARGE_HYPOTHESIS`` names the profile: ``thorough`` (the default; CI's leg on the
oldest Django and Python) or ``quick`` (a quarter of the examples: the quick run and the
other legs, PostgreSQL's included). Tests that fix their own count scale it with :func:`examples`;
the others take the profile's ``max_examples``. tests/conftest.py loads the profile.

No profile lets the machine's load decide a verdict: Hypothesis's deadline (a
wall-clock bound on each example) and its "too slow" health check (on the time
taken to draw inputs) are off, as every other wall-clock bound under 5 s is
(tests/gates/test_no_load_verdicts.py). On a busy CI host they failed tests
whose code was right.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

SHARE = {"thorough": 1.0, "quick": 0.25}
PROFILE = os.environ.get("PAYCHARGE_HYPOTHESIS", "thorough")
if PROFILE not in SHARE:
    raise RuntimeError(f"PAYCHARGE_HYPOTHESIS={PROFILE!r}: use one of {sorted(SHARE)}")

for _name, _share in SHARE.items():
    settings.register_profile(
        _name,
        max_examples=max(1, round(100 * _share)),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
    )


def examples(thorough: int) -> int:
    """The number of examples to draw where ``thorough`` is the count at full strength."""
    return max(1, round(thorough * SHARE[PROFILE]))


def load() -> None:
    settings.load_profile(PROFILE)
