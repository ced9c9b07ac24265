"""An API token endpoint that checks passwords with authenticate() is throttled too, and answers in JSON."""

import pytest

from tests.forge.accounts.conftest import WRONG

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def token_api(settings):
    settings.ROOT_URLCONF = "tests.forge.accounts.token_api"


def ask(client, password, address="10.0.0.1"):
    return client.post("/api/v1/token", {"username": "olive", "password": password}, content_type="application/json",
                       REMOTE_ADDR=address)


def test_wrong_passwords_at_a_token_endpoint_lock_it_out_until_the_cooling_off_ends(client, operator, clock):
    assert [ask(client, WRONG).status_code for _ in range(5)] == [400] * 4 + [429]
    refused = ask(client, "pw-olive")
    assert refused.status_code == 429 and refused["Retry-After"] == "900"
    assert refused.json()["retry_after"] == 900
    assert refused.json()["error"].startswith("Too many failed log-ins for this user name from your address.")
    assert ask(client, "pw-olive", address="10.0.0.2").json() == {"token": "token-for-olive"}
    clock.advance(minutes=15)
    assert ask(client, "pw-olive").json() == {"token": "token-for-olive"}


def test_failures_at_the_login_page_count_at_the_token_endpoint(client, operator, clock):
    for _ in range(5):
        client.post("/login/", {"username": "olive", "password": WRONG}, REMOTE_ADDR="10.0.0.1")
    assert ask(client, "pw-olive").status_code == 429
