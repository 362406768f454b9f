"""A credential PostgreSQL cannot look up (NUL in a Basic username) is a 401, never a 500.

Found by the schema fuzz on PostgreSQL; SQLite stores NUL and only says "no such user".
"""

from __future__ import annotations

import base64

import pytest
from rest_framework.test import APIClient

from .conftest import API, assert_error

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("path", ["charges/", "webhooks/"])
def test_a_nul_in_a_basic_username_is_refused_as_bad_credentials(path):
    token = base64.b64encode(b"sta\x00ff:password").decode()
    client = APIClient()
    response = client.get(f"{API}/{path}", HTTP_AUTHORIZATION=f"Basic {token}")
    # 403 when session authentication comes first (DRF's rule), as for any bad credential.
    assert response.status_code in (401, 403)
    assert_error(response, response.status_code, "authentication_failed")
    # The request's transaction is still usable afterwards (the lookup ran in a savepoint).
    assert client.get(f"{API}/charges/").status_code in (401, 403)
