"""A configuration names the variable that holds a secret, never the secret: the rule every save path calls."""

from __future__ import annotations

import pytest

from engine.secrets import REDACTED, literal_secret_paths, literal_secret_problems, names_credential, \
    redact_literal_secrets

HOW = "put the secret in a FORGE_AGENT_SECRET_<NAME> environment variable"


@pytest.mark.parametrize("key", ["api_key", "APIKEY", "x-api-key", "OPENAI_API_KEY", "client_secret", "refresh_token",
                                 "Authorization", "bearer", "db_password", "PASSWD", "credentials", "accessToken",
                                 "X-Auth-Token", "max_tokens", "token_budget"])
def test_these_keys_name_a_credential(key):
    assert names_credential(key)


@pytest.mark.parametrize("key", ["model", "url", "base_url", "env", "DEPLOY_ENV", "system_prompt", "key", "api",
                                 "inline", "network", "headers", "cpu_seconds"])
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
    {"secret_env": ["FORGE_AGENT_SECRET_A", "FORGE_AGENT_SECRET_B"], "env": {"DEPLOY_ENV": "staging", "MODE": "x"}},
    {"headers": {"Accept": "application/json"}, "model": "gpt-4o-mini", "system_prompt": "Keep secrets safe."},
    {"url": "https://gateway.example/steps?page=2", "base_url": "http://user@proxy.example/v1"},
    {"token_env": None, "credentials": {"password_env": "FORGE_AGENT_SECRET_DB"}},
    {},
])
def test_numbers_booleans_secret_names_and_ordinary_text_are_kept(config):
    assert literal_secret_problems(config) == []
    assert redact_literal_secrets(config) == config


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
    assert redact_literal_secrets(config) == {"api_key_env": {"value": REDACTED}}


@pytest.mark.parametrize("url", ["https://bob:hunter2@gateway.example/steps", "http://h.example/?access_token=abc",
                                 "HTTPS://h.example/x?page=1&api-key=abc"])
def test_a_url_carrying_a_credential_is_refused(url):
    [problem] = literal_secret_problems({"gateway": {"url": url}})
    assert problem.startswith("gateway.url: ") and "hunter2" not in problem and "abc" not in problem
    assert redact_literal_secrets({"url": url}) == {"url": REDACTED}


@pytest.mark.parametrize("text", ["http://[::1", "https://h.example:99999/", "just text with token= in it"])
def test_text_that_only_looks_like_a_url_is_left_to_the_providers_checks(text):
    assert literal_secret_problems({"url": text}) == []


def test_redaction_keeps_everything_else_as_it_was():
    detail = {"after": {"name": "gpt", "provider": "openai", "enabled": True,
                        "config": {"model": "gpt-4o-mini", "max_tokens": 100, "api_key": "sk-abc",
                                   "env": {"OPENAI_API_KEY": "sk-abc", "MODE": "fast"},
                                   "secret_env": ["FORGE_AGENT_SECRET_OK", "sk-abc"]}}}
    assert redact_literal_secrets(detail) == {
        "after": {"name": "gpt", "provider": "openai", "enabled": True,
                  "config": {"model": "gpt-4o-mini", "max_tokens": 100, "api_key": REDACTED,
                             "env": {"OPENAI_API_KEY": REDACTED, "MODE": "fast"},
                             "secret_env": ["FORGE_AGENT_SECRET_OK", REDACTED]}}}
    assert "sk-abc" in str(detail)  # the value given is not changed


def test_a_hostile_depth_is_refused_and_redacted_without_recursing_to_the_end():
    deep: object = "sk-abc"
    for _ in range(5_000):
        deep = [deep]
    [problem] = literal_secret_problems({"nested": deep})
    assert "nested more than 32 levels deep" in problem
    assert "sk-abc" not in str(redact_literal_secrets({"nested": deep}))
