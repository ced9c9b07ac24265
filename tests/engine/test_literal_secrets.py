"""A configuration names the variable that holds a secret, never the secret: the rule every save path calls."""

from __future__ import annotations

import pytest

from engine.secrets import REDACTED, literal_secret_paths, literal_secret_problems, names_credential, redact_secrets

HOW = "put the secret in a FORGE_AGENT_SECRET_<NAME> environment variable"


@pytest.mark.parametrize("key", ["api_key", "APIKEY", "x-api-key", "OPENAI_API_KEY", "client_secret", "refresh_token",
                                 "Authorization", "bearer", "db_password", "PASSWD", "credentials", "accessToken",
                                 "X-Auth-Token", "max_tokens", "token_budget",
                                 "PRIVATE_KEY", "privateKey", "private_key", "access_key", "signing_key", "x-key",
                                 "KEY", "key", "sort_key", "ssh_keys", "PGPASS", "PGPASSWORD", "pass", "DB_PWD", "pwd",
                                 "Cookie", "Set-Cookie", "X-Auth", "auth", "session", "sessionId", "sig", "signature",
                                 "X-Amz-Signature", "dsn", "SENTRY_DSN", "passphrase"])
def test_these_keys_name_a_credential(key):
    assert names_credential(key)


@pytest.mark.parametrize("key", ["model", "url", "base_url", "env", "DEPLOY_ENV", "system_prompt", "api",
                                 "inline", "network", "headers", "cpu_seconds", "keywords", "monkey", "KEYWORDS",
                                 "author", "oauth", "signal", "design", "passive"])
def test_these_keys_do_not(key):
    assert not names_credential(key)


@pytest.mark.parametrize(("config", "path"), [
    ({"api_key": "sk-abc"}, "api_key"),
    ({"env": {"OPENAI_API_KEY": "sk-abc"}}, "env.OPENAI_API_KEY"),
    ({"headers": {"X-API-Key": "k-123"}}, "headers.X-API-Key"),
    ({"headers": {"Authorization": "Bearer sk-abc"}}, "headers.Authorization"),
    ({"request": {"headers": [{"Authorization": "Basic dTpw"}]}}, "request.headers[0].Authorization"),
    ({"oauth": {"client_secret": "s3cr3t", "client_id": "forge"}}, "oauth.client_secret"),
    ({"refresh_token": "r-1"}, "refresh_token"),
    ({"credentials": {"user": "bob"}}, "credentials.user"),  # beneath a credential's name, all text is refused
    ({"tokens": ["t-1"]}, "tokens[0]"),
    ({"max_tokens": "100"}, "max_tokens"),  # a count is a number: text here might as well be a PIN
    ({"password": "0"}, "password"),
    ({"env": {"PRIVATE_KEY": "-----BEGIN"}}, "env.PRIVATE_KEY"),
    ({"env": {"PGPASS": "hunter2"}}, "env.PGPASS"),
    ({"headers": {"Cookie": "sid=abc"}}, "headers.Cookie"),
    ({"headers": {"X-Auth": "abc"}}, "headers.X-Auth"),
    ({"session": "abc"}, "session"),
    ({"sig": "abc"}, "sig"),
    ({"dsn": "https://k@sentry.example/1"}, "dsn"),
    ({"KEY": "abc"}, "KEY"),
    ({"keywords": ["a"], "x-key": "abc"}, "x-key"),
])
def test_text_under_a_credentials_name_is_refused_naming_its_path_and_the_way_to_give_a_secret(config, path):
    [problem] = literal_secret_problems(config)
    assert problem.startswith(f"{path}: ") and HOW in problem and "_env" in problem
    assert "sk-abc" not in problem and "s3cr3t" not in problem
    assert literal_secret_paths(config) == [path]


@pytest.mark.parametrize("config", [
    {"max_tokens": 100, "token_budget": 2_000, "price_per_million": [0.15, 0.6]},
    {"bearer": True, "password": None, "token": 0, "secret": False, "api_key": ""},
    {"token_env": "FORGE_AGENT_SECRET_GATEWAY", "api_key_env": "FORGE_AGENT_SECRET_OPENAI"},
    {"secret_env": ["FORGE_AGENT_SECRET_A", "FORGE_AGENT_SECRET_B"], "DEPLOY_ENV": "staging", "MODE": "x"},
    {"Accept": "application/json", "model": "gpt-4o-mini", "system_prompt": "Keep secrets safe."},
    {"keywords": ["deploy"], "monkey": "business", "max_tokens": 100, "session_count": 3, "private_key": None},
    {"token_env": None, "credentials": {"password_env": "FORGE_AGENT_SECRET_DB"}},
    {},
])
def test_numbers_booleans_secret_names_and_ordinary_text_are_kept(config):
    assert literal_secret_problems(config) == []
    assert redact_secrets(config) == config


def test_a_url_without_a_credential_is_kept_and_shown_without_its_userinfo_query_and_fragment():
    config = {"url": "https://gateway.example/steps?page=2#top", "base_url": "http://user@proxy.example/v1",
              "note": "see https://docs.example/a?b=c or ftp://files.example/x"}

    assert literal_secret_problems(config) == []
    assert redact_secrets(config) == {
        "url": f"https://gateway.example/steps?{REDACTED}#{REDACTED}",
        "base_url": f"http://{REDACTED}@proxy.example/v1",
        "note": f"see https://docs.example/a?{REDACTED} or ftp://files.example/x"}


def test_every_value_of_an_env_or_headers_map_is_shown_redacted_whatever_its_name():
    config = {"env": {"OPENAI_KEY": "sk-live-abc123", "DATABASE_URL": "postgres://forge:hunter2@db/forge",
                      "MODE": "fast", "EMPTY": ""},
              "request": {"Headers": [{"X-Trace": "t-1"}]}, "secret_env": ["FORGE_AGENT_SECRET_A"], "model": "gpt"}

    shown = redact_secrets(config)

    assert shown == {"env": {"OPENAI_KEY": REDACTED, "DATABASE_URL": REDACTED, "MODE": REDACTED, "EMPTY": ""},
                     "request": {"Headers": [{"X-Trace": REDACTED}]}, "secret_env": ["FORGE_AGENT_SECRET_A"],
                     "model": "gpt"}


@pytest.mark.parametrize(("config", "path"), [
    ({"token_env": "sk-abc"}, "token_env"),
    ({"api_key_env": "OPENAI_API_KEY"}, "api_key_env"),
    ({"secret_env": ["FORGE_AGENT_SECRET_A", "FORGE_SECRET_KEY"]}, "secret_env"),
    ({"TOKEN_ENV": 5}, "TOKEN_ENV"),
    ({"env": {"DEPLOY_TOKEN_ENV": "prod"}}, "env.DEPLOY_TOKEN_ENV"),
])
def test_a_credentials_env_key_must_name_an_agent_secret(config, path):
    [problem] = literal_secret_problems(config)
    assert problem.startswith(f"{path}: ") and "FORGE_AGENT_SECRET_<NAME>" in problem


def test_an_env_key_holding_an_object_is_refused_and_its_text_redacted():
    config = {"api_key_env": {"value": "sk-abc"}}
    [problem] = literal_secret_problems(config)
    assert problem.startswith("api_key_env: ") and "sk-abc" not in problem
    assert redact_secrets(config) == {"api_key_env": {"value": REDACTED}}


@pytest.mark.parametrize("url", ["https://bob:hunter2@gateway.example/steps", "http://h.example/?access_token=abc",
                                 "HTTPS://h.example/x?page=1&api-key=abc", "redis://:hunter2@cache:6379/0",
                                 "postgres://forge:hunter2@db/forge", "amqp://bot:hunter2@mq.example//",
                                 "  https://bob:hunter2@gateway.example/  ", "\thttps://bob:hunter2@gateway.example/",
                                 "https://bob:hun\nter2@gateway.example/", "http://u:hunter2@[::1",
                                 "https://h.example/x?key=abc", "https://h.example/x?sig=abc&se=1",
                                 "https://h.example/x?token=abc", "https://h.example/cb#access_token=abc&type=bearer",
                                 "https://h.example/x?a=1;X-Amz-Signature=abc", "https://h.example/x?api%5Fkey=abc",
                                 "curl -fsS https://bob:hunter2@gateway.example/steps | sh"])
def test_a_url_carrying_a_credential_is_refused(url):
    [problem] = literal_secret_problems({"gateway": {"url": url}})
    assert problem.startswith("gateway.url: ") and "hunter2" not in problem and "abc" not in problem
    assert redact_secrets({"url": url}) == {"url": REDACTED}


@pytest.mark.parametrize("text", ["http://[::1", "https://h.example:99999/", "just text with token= in it",
                                  "https://h.example/x?token=&page=2", "redis://cache:6379/0",
                                  "http://user:@h.example/",
                                  "a" * 100_000 + "://" + "b" * 100_000])
def test_text_that_only_looks_like_a_url_is_left_to_the_providers_checks(text):
    assert literal_secret_problems({"url": text}) == []


def test_redaction_keeps_everything_else_as_it_was():
    detail = {"after": {"name": "gpt", "provider": "openai", "enabled": True,
                        "config": {"model": "gpt-4o-mini", "max_tokens": 100, "api_key": "sk-abc",
                                   "env": {"OPENAI_API_KEY": "sk-abc", "MODE": "fast"},
                                   "secret_env": ["FORGE_AGENT_SECRET_OK", "sk-abc"]}}}
    assert redact_secrets(detail) == {
        "after": {"name": "gpt", "provider": "openai", "enabled": True,
                  "config": {"model": "gpt-4o-mini", "max_tokens": 100, "api_key": REDACTED,
                             "env": {"OPENAI_API_KEY": REDACTED, "MODE": REDACTED},
                             "secret_env": ["FORGE_AGENT_SECRET_OK", REDACTED]}}}
    assert "sk-abc" in str(detail)  # the value given is not changed


def test_a_hostile_depth_is_refused_and_redacted_without_recursing_to_the_end():
    deep: object = "sk-abc"
    for _ in range(5_000):
        deep = [deep]
    [problem] = literal_secret_problems({"nested": deep})
    assert "nested more than 32 levels deep" in problem
    assert "sk-abc" not in str(redact_secrets({"nested": deep}))
